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
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/processors/window/windowlog"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
)

// Components are what [Config.Build] builds from a Config: everything a
// host needs to run abridge as configured, each built once.
type Components struct {
	// Logger is the logger every component writes to.
	Logger *zap.Logger
	// Model is the primary model: Model at OPENAI_BASE_URL (else the
	// OpenAI API) with OPENAI_API_KEY and StreamIdleTimeout.
	Model *openai.Chat
	// SummaryModel is the summarizer's model: SummaryModel (else Model) at
	// SummaryBaseURL (else OPENAI_BASE_URL) with SummaryAPIKey (else
	// OPENAI_API_KEY) and StreamIdleTimeout. The LLM summarizers call it;
	// it is built whatever the summarizer's kind.
	SummaryModel *openai.Chat
	// WindowSummarizer writes the summaries of the window's automatic
	// compactions: BuildOptions.Summarizer when set, else the one
	// SummarizerKind names (an LLM summarizer calling SummaryModel with
	// SummaryTimeout, or the offline digest).
	WindowSummarizer summarizer.Summarizer
	// SummarizerKind is "llm" or "digest" ([Config.SummarizerKind]), the
	// kind of the summarizers the configuration names.
	SummarizerKind string
	// CompactSummarizer writes the summaries of on-demand compaction, the
	// one a user asks for with a focus (compact.Compact,
	// openai.Compact, a chat's /compact): with an LLM summarizer, one
	// calling the primary model, which the design gives on-demand
	// compaction (or SummaryModel when only its endpoint,
	// ABRIDGE_SUMMARY_BASE_URL, is configured); otherwise the offline
	// digest, which records the focus it cannot follow.
	CompactSummarizer summarizer.Summarizer
	// Window is the sliding window of [Config.WindowOptions], summarizing
	// with WindowSummarizer and falling back to the offline digest, its
	// events written to Logger (package windowlog; not with
	// BuildOptions.QuietEvents), then to BuildOptions.OnEvent. A summarizer call the provider refused for
	// what it held (HTTP 400, 413 or 422: a content filter) does not count
	// toward its circuit breaker. Close it when done.
	Window *window.Window
	// Chain runs the trimmer of [Config.TrimOptions] (left out when
	// TrimMaxChars is -1), then Window.
	Chain processor.Processor
	// AgentOptions are the agent's options: Chain as its processors (the
	// agent finds Window in it, the compactor it forces when the provider
	// reports a context overflow), MaxSteps, RequestTimeout and Logger.
	// Add tools and a system prompt, then call agent.New(Model, opts...).
	AgentOptions []agent.Option
}

// BuildOptions are the options of [Config.Build]. The zero value means:
// the logger built from the configuration, the summarizer it names, an
// in-memory summary store, no window events.
type BuildOptions struct {
	// Logger, when non-nil, replaces the logger [Config.LoggerTo] builds
	// for stderr.
	Logger *zap.Logger
	// OnEvent, when non-nil, receives the window's events, after the
	// logger has (see package windowlog).
	OnEvent func(ctx context.Context, e window.Event)
	// QuietEvents leaves the window's events out of the log, for a host
	// that tells of them itself through OnEvent (abridge chat's status
	// lines), so that none is told twice. The other components still log.
	QuietEvents bool
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
	// Summarizer, when non-nil, writes the window's summaries instead of
	// the summarizer the configuration names: a host's own (abridge
	// serve's, through each client's API), or a wrapper of one.
	Summarizer summarizer.Summarizer
}

// Build builds the logger, the models, the summarizers, the window, the
// chain and the agent options from the configuration in one call (see
// [Components]), and logs the configuration (secrets redacted) at debug
// level. It is the one way to the configured components. It fails when the
// configuration does not pass [Config.Validate] (which one from [Load] or
// [LoadFrom] always does).
func (c *Config) Build(opts BuildOptions) (*Components, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		var err error
		if logger, err = c.LoggerTo(os.Stderr); err != nil {
			return nil, err
		}
	}
	logger.Debug("configuration", c.Field())
	comp := &Components{
		Logger:         logger,
		Model:          c.newOpenAI(c.Model, c.openAIBaseURL, c.openAIKey, logger),
		SummaryModel:   c.newOpenAI(c.summaryModel(), c.summaryBaseURL(), c.summaryKey(), logger),
		SummarizerKind: c.SummarizerKind(),
	}
	if comp.SummarizerKind == SummarizerDigest {
		comp.WindowSummarizer = summarizer.NewDigest(summarizer.DigestOptions{})
		comp.CompactSummarizer = summarizer.NewDigest(summarizer.DigestOptions{})
	} else {
		comp.WindowSummarizer = c.llmSummarizer(comp.SummaryModel, logger, opts.OnSummaryRequest)
		// On-demand compaction calls the primary model, unless only the
		// summarizer's endpoint is configured.
		m := comp.Model
		if c.openAIKey == "" && c.openAIBaseURL == "" && c.SummaryBaseURL != "" {
			m = comp.SummaryModel
		}
		comp.CompactSummarizer = c.llmSummarizer(m, logger, opts.OnSummaryRequest)
	}
	if opts.Summarizer != nil {
		comp.WindowSummarizer = opts.Summarizer
	}
	wopts := c.WindowOptions()
	wopts.RequestFault = requestFault
	wopts.Summarizer = comp.WindowSummarizer
	eventLogger := logger
	if opts.QuietEvents {
		eventLogger = zap.NewNop()
	}
	wopts.OnEvent = windowlog.Events(eventLogger, opts.OnEvent)
	wopts.Store = opts.Store
	wopts.Recall = opts.Recall
	comp.Window = window.New(wopts)
	var ps []processor.Processor
	if c.TrimMaxChars >= 0 {
		ps = append(ps, trimtools.New(c.TrimOptions()))
	}
	comp.Chain = processor.Chain(append(ps, comp.Window)...)
	comp.AgentOptions = []agent.Option{
		agent.WithProcessors(comp.Chain),
		agent.WithMaxSteps(c.MaxSteps),
		agent.WithRequestTimeout(c.RequestTimeout),
		agent.WithLogger(logger),
	}
	return comp, nil
}

