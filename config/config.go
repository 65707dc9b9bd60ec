// Package config reads abridge's settings from the environment (variables
// prefixed ABRIDGE_, plus OPENAI_API_KEY and OPENAI_BASE_URL, which the
// OpenAI client also reads itself), checks every value against its accepted
// range, and builds the components a host needs from them in one call,
// [Config.Build]: the logger, the models, the summarizers, the sliding
// window, the processor chain and the agent's options. A [Config] prints
// and logs itself with its secrets redacted.
package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/abridge-go/abridge/strategy"
)

// Prefix is the prefix of every variable abridge reads, other than the
// OPENAI_ ones.
const Prefix = "ABRIDGE_"

// Names of the variables the OpenAI client reads itself; a Config reads them
// too, to tell whether a model endpoint is configured and to keep the key out
// of what it prints.
const (
	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	// EnvAnthropicBaseURL names the Anthropic Messages upstream of
	// abridge serve.
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
)

// Summarizer kinds: the values of Config.Summarizer and what
// [Config.SummarizerKind] resolves them to.
const (
	SummarizerAuto   = "auto"
	SummarizerLLM    = "llm"
	SummarizerDigest = "digest"
)

// Config holds every setting. [Load] and [LoadFrom] fill it from the
// environment and check it; [Default] returns the defaults. Each field's
// variable is ABRIDGE_ followed by its env tag.
//
// Printing a Config (String, GoString, MarshalJSON, MarshalLogObject)
// redacts the API keys and any password in a URL or DSN.
//
// OPENAI_API_KEY and OPENAI_BASE_URL are kept unexported: a Config built in
// code rather than loaded has neither, so [Config.Endpoint] sees only
// SummaryBaseURL, and its models fall back on the OpenAI client reading the
// process environment itself.
type Config struct {
	// Strategy names the processors' configuration (package strategy):
	// default, economy, budget (a budget of 30,000 tokens) or budget-Nk
	// (N thousand tokens). A strategy other than default changes the
	// defaults of TrimMaxChars, MaxMessages, KeepMessages, TailOutputs,
	// TriggerTokens, FactsChars and SummaryClip to its own; a variable set
	// explicitly still wins. Default default.
	Strategy string `env:"STRATEGY" envDefault:"default"`
	// Model is the primary model's name. Default gpt-4.1-mini.
	Model string `env:"MODEL" envDefault:"gpt-4.1-mini"`
	// SummaryModel is the summarizer's model; "" means Model.
	SummaryModel string `env:"SUMMARY_MODEL"`
	// SummaryAnthropicModel is the model abridge serve's summarizer calls
	// on the Anthropic upstream for a Messages client, with that client's
	// key. Default claude-haiku-4-5 (anthropic.DefaultModel, package model/anthropic).
	SummaryAnthropicModel string `env:"SUMMARY_ANTHROPIC_MODEL" envDefault:"claude-haiku-4-5"`
	// SummaryBaseURL is the summarizer's endpoint; "" means the primary
	// one (OPENAI_BASE_URL, else the OpenAI API).
	SummaryBaseURL string `env:"SUMMARY_BASE_URL"`
	// SummaryAPIKey is the summarizer's API key; "" means OPENAI_API_KEY.
	SummaryAPIKey string `env:"SUMMARY_API_KEY" json:"-"`
	// SummaryTimeout bounds one summary, retries included. Default 90s.
	SummaryTimeout time.Duration `env:"SUMMARY_TIMEOUT" envDefault:"90s"`
	// TrimMaxChars caps old tool outputs, in characters: at least 100
	// (trimtools.MinMaxChars); 0 means the default 2000 and -1 disables
	// trimming, as trimtools.Options.MaxChars reads them. Default 2000.
	// ABRIDGE_TRIM_CHARS, its variable's former name, is still read when
	// ABRIDGE_TRIM_MAX_CHARS is unset.
	TrimMaxChars int `env:"TRIM_MAX_CHARS" envDefault:"2000"`
	// MaxMessages makes the window compact a history longer than this many
	// messages; 0 means the default 40 and -1 disables this trigger, as
	// window.Options.MaxMessages reads them. Default 40.
	MaxMessages int `env:"MAX_MESSAGES" envDefault:"40"`
	// KeepMessages is the window's tail in messages; 0 (the default) means
	// max(4, MaxMessages/2).
	KeepMessages int `env:"KEEP_MESSAGES" envDefault:"0"`
	// TailOutputs, when positive, makes each compaction clear the tool
	// outputs of the kept tail but those of its last TailOutputs rounds
	// (window.Options.TailOutputs). Default 0: none cleared.
	TailOutputs int `env:"TAIL_OUTPUTS" envDefault:"0"`
	// ContextWindow is the model's context window in tokens; the window
	// compacts a prompt estimated above ThresholdPercent of it. 0 (the
	// default) disables this trigger.
	ContextWindow int `env:"CONTEXT_WINDOW" envDefault:"0"`
	// TriggerTokens, when positive, makes the window compact a prompt
	// estimated above this many tokens, whatever ContextWindow says. 0
	// (the default) disables this trigger.
	TriggerTokens int `env:"TRIGGER_TOKENS" envDefault:"0"`
	// TriggerPercent is the share of ContextWindow, 1 to 100, at which
	// the window compacts (window.Options.TriggerPercent). Default 70.
	// ABRIDGE_THRESHOLD_PERCENT, its variable's former name, is still
	// read when ABRIDGE_TRIGGER_PERCENT is unset.
	TriggerPercent int `env:"TRIGGER_PERCENT" envDefault:"70"`
	// FactsChars bounds the facts section each summary carries beside its
	// prose (window.Options.FactsChars): 0 means the default 2000 and -1 leaves
	// the facts out. Default 2000.
	FactsChars int `env:"FACTS_CHARS" envDefault:"2000"`
	// SummaryClip clips each text the summarizer is given to this many
	// characters (window.Options.SummaryClip): 0 means the default 300 and
	// -1 gives every text whole. Default 300.
	SummaryClip int `env:"SUMMARY_CLIP" envDefault:"300"`
	// KeepUserTurns, when positive, makes the window's tail the last
	// KeepUserTurns user turns and everything after them instead of a
	// message count. Default 0.
	KeepUserTurns int `env:"KEEP_USER_TURNS" envDefault:"0"`
	// Ahead is how many requests ahead of a trigger the window starts
	// writing the summary its compaction will need, in the background
	// (window.Options.Ahead); -1 writes each summary when its trigger
	// fires, the request waiting. Default 5.
	Ahead int `env:"AHEAD" envDefault:"5"`
	// HardMessages is the most messages a history may have and still go
	// out uncompacted while its summary is being written
	// (window.Options.HardMessages): 0 means twice MaxMessages, -1 no
	// bound but the provider's. Default 0.
	HardMessages int `env:"HARD_MESSAGES" envDefault:"0"`
	// HardTokens is the most estimated prompt tokens a history may have
	// and still go out uncompacted while its summary is being written
	// (window.Options.HardTokens): 0 means 95% of ContextWindow when set,
	// else twice TriggerTokens when set, else none; -1 no bound but the
	// provider's. Default 0.
	HardTokens int `env:"HARD_TOKENS" envDefault:"0"`
	// SummaryWorkers is how many summaries are written in the background
	// at once (window.PoolOptions.Workers). Default 64.
	SummaryWorkers int `env:"SUMMARY_WORKERS" envDefault:"64"`
	// SummaryQueue bounds the summaries waiting for a background worker
	// (window.PoolOptions.Queue); each payer may hold an eighth of it.
	// Default 1024.
	SummaryQueue int `env:"SUMMARY_QUEUE" envDefault:"1024"`
	// SummaryClaimTTL is how long a process's claim on a summary it is
	// writing lasts unrenewed in a shared session database
	// (window.Options.ClaimTTL). Default 30s.
	SummaryClaimTTL time.Duration `env:"SUMMARY_CLAIM_TTL" envDefault:"30s"`
	// Summarizer is auto, llm or digest. auto (the default) means llm when
	// a model endpoint is configured (see [Config.Endpoint]), else digest.
	Summarizer string `env:"SUMMARIZER" envDefault:"auto"`
	// MaxSteps caps the model requests of one agent turn. Default 25.
	MaxSteps int `env:"MAX_STEPS" envDefault:"25"`
	// RequestTimeout bounds each model request of the agent, retries
	// included. Default 5m.
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" envDefault:"5m"`
	// StreamIdleTimeout bounds how long a streamed response may go without
	// the server sending anything. Default 2m.
	StreamIdleTimeout time.Duration `env:"STREAM_IDLE_TIMEOUT" envDefault:"2m"`
	// SessionDB is the session store's DSN; "" means the default SQLite
	// file.
	SessionDB string `env:"SESSION_DB"`
	// ServeAddr is where abridge serve listens, HOST:PORT. Default
	// 127.0.0.1:8787.
	ServeAddr string `env:"SERVE_ADDR" envDefault:"127.0.0.1:8787"`
	// ServeMaxBodyMB is the largest chat completions body abridge serve
	// accepts, in MiB, 1 to 1024. Default 32.
	ServeMaxBodyMB int `env:"SERVE_MAX_BODY_MB" envDefault:"32"`
	// ServeBodyMemoryMB bounds the memory the request bodies abridge
	// serve processes take at once, with what processing them takes, in
	// MiB, 1 to 65536 (raised to twice ServeMaxBodyMB when smaller).
	// Default 256.
	ServeBodyMemoryMB int `env:"SERVE_BODY_MEMORY_MB" envDefault:"256"`
	// ServeTimeout bounds one request through abridge serve, summaries
	// and the upstream's answer included. Default 10m.
	ServeTimeout time.Duration `env:"SERVE_TIMEOUT" envDefault:"10m"`
	// ServeShutdownTimeout is how long abridge serve lets requests in
	// flight finish once it is told to stop. Default 30s.
	ServeShutdownTimeout time.Duration `env:"SERVE_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	// ServeSummarizeFor says for which requests abridge serve's
	// summarizer may call its model: accepted (the default), credential
	// or all (see the constants Summarize*).
	ServeSummarizeFor string `env:"SERVE_SUMMARIZE_FOR" envDefault:"accepted"`
	// UIToken is the token abridge serve's operator's page (/ui/) asks
	// for; "" means none, and the page is served only on a loopback
	// address.
	UIToken string `env:"UI_TOKEN" json:"-"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	// LogFormat is console or json. Default console.
	LogFormat string `env:"LOG_FORMAT" envDefault:"console"`

	// openAIKey and openAIBaseURL are OPENAI_API_KEY and OPENAI_BASE_URL
	// as read by Load or LoadFrom.
	openAIKey        string
	openAIBaseURL    string
	anthropicBaseURL string
}

