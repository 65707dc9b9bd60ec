package anthropic

import (
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/provider"
)

// Defaults of a [Messages] model.
const (
	// DefaultModel is the model name sent unless [WithModel] names
	// another.
	DefaultModel = "claude-haiku-4-5"
	// DefaultMaxTokens is the max_tokens sent when Settings.MaxTokens is
	// 0: the Messages API requires one.
	DefaultMaxTokens = 8192
	// DefaultBaseURL is the base URL when neither [WithBaseURL] nor
	// ANTHROPIC_BASE_URL names one.
	DefaultBaseURL = "https://api.anthropic.com/"
	// DefaultStreamIdleTimeout is how long a streamed response may go
	// without the server sending anything unless
	// [WithStreamIdleTimeout] says otherwise.
	DefaultStreamIdleTimeout = provider.DefaultStreamIdleTimeout
)

// Option configures a [Messages] model.
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

// WithBaseURL sets the server's base URL; requests go to
// <url>/v1/messages. The default is ANTHROPIC_BASE_URL, else
// [DefaultBaseURL].
func WithBaseURL(url string) Option {
	return optionFunc(func(o *options) { o.BaseURL = url })
}

// WithAPIKey sets the API key, sent as x-api-key. The default is
// ANTHROPIC_API_KEY (else ANTHROPIC_AUTH_TOKEN, sent as a bearer token).
// The key is never logged nor included in errors: wherever an error's
// text holds it, it reads "[redacted key]". A key shorter than 8
// characters is not taken for a secret.
func WithAPIKey(key string) Option {
	return optionFunc(func(o *options) { o.APIKey = key })
}

// WithHTTPClient sets the HTTP client requests are made with. The default
// is http.DefaultClient.
func WithHTTPClient(c *http.Client) Option {
	return optionFunc(func(o *options) { o.HTTPClient = c })
}

// WithMaxRetries sets how many times a failed request (a connection error,
// 408, 409, 429 or 5xx) is retried. The default is anthropic-sdk-go's, 2.
// Settings.Timeout bounds the request with all its retries.
func WithMaxRetries(n int) Option {
	return optionFunc(func(o *options) { o.MaxRetries = &n })
}

// WithStreamIdleTimeout bounds how long a streamed response (a request
// with Settings.OnText) may go without the server sending a byte, from the
// moment the request is sent: the headers, each event and each ping
// restart the clock. A stream that stays silent longer fails with an error
// matching [model.ErrIncompleteResponse] and context.DeadlineExceeded. The
// default is [DefaultStreamIdleTimeout]; d <= 0 means no idle timeout
// (Settings.Timeout and ctx still bound the request).
func WithStreamIdleTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.StreamIdle = &d })
}

// WithLogger sets the logger; nil (the default) means zap.NewNop(). A
// successful request is logged at debug level with its model, message
// count, usage and duration; failures are returned, not logged.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.Logger = l })
}

// WithoutEnvironment makes the model read no API key and no base URL from
// the environment (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
// ANTHROPIC_BASE_URL): it sends the key [WithAPIKey] gives, else none, to
// the base URL [WithBaseURL] gives, else [DefaultBaseURL]. A proxy whose
// HTTP client adds its client's credential builds its models so.
func WithoutEnvironment() Option {
	return optionFunc(func(o *options) { o.NoEnv = true })
}

// WithRequestOptions adds anthropic-sdk-go request options (headers,
// middleware, ...), applied after the options above.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return optionFunc(func(o *options) { o.requestOptions = append(o.requestOptions, opts...) })
}