// llmSummarizer is an LLM summarizer calling m with SummaryTimeout, its
// model's requests reported to observe (nil: not reported).
func (c *Config) llmSummarizer(m model.Model, logger *zap.Logger, observe func(context.Context, model.Observation)) summarizer.Summarizer {
	return llm.New(model.Observe(m, observe), llm.Options{Timeout: c.SummaryTimeout, Logger: logger})
}

// LoggerTo builds the logger writing LogFormat lines at LogLevel and above
// to w: [Config.Build] builds it for stderr when given no logger. A host
// that needs the logger before the components (to open the session store
// it gives as BuildOptions.Store; to write to a command's own error
// stream) builds it here and passes it as BuildOptions.Logger.
//
// The logger serializes its own writes to w, so w need not be safe for
// concurrent use; writes to w from outside the logger are not serialized
// with them. It fails when LogLevel or LogFormat is out of range, naming
// the variable, and when w is nil.
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

// newOpenAI builds a model; empty settings leave the client's defaults.
func (c *Config) newOpenAI(name, baseURL, key string, logger *zap.Logger) *openai.Chat {
	return openai.New(c.openAIOptions(name, baseURL, key, logger)...)
}

// openAIOptions are the options of a model, StreamIdleTimeout among
// them; empty settings leave the client's defaults.
func (c *Config) openAIOptions(name, baseURL, key string, logger *zap.Logger) []openai.Option {
	opts := []openai.Option{openai.WithModel(name), openai.WithStreamIdleTimeout(c.StreamIdleTimeout)}
	if baseURL != "" {
		opts = append(opts, openai.WithBaseURL(baseURL))
	}
	if key != "" {
		opts = append(opts, openai.WithAPIKey(key))
	}
	if logger != nil {
		opts = append(opts, openai.WithLogger(logger))
	}
	return opts
}

// WindowOptions returns the window's settings from the configuration:
// MaxMessages, KeepMessages, TailOutputs, ContextWindow, TriggerPercent,
// TriggerTokens, FactsChars, SummaryClip, KeepUserTurns, SummaryTimeout,
// Ahead, HardMessages, HardTokens, SummaryClaimTTL, and a Pool of
// SummaryWorkers workers with SummaryQueue summaries waiting, an eighth of
// them for one payer at most (the environment reads 0 and -1 as
// window.Options does). The summarizer, store and event callback are left
// out: the window [Config.Build] builds has them. A host that builds
// windows of its own (the replay, one per transcript) starts from these.
func (c *Config) WindowOptions() window.Options {
	return window.Options{
		MaxMessages:    c.MaxMessages,
		KeepMessages:   c.KeepMessages,
		TailOutputs:    c.TailOutputs,
		ContextWindow:  c.ContextWindow,
		TriggerPercent: c.TriggerPercent,
		TriggerTokens:  c.TriggerTokens,
		FactsChars:     c.FactsChars,
		SummaryClip:    c.SummaryClip,
		KeepUserTurns:  c.KeepUserTurns,
		Timeout:        c.SummaryTimeout,
		Ahead:          c.Ahead,
		HardMessages:   c.HardMessages,
		HardTokens:     c.HardTokens,
		ClaimTTL:       c.SummaryClaimTTL,
		Pool:           window.PoolOptions{Workers: c.SummaryWorkers, Queue: c.SummaryQueue, QueuePerPayer: max(1, c.SummaryQueue/8)},
	}
}

// TrimOptions returns the trimmer's settings: MaxChars is TrimMaxChars (the
// environment reads 0 and -1 as trimtools.Options does).
func (c *Config) TrimOptions() trimtools.Options {
	return trimtools.Options{MaxChars: c.TrimMaxChars}
}

// requestFault reports whether err is a model provider refusing a request
// for what it held (HTTP 400, 413 or 422: a content filter, a message it
// cannot read), as opposed to a failure of its service (5xx, a timeout)
// or of the credential (401, 403, 429): the window's
// Options.RequestFault.
func requestFault(err error) bool {
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
