package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
)

// Components are what [Config.Build] builds from a Config.
type Components struct {
	// Logger is the logger every component writes to.
	Logger *zap.Logger
	// Model is the primary model.
	Model *model.OpenAI
	// Summarizer writes the window's summaries.
	Summarizer window.Summarizer
	// SummarizerKind is "llm" or "digest", what Summarizer is.
	SummarizerKind string
	// Window is the sliding window.
	Window *window.Window
	// Chain runs the trimmer (unless TrimChars is 0), then the window.
	Chain processor.Processor
	// AgentOptions are [Config.AgentOptions] for Window and Logger (with
	// Chain as the processors); add tools and a system prompt, then call
	// agent.New(Model, opts...).
	AgentOptions []agent.Option
}

// BuildOptions are the options of [Config.Build]. The zero value means:
// the logger built from the configuration, no window events.
type BuildOptions struct {
	// Logger, when non-nil, replaces the logger [Config.Logger] builds.
	Logger *zap.Logger
	// OnEvent, when non-nil, receives the window's events.
	OnEvent func(ctx context.Context, e window.Event)
}

// Build builds the logger, the model, the summarizer, the window, the chain
// and the agent options from the configuration in one call, and logs the
// configuration (secrets redacted) at debug level. It fails when the
// configuration does not pass [Config.Validate] (which one from [Load] or
// [LoadFrom] always does).
func (c *Config) Build(opts BuildOptions) (*Components, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		var err error
		if logger, err = c.Logger(); err != nil {
			return nil, err
		}
	}
	logger.Debug("configuration", c.Field())
	s, kind := c.NewSummarizer(logger)
	w := c.NewWindow(s, logger, opts.OnEvent)
	chain := c.NewChain(w)
	return &Components{
		Logger:         logger,
		Model:          c.NewModel(logger),
		Summarizer:     s,
		SummarizerKind: kind,
		Window:         w,
		Chain:          chain,
		AgentOptions:   c.agentOptions(chain, w, logger),
	}, nil
}

// AgentOptions returns the agent options the configuration sets: the
// chain [Config.NewChain] builds around w as the agent's processors, w as
// the compactor forced when the provider reports a context overflow (left
// out when w is nil), MaxSteps, RequestTimeout, and the logger.
func (c *Config) AgentOptions(w *window.Window, logger *zap.Logger) []agent.Option {
	return c.agentOptions(c.NewChain(w), w, logger)
}

func (c *Config) agentOptions(chain processor.Processor, w *window.Window, logger *zap.Logger) []agent.Option {
	opts := []agent.Option{
		agent.WithProcessors(chain),
		agent.WithMaxSteps(c.MaxSteps),
		agent.WithRequestTimeout(c.RequestTimeout),
		agent.WithLogger(logger),
	}
	if w != nil {
		opts = append(opts, agent.WithCompactor(w))
	}
	return opts
}

// Logger builds a logger writing LogFormat lines at LogLevel and above to
// stderr: it is [Config.LoggerTo] with os.Stderr.
func (c *Config) Logger() (*zap.Logger, error) {
	return c.LoggerTo(os.Stderr)
}

// LoggerTo builds the logger [Config.Logger] builds, writing its lines to w
// instead of stderr: a command's own error stream, or a buffer in a test.
// The logger serializes its own writes to w, so w need not be safe for
// concurrent use; writes to w from outside the logger are not serialized
// with them. It fails, with the errors Logger gives, when LogLevel or
// LogFormat is out of range, and when w is nil.
func (c *Config) LoggerTo(w io.Writer) (*zap.Logger, error) {
	var ws zapcore.WriteSyncer
	if w != nil {
		ws = zapcore.Lock(zapcore.AddSync(w))
	}
	return c.newLogger(ws)
}