// ErrInvalid is matched (with errors.Is) by every error [Load], [LoadFrom]
// and [Config.Validate] return for a bad value.
var ErrInvalid = errors.New("invalid configuration")

// VarError reports one variable whose value is not accepted. Its message
// names the variable, the value (with any API key in it redacted) and the
// accepted range.
type VarError struct {
	// Var is the variable's name, e.g. ABRIDGE_THRESHOLD_PERCENT.
	Var string
	// Value is the value as set, with secrets redacted.
	Value string
	// Problem says what is wrong, e.g. "not an integer", "out of range".
	Problem string
	// Accepted describes the accepted values, e.g. "an integer from 1 to 100".
	Accepted string
}

// Error describes the variable, its value and the accepted range, on one
// line.
func (e *VarError) Error() string {
	return fmt.Sprintf("%s=%q: %s; accepted: %s", e.Var, e.Value, e.Problem, e.Accepted)
}

// Unwrap returns [ErrInvalid].
func (e *VarError) Unwrap() error { return ErrInvalid }

// Load reads the configuration from the process environment. See
// [LoadFrom].
func Load() (*Config, error) {
	return LoadFrom(env.ToMap(os.Environ()))
}

// LoadFrom reads the configuration from environ, a map of variable names to
// values (nil is an empty environment). Unset or empty variables take their
// defaults; surrounding white space is ignored, and the enumerated values
// (summarizer, log level and format) are case-insensitive. OPENAI_API_KEY
// and OPENAI_BASE_URL are read from environ too.
//
// Every bad value is reported: the error joins (errors.Join) one
// [*VarError] per variable, each on its own line, and matches [ErrInvalid].
// On error the returned Config is nil.
func LoadFrom(environ map[string]string) (*Config, error) {
	m := make(map[string]string, len(environ))
	for k, v := range environ {
		if strings.HasPrefix(k, Prefix) {
			v = strings.TrimSpace(v)
		}
		m[k] = v
	}
	for _, v := range variables {
		for _, old := range v.Deprecated {
			if m[v.Name] == "" {
				m[v.Name] = m[old]
			}
		}
	}
	if st, err := strategy.ByName(m[Prefix+"STRATEGY"]); err == nil && st.Name != strategy.NameDefault {
		// The strategy's settings are the defaults of their variables.
		for name, v := range map[string]int{
			"TRIM_MAX_CHARS": st.Trim.MaxChars,
			"MAX_MESSAGES":   st.Window.MaxMessages,
			"KEEP_MESSAGES":  st.Window.KeepMessages,
			"TAIL_OUTPUTS":   st.Window.TailOutputs,
			"TRIGGER_TOKENS": st.Window.TriggerTokens,
			"FACTS_CHARS":    st.Window.FactsChars,
			"SUMMARY_CLIP":   st.Window.SummaryClip,
		} {
			if m[Prefix+name] == "" {
				m[Prefix+name] = strconv.Itoa(v)
			}
		}
	}
	var c Config
	c.openAIKey = m[EnvOpenAIKey]
	c.openAIBaseURL = strings.TrimSpace(m[EnvOpenAIBaseURL])
	c.anthropicBaseURL = strings.TrimSpace(m[EnvAnthropicBaseURL])

	var errs []error
	failed := map[string]bool{}
	if err := env.ParseWithOptions(&c, env.Options{Environment: m, Prefix: Prefix}); err != nil {
		var agg env.AggregateError
		if !errors.As(err, &agg) {
			return nil, fmt.Errorf("read environment: %w", err)
		}
		for _, e := range agg.Errors {
			ve, ok := parseFailure(e, m, &c)
			if !ok {
				// Not a value error (a programming error in the
				// struct tags); its text names a field, not a value.
				return nil, fmt.Errorf("read environment: %w", e)
			}
			failed[ve.Var] = true
			errs = append(errs, ve)
		}
	}
	c.Summarizer = strings.ToLower(c.Summarizer)
	c.Strategy = strings.ToLower(c.Strategy)
	c.LogLevel = strings.ToLower(c.LogLevel)
	c.LogFormat = strings.ToLower(c.LogFormat)
	for _, ve := range c.check() {
		if !failed[ve.Var] {
			errs = append(errs, ve)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

// Default returns a Config with every setting at its default, as
// LoadFrom(nil) returns it.
func Default() *Config {
	c, err := LoadFrom(nil)
	if err != nil {
		// The defaults are tested to be valid; this is unreachable.
		return &Config{}
	}
	return c
}

// Validate checks every setting against its accepted range, as LoadFrom
// does, for a Config built or changed in code. The error joins one
// [*VarError] per bad setting.
func (c *Config) Validate() error {
	var errs []error
	for _, ve := range c.check() {
		errs = append(errs, ve)
	}
	return errors.Join(errs...)
}

// check returns one error per setting out of range.
func (c *Config) check() []*VarError {
	var errs []*VarError
	for _, v := range variables {
		if v.valid == nil || v.valid(c) {
			continue
		}
		errs = append(errs, &VarError{
			Var:      v.Name,
			Value:    c.redacted(&v),
			Problem:  v.problem,
			Accepted: v.Accepted,
		})
	}
	return errs
}

// parseFailure turns an error of the env package into a VarError for the
// variable it concerns, reporting false when it is not about a value.
func parseFailure(err error, environ map[string]string, c *Config) (*VarError, bool) {
	var pe env.ParseError
	if !errors.As(err, &pe) {
		return nil, false
	}
	v := byField(pe.Name)
	if v == nil {
		return nil, false
	}
	value := environ[v.Name]
	problem := "not " + v.kind
	if errors.Is(pe.Err, strconv.ErrRange) {
		// The env package reads an int in 32 bits, whatever the platform.
		problem = outOfRange
		if !strings.HasPrefix(value, "-") {
			problem = fmt.Sprintf("%s: larger than %d", outOfRange, math.MaxInt32)
		}
	}
	return &VarError{
		Var:      v.Name,
		Value:    c.hide(v, value),
		Problem:  problem,
		Accepted: v.Accepted,
	}, true
}

// Endpoint reports whether a model endpoint is configured: OPENAI_API_KEY,
// OPENAI_BASE_URL or ABRIDGE_SUMMARY_BASE_URL is set. It decides what the
// auto summarizer resolves to.
func (c *Config) Endpoint() bool {
	return c.openAIKey != "" || c.openAIBaseURL != "" || c.SummaryBaseURL != ""
}

// SummarizerKind resolves Summarizer: llm or digest as set, and for auto,
// llm when [Config.Endpoint] reports an endpoint, else digest.
func (c *Config) SummarizerKind() string {
	switch c.Summarizer {
	case SummarizerLLM, SummarizerDigest:
		return c.Summarizer
	}
	if c.Endpoint() {
		return SummarizerLLM
	}
	return SummarizerDigest
}

// summaryModel is the summarizer's model name.
func (c *Config) summaryModel() string {
	if c.SummaryModel != "" {
		return c.SummaryModel
	}
	return c.Model
}

// summaryBaseURL is the summarizer's endpoint, "" for the client's default.
func (c *Config) summaryBaseURL() string {
	if c.SummaryBaseURL != "" {
		return c.SummaryBaseURL
	}
	return c.openAIBaseURL
}

// summaryKey is the summarizer's API key, "" for the client's default.
func (c *Config) summaryKey() string {
	if c.SummaryAPIKey != "" {
		return c.SummaryAPIKey
	}
	return c.openAIKey
}

// validURL reports whether s is an absolute http or https URL.
func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
