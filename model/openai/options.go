package openai

import (
	"net/http"
	"os"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/provider"
)

// Defaults of the [Chat] and [Responses] models.
const (
	// DefaultModel is the model name sent unless [WithModel] names
	// another.
	DefaultModel = "gpt-4.1-mini"
	// DefaultBaseURL is the base URL when neither [WithBaseURL] nor the
	// environment names one.
	DefaultBaseURL = "https://api.openai.com/v1/"
	// DefaultStreamIdleTimeout is how long a streamed response may go
	// without the server sending anything unless
	// [WithStreamIdleTimeout] says otherwise.
	DefaultStreamIdleTimeout = provider.DefaultStreamIdleTimeout
)

// Option configures a [Chat] or a [Responses] model.
type Option interface {
	apply(*options)
}

type options struct {
	provider.Options
	requestOptions []option.RequestOption
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithModel sets the model name sent with every request. The default is
// [DefaultModel]; an empty name keeps the default.
func WithModel(name string) Option {
	return optionFunc(func(o *options) {
		if name != "" {
			o.Model = name
		}
	})
}

// WithBaseURL sets the endpoint's base URL; requests go to
// <url>/chat/completions (a [Responses] model's to <url>/responses). The
// default is OPENAI_BASE_URL, else [DefaultBaseURL].
func WithBaseURL(url string) Option {
	return optionFunc(func(o *options) { o.BaseURL = url })
}

// WithAPIKey sets the API key. The default is OPENAI_API_KEY. The key is
// sent as a bearer token and never logged nor included in errors: wherever
// an error's text holds it (a provider that echoes the key it was sent),
// whatever its shape, it reads "[redacted key]". A key shorter than 8
// characters ("EMPTY", "ollama") is not taken for a secret.
func WithAPIKey(key string) Option {
	return optionFunc(func(o *options) { o.APIKey = key })
}

// WithHTTPClient sets the HTTP client requests are made with. The default
// is http.DefaultClient.
func WithHTTPClient(c *http.Client) Option {
	return optionFunc(func(o *options) { o.HTTPClient = c })
}

// WithMaxRetries sets how many times a failed request (a connection error,
// 408, 409, 429 or 5xx) is retried, and a stream cut off before any of its
// text reached Settings.OnText (see [model.ErrIncompleteResponse]). The
// default is openai-go's, 2. Settings.Timeout bounds the request with all
// its retries.
func WithMaxRetries(n int) Option {
	return optionFunc(func(o *options) { o.MaxRetries = &n })
}

// WithStreamIdleTimeout bounds how long a streamed response (a request
// with Settings.OnText) may go without the server sending a byte, from the
// moment the request is sent: the headers, each chunk and each keep-alive
// comment restart the clock. A stream that stays silent longer fails with
// an error matching [model.ErrIncompleteResponse] and
// context.DeadlineExceeded, and is tried again as a cut-off stream is (see
// [WithMaxRetries]). The default is [DefaultStreamIdleTimeout]; d <= 0
// means no idle timeout (Settings.Timeout and ctx still bound the
// request).
func WithStreamIdleTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.StreamIdle = &d })
}

// WithLogger sets the logger; nil (the default) means zap.NewNop(). A
// successful request is logged at debug level with its model, message
// count, usage and duration, and so is each id generated for a tool call
// the server returned without one; failures are returned, not logged.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.Logger = l })
}

// WithoutEnvironment makes the model read no API key and no base URL from
// the environment (OPENAI_API_KEY, OPENAI_BASE_URL, the organization and
// project): it sends the key [WithAPIKey] gives, else none, to the base
// URL [WithBaseURL] gives, else [DefaultBaseURL]. A proxy whose HTTP
// client adds its client's credential builds its models so.
func WithoutEnvironment() Option {
	return optionFunc(func(o *options) { o.NoEnv = true })
}

// WithRequestOptions adds openai-go request options (headers, middleware,
// ...), applied after the options above.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return optionFunc(func(o *options) { o.requestOptions = append(o.requestOptions, opts...) })
}

// resolve applies opts over the defaults, the model name being
// [DefaultModel].
func resolve(opts []Option) (provider.Resolved, []option.RequestOption) {
	o := options{Options: provider.Options{Model: DefaultModel}}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return provider.Resolve(o.Options), o.requestOptions
}

// newClient builds an openai-go client from opts, and returns the resolved
// options and the API key the client sends.
func newClient(opts []Option) (sdk.Client, provider.Resolved, string) {
	r, extra := resolve(opts)
	var ropts []option.RequestOption
	if r.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(r.BaseURL))
	}
	if r.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(r.APIKey))
	}
	if r.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(r.HTTPClient))
	}
	if r.MaxRetries != nil {
		ropts = append(ropts, option.WithMaxRetries(r.Retries))
	}
	if r.NoEnv {
		// After the environment's defaults, which the client applies
		// first: take them back.
		if r.BaseURL == "" {
			ropts = append(ropts, option.WithBaseURL(DefaultBaseURL))
		}
		if r.APIKey == "" {
			ropts = append(ropts, option.WithHeaderDel("Authorization"))
		}
		ropts = append(ropts, option.WithHeaderDel("OpenAI-Organization"), option.WithHeaderDel("OpenAI-Project"))
	}
	ropts = append(ropts, extra...)
	key := r.APIKey
	if key == "" && !r.NoEnv {
		key = os.Getenv("OPENAI_API_KEY") // what the client sends then
	}
	return sdk.NewClient(ropts...), r, key
}
