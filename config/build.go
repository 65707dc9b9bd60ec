package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/processors/window/windowlog"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// Components are what [Config.Build] builds from a Config.
type Components struct {
	// Logger is the logger every component writes to.
	Logger *zap.Logger
	// Model is the primary model.
	Model *model.OpenAI
	// WindowSummarizer writes the summaries of the window's automatic
	// compactions, calling the summary model (ABRIDGE_SUMMARY_MODEL at
	// ABRIDGE_SUMMARY_BASE_URL): see [Config.NewWindowSummarizer].
	WindowSummarizer Summarizer
	// SummarizerKind is "llm" or "digest", the kind of both summarizers.
	SummarizerKind string
	// CompactSummarizer writes the summaries of on-demand compaction, the
	// one a user asks for with a focus (compact.Compact,
	// model.CompactOpenAI, a chat's /compact), calling the primary model:
	// see [Config.NewCompactSummarizer].
	CompactSummarizer Summarizer
	// Window is the sliding window.
	Window *window.Window
	// Chain runs the trimmer (unless TrimChars is -1), then the window.
	Chain processor.Processor
	// AgentOptions are [Config.AgentOptions] for Window and Logger (with
	// Chain as the processors); add tools and a system prompt, then call
	// agent.New(Model, opts...).
	AgentOptions []agent.Option
}

// Summarizer is what [Config.NewWindowSummarizer] and
// [Config.NewCompactSummarizer] build: a summarizer the window takes
// (window.Summarizer) that on-demand compaction takes too, with a focus
// (compact.Summarizer). The LLM summarizer of package
// summarizer and the offline digest of package summary are both.
type Summarizer interface {
	window.Summarizer
	compact.Summarizer
}

// BuildOptions are the options of [Config.Build]. The zero value means:
// the logger built from the configuration, no window events.
type BuildOptions struct {
	// Logger, when non-nil, replaces the logger [Config.Logger] builds.
	Logger *zap.Logger
	// OnEvent, when non-nil, receives the window's events, after the
	// logger has (see package windowlog).
	OnEvent func(ctx context.Context, e window.Event)
	// Store, when non-nil, is the window's summary store (see
	// window.Store); nil means an in-memory one.
	Store window.Store
	// Recall makes the placeholders of cleared tool outputs tell the model
	// about the recall tool; set it when the agent offers that tool
	// (agent.WithRecall).
	Recall bool
	// OnSummaryRequest, when non-nil, receives every request the LLM
	// summarizers make to their model (see model.Observe): the usage
	// the provider reported, the duration, the error. It shows a host
	// what its summaries cost.
	OnSummaryRequest func(ctx context.Context, o model.Observation)
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
	s, kind := c.newSummarizer(logger, opts.OnSummaryRequest)
	cs, _ := c.newCompactSummarizer(logger, opts.OnSummaryRequest)
	o := opts
	o.Logger = logger
	w := c.NewWindowWith(s, o)
	chain := c.NewChain(w)
	return &Components{
		Logger:            logger,
		Model:             c.NewModel(logger),
		WindowSummarizer:  s,
		SummarizerKind:    kind,
		CompactSummarizer: cs,
		Window:            w,
		Chain:             chain,
		AgentOptions:      c.agentOptions(chain, logger),
	}, nil
}

// AgentOptions returns the agent options the configuration sets: the
// chain [Config.NewChain] builds around w as the agent's processors (the
// agent finds w in it, the compactor it forces when the provider reports a
// context overflow), MaxSteps, RequestTimeout, and the logger.
func (c *Config) AgentOptions(w *window.Window, logger *zap.Logger) []agent.Option {
	return c.agentOptions(c.NewChain(w), logger)
}

func (c *Config) agentOptions(chain processor.Processor, logger *zap.Logger) []agent.Option {
	return []agent.Option{
		agent.WithProcessors(chain),
		agent.WithMaxSteps(c.MaxSteps),
		agent.WithRequestTimeout(c.RequestTimeout),
		agent.WithLogger(logger),
	}
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
	return model.NewOpenAI(c.openAIOptions(name, baseURL, key, logger)...)
}

// openAIOptions are the options of a model, StreamIdleTimeout among
// them; empty settings leave the client's defaults.
func (c *Config) openAIOptions(name, baseURL, key string, logger *zap.Logger) []model.Option {
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
	return opts
}

// NewWindowSummarizer returns the summarizer of the window's automatic
// compactions, of the kind [Config.SummarizerKind] resolves to, and that
// kind: an LLM summarizer over [Config.NewSummaryModel] with
// SummaryTimeout ("llm"), or the offline digest ("digest").
func (c *Config) NewWindowSummarizer(logger *zap.Logger) (Summarizer, string) {
	return c.newSummarizer(logger, nil)
}

// newSummarizer is NewWindowSummarizer, its model's requests reported to observe
// (nil: not reported).
func (c *Config) newSummarizer(logger *zap.Logger, observe func(context.Context, model.Observation)) (Summarizer, string) {
	if c.SummarizerKind() == SummarizerDigest {
		return summary.NewDigest(summary.DigestOptions{}), SummarizerDigest
	}
	return summarizer.New(model.Observe(c.NewSummaryModel(logger), observe), summarizer.Options{
		Timeout: c.SummaryTimeout,
		Logger:  logger,
	}), SummarizerLLM
}

