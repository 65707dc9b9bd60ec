package agent

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Option configures an [Agent]. Options are applied in order; a later
// option overrides an earlier one of the same kind, except WithProcessors
// and WithTools, whose arguments accumulate.
type Option interface{ apply(*options) }

type options struct {
	processors []processor.Processor
	tools      []Tool
	system     string
	maxSteps   int
	logger     *zap.Logger
	events     func(ctx context.Context, e Event)
	onText     func(delta string)
	settings   model.Settings
	compactor  compact.Compactor
	// compactorSet records a WithCompactor, which wins over a compactor
	// found in the processors.
	compactorSet bool
	store        Store
	toolConc     int
	recall       Recaller
	timeout      time.Duration
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// DefaultMaxSteps is the number of model requests a turn may make when
// [WithMaxSteps] is not given.
const DefaultMaxSteps = 25

// WithProcessors appends history processors to the agent's chain. The chain
// runs before every model request, the first one first.
//
// A processor that is also a [compact.Compactor], such as a window, is the
// one the agent forces when the provider answers that the prompt is too
// long (see [WithCompactor]); with several, the last one in the chain, the
// processors of a [processor.Chain] and one marked [processor.Required]
// included (see [processor.Last]).
func WithProcessors(ps ...processor.Processor) Option {
	return optionFunc(func(o *options) { o.processors = append(o.processors, ps...) })
}

// WithTools adds tools the model may call. Each tool needs a unique,
// non-empty Name and a non-nil Func; [Agent.Run] reports a misconfigured
// tool as an error wrapping [ErrConfig].
func WithTools(tools ...Tool) Option {
	return optionFunc(func(o *options) { o.tools = append(o.tools, tools...) })
}

// WithSystemPrompt sets the system prompt. It is sent only when a turn
// starts a conversation (the history given to [Agent.Run] is empty): the
// first request then holds the system prompt followed by the user prompt.
// A continued conversation already carries it in its history.
func WithSystemPrompt(s string) Option {
	return optionFunc(func(o *options) { o.system = s })
}

// WithMaxSteps caps the model requests of one turn; n <= 0 means
// [DefaultMaxSteps]. A turn that reaches the cap without a text answer
// fails with [ErrStepLimit].
func WithMaxSteps(n int) Option {
	return optionFunc(func(o *options) { o.maxSteps = n })
}

// WithLogger sets the logger the agent writes its steps to; nil (the
// default) means zap.NewNop().
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// WithToolConcurrency lets the tool calls of one response run at the same
// time, at most n at once (n <= 1: one after the other, the default). Their
// answers go back to the model in the order of the calls whatever the order
// they finish in. The tools, and the [WithEvents] callback (which then
// receives their EventTool events from several goroutines), must be safe
// for concurrent use. A tool that panics still panics the turn's goroutine,
// once the calls started with it have finished.
func WithToolConcurrency(n int) Option {
	return optionFunc(func(o *options) { o.toolConc = n })
}

// WithEvents sets a callback that receives an [Event] for every step a user
// interface would show. It is called synchronously from [Agent.Run], on the
// goroutine running the turn (and, with [WithToolConcurrency], on the
// goroutines running its tools), so it must return quickly; an agent shared
// by concurrent conversations calls it concurrently.
func WithEvents(f func(ctx context.Context, e Event)) Option {
	return optionFunc(func(o *options) { o.events = f })
}

// WithOnText streams the model's text: f receives each piece of every
// response's text as it arrives (the text of responses that also call
// tools included). It sets [model.Settings.OnText], overriding the one of
// [WithSettings]. For a callback per conversation on a shared agent, derive
// one with [Agent.With].
func WithOnText(f func(delta string)) Option {
	return optionFunc(func(o *options) { o.onText = f })
}

// WithSettings sets the settings of every model request. Its Tools are
// replaced by the tools of [WithTools], and its OnText by the callback of
// [WithOnText] when one is given.
func WithSettings(s model.Settings) Option {
	return optionFunc(func(o *options) { o.settings = s })
}

// WithRequestTimeout bounds each model request of a turn, retries
// included, to d: it sets [model.Settings.Timeout] (the one of
// [WithSettings] included). A request that takes longer fails with an error
// matching context.DeadlineExceeded, and the turn with it. d <= 0, the
// default, sets no timeout beyond the one WithSettings gives and the
// context's deadline.
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d })
}

// WithCompactor sets the compactor the agent forces when the provider
// answers that the prompt is too long for its context window (an error
// matching [model.ErrContextOverflow]): the agent compacts the history it
// was sending and retries that request once. Without a compactor the
// overflow error is returned.
//
// It is needed only to choose another compactor than the one the agent
// finds among its processors (see [WithProcessors]), or none: a nil c
// turns the forced compaction off.
func WithCompactor(c compact.Compactor) Option {
	return optionFunc(func(o *options) { o.compactor, o.compactorSet = c, true })
}

// WithStore sets where the agent persists the conversation as it goes (see
// [Store]). A store belongs to one conversation: set it on an agent derived
// for that conversation with [Agent.With].
func WithStore(s Store) Option {
	return optionFunc(func(o *options) { o.store = s })
}