// newLogger builds the configured logger writing to ws; a nil ws is an
// error.
func (c *Config) newLogger(ws zapcore.WriteSyncer) (*zap.Logger, error) {
	var errs []error
	level, err := zapcore.ParseLevel(c.LogLevel)
	if err != nil || !byField("LogLevel").valid(c) {
		errs = append(errs, c.varError("LogLevel"))
	}
	var enc zapcore.Encoder
	switch c.LogFormat {
	case "console":
		enc = zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	default:
		errs = append(errs, c.varError("LogFormat"))
	}
	if ws == nil {
		errs = append(errs, errors.New("nil writer"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("build logger: %w", errors.Join(errs...))
	}
	return zap.New(zapcore.NewCore(enc, ws, level), zap.ErrorOutput(ws)), nil
}

// varError reports the field's current value as out of its range.
func (c *Config) varError(field string) *VarError {
	v := byField(field)
	return &VarError{Var: v.Name, Value: c.redacted(v), Problem: v.problem, Accepted: v.Accepted}
}

// NewModel returns the primary model: Model at OPENAI_BASE_URL (else the
// OpenAI API) with OPENAI_API_KEY and StreamIdleTimeout, logging to logger
// (nil means none).
func (c *Config) NewModel(logger *zap.Logger) *model.OpenAI {
	return c.newOpenAI(c.Model, c.openAIBaseURL, c.openAIKey, logger)
}

// NewSummaryModel returns the summarizer's model: SummaryModel (else Model)
// at SummaryBaseURL (else OPENAI_BASE_URL) with SummaryAPIKey (else
// OPENAI_API_KEY) and StreamIdleTimeout, logging to logger (nil means
// none).
func (c *Config) NewSummaryModel(logger *zap.Logger) *model.OpenAI {
	return c.newOpenAI(c.summaryModel(), c.summaryBaseURL(), c.summaryKey(), logger)
}

// newOpenAI builds a model; empty settings leave the client's defaults.
func (c *Config) newOpenAI(name, baseURL, key string, logger *zap.Logger) *model.OpenAI {
	opts := []model.Option{model.WithModel(name), model.WithStreamIdleTimeout(c.StreamIdleTimeout)}
	if baseURL != "" {
		opts = append(opts, model.WithBaseURL(baseURL))
	}
	if key != "" {
		opts = append(opts, model.WithAPIKey(key))
	}
	if logger != nil {
		opts = append(opts, model.WithLogger(logger))
	}
	return model.NewOpenAI(opts...)
}

// NewSummarizer returns the summarizer [Config.SummarizerKind] resolves to,
// and that kind: an LLM summarizer over [Config.NewSummaryModel] with
// SummaryTimeout ("llm"), or the offline digest ("digest").
func (c *Config) NewSummarizer(logger *zap.Logger) (window.Summarizer, string) {
	if c.SummarizerKind() == SummarizerDigest {
		return summarizer.NewDigest(summarizer.DigestOptions{}), SummarizerDigest
	}
	return summarizer.New(c.NewSummaryModel(logger), summarizer.Options{
		Timeout: c.SummaryTimeout,
		Logger:  logger,
	}), SummarizerLLM
}

// WindowOptions returns the window's settings from the configuration:
// MaxMessages (0 becomes -1, the window's "disabled"), ContextWindow,
// ThresholdPercent, KeepUserTurns and SummaryTimeout. The summarizers,
// logger and event callback are left for the caller; [Config.NewWindow]
// fills them.
func (c *Config) WindowOptions() window.Options {
	maxMessages := c.MaxMessages
	if maxMessages == 0 {
		maxMessages = -1
	}
	return window.Options{
		MaxMessages:    maxMessages,
		ContextWindow:  c.ContextWindow,
		TriggerPercent: c.ThresholdPercent,
		KeepUserTurns:  c.KeepUserTurns,
		Timeout:        c.SummaryTimeout,
	}
}

// NewWindow returns the window configured by [Config.WindowOptions],
// summarizing with s (nil means the offline digest), falling back to the
// offline digest, logging to logger and reporting to onEvent (either may be
// nil).
func (c *Config) NewWindow(s window.Summarizer, logger *zap.Logger, onEvent func(context.Context, window.Event)) *window.Window {
	opts := c.WindowOptions()
	opts.Summarizer = s
	opts.Logger = logger
	opts.OnEvent = onEvent
	return window.New(opts)
}

// TrimOptions returns the trimmer's settings: MaxChars is TrimChars, with
// 0 (disabled) becoming -1, the trimmer's "disabled".
func (c *Config) TrimOptions() trimtools.Options {
	maxChars := c.TrimChars
	if maxChars == 0 {
		maxChars = -1
	}
	return trimtools.Options{MaxChars: maxChars}
}

// NewChain returns the processor chain: the trimmer configured by
// [Config.TrimOptions] (left out when TrimChars is 0), then w (left out
// when nil).
func (c *Config) NewChain(w *window.Window) processor.Processor {
	var ps []processor.Processor
	if c.TrimChars != 0 {
		ps = append(ps, trimtools.New(c.TrimOptions()))
	}
	if w != nil {
		ps = append(ps, w)
	}
	return processor.Chain(ps...)
}