// NewCompactSummarizer returns the summarizer of an on-demand compaction,
// and its kind: with an LLM summarizer ([Config.SummarizerKind] "llm"), one
// calling the primary model (Model at OPENAI_BASE_URL), which the design
// gives on-demand compaction, or the summarizer's own model when only its
// endpoint (ABRIDGE_SUMMARY_BASE_URL) is configured; otherwise the offline
// digest, which records the focus it cannot follow.
func (c *Config) NewCompactSummarizer(logger *zap.Logger) (Summarizer, string) {
	return c.newCompactSummarizer(logger, nil)
}

// newCompactSummarizer is NewCompactSummarizer, its model's requests
// reported to observe (nil: not reported).
func (c *Config) newCompactSummarizer(logger *zap.Logger, observe func(context.Context, model.Observation)) (Summarizer, string) {
	if c.SummarizerKind() == SummarizerDigest {
		return summary.NewDigest(summary.DigestOptions{}), SummarizerDigest
	}
	var m model.Model = c.NewModel(logger)
	if c.openAIKey == "" && c.openAIBaseURL == "" && c.SummaryBaseURL != "" {
		m = c.NewSummaryModel(logger)
	}
	return summarizer.New(model.Observe(m, observe), summarizer.Options{Timeout: c.SummaryTimeout, Logger: logger}), SummarizerLLM
}

// WindowOptions returns the window's settings from the configuration:
// MaxMessages, KeepMessages, TailOutputs, ContextWindow, ThresholdPercent,
// TriggerTokens, FactsChars, SummaryClip, KeepUserTurns, SummaryTimeout,
// Ahead, HardMessages, HardTokens, SummaryClaimTTL and the Pool of
// [Config.PoolOptions]
// (the environment reads 0
// and -1 as window.Options does). The summarizers, store and event
// callback are left for the caller; [Config.NewWindow] fills them.
func (c *Config) WindowOptions() window.Options {
	return window.Options{
		MaxMessages:    c.MaxMessages,
		KeepMessages:   c.KeepMessages,
		TailOutputs:    c.TailOutputs,
		ContextWindow:  c.ContextWindow,
		TriggerPercent: c.ThresholdPercent,
		TriggerTokens:  c.TriggerTokens,
		Facts:          c.FactsChars,
		SummaryClip:    c.SummaryClip,
		KeepUserTurns:  c.KeepUserTurns,
		Timeout:        c.SummaryTimeout,
		Ahead:          c.Ahead,
		HardMessages:   c.HardMessages,
		HardTokens:     c.HardTokens,
		ClaimTTL:       c.SummaryClaimTTL,
		Pool:           c.PoolOptions(),
	}
}

// PoolOptions returns the options of the Pool that writes the window's
// summaries in the background: SummaryWorkers workers, SummaryQueue
// summaries waiting, an eighth of them for one payer at most.
func (c *Config) PoolOptions() window.PoolOptions {
	return window.PoolOptions{Workers: c.SummaryWorkers, Queue: c.SummaryQueue, QueuePerPayer: max(1, c.SummaryQueue/8)}
}

// NewWindow returns the window configured by [Config.WindowOptions],
// summarizing with s (nil means the offline digest), falling back to the
// offline digest, writing its events to logger (package windowlog) and
// then reporting them to onEvent (either may be nil), with an in-memory
// summary store.
func (c *Config) NewWindow(s window.Summarizer, logger *zap.Logger, onEvent func(context.Context, window.Event)) *window.Window {
	return c.NewWindowWith(s, BuildOptions{Logger: logger, OnEvent: onEvent})
}

// NewWindowWith is [Config.NewWindow] with the window's logger, event
// callback, summary store and recall hint taken from o (its Logger nil:
// no log lines of the window's events). A summarizer call the provider
// refused for what it held does not count toward the window's circuit
// breaker (see [RequestFault]).
func (c *Config) NewWindowWith(s window.Summarizer, o BuildOptions) *window.Window {
	opts := c.WindowOptions()
	opts.RequestFault = RequestFault
	opts.Summarizer = s
	opts.OnEvent = windowlog.Events(o.Logger, o.OnEvent)
	opts.Store = o.Store
	opts.Recall = o.Recall
	return window.New(opts)
}

// TrimOptions returns the trimmer's settings: MaxChars is TrimChars (the
// environment reads 0 and -1 as trimtools.Options does).
func (c *Config) TrimOptions() trimtools.Options {
	return trimtools.Options{MaxChars: c.TrimChars}
}

// NewChain returns the processor chain: the trimmer configured by
// [Config.TrimOptions] (left out when TrimChars is -1), then w (left out
// when nil).
func (c *Config) NewChain(w *window.Window) processor.Processor {
	var ps []processor.Processor
	if c.TrimChars >= 0 {
		ps = append(ps, trimtools.New(c.TrimOptions()))
	}
	if w != nil {
		ps = append(ps, w)
	}
	return processor.Chain(ps...)
}

// RequestFault reports whether err is a model provider refusing a request
// for what it held (HTTP 400, 413 or 422: a content filter, a message it
// cannot read), as opposed to a failure of its service (5xx, a timeout)
// or of the credential (401, 403, 429): the window's
// Options.RequestFault.
func RequestFault(err error) bool {
	var e *model.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}
