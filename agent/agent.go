// Package agent runs an LLM agent's turns inside its context window: it
// appends the user's prompt to the history, runs the history-processor
// chain before every model request, calls the model, runs the tools the
// model asks for, and repeats until the model answers with text or a step
// limit is hit. The processed history replaces the stored one, so what the
// agent returns is what it sent plus what came back. An [Agent] holds no
// conversation state: one value serves many concurrent conversations, each
// passing its history in and getting it back in the [Result].
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Errors returned or reported by the agent.
var (
	// ErrStepLimit: the turn made its maximum number of model requests
	// (see [WithMaxSteps]) without getting a text answer. Run returns it
	// together with the Result so far.
	ErrStepLimit = errors.New("step limit reached")
	// ErrConfig: the agent is misconfigured (no model, a tool without a
	// name or function, two tools with one name).
	ErrConfig = errors.New("invalid agent configuration")
	// ErrUnknownTool: the model called a tool the agent does not have. The
	// call is answered with a retry prompt and reported in an [Event].
	ErrUnknownTool = errors.New("unknown tool")
	// ErrInvalidArguments: the model called a tool with arguments that are
	// not valid JSON, or do not match the tool's Parameters schema. The
	// call is answered with a retry prompt saying what is wrong, and
	// reported in an [Event].
	ErrInvalidArguments = errors.New("invalid tool arguments")
)

// Tool is a function the model may call. Parameters is the JSON schema of
// its arguments (an object schema; nil for a tool without arguments); the
// agent compiles it (a schema that does not compile is an [ErrConfig], and
// a $ref outside it is never fetched) and checks every call against it.
// Func receives the arguments as the model wrote them (always valid JSON
// matching Parameters; "{}" when the model sent none) and returns the text
// sent back to the model; a non-nil error is sent back as a retry prompt
// instead, so the model can correct itself, as are arguments that do not
// match. Func must be safe for concurrent use when the agent is shared by
// concurrent conversations, and should honour ctx. The calls of one
// response run one after the other, in the order the model gave them
// (see [WithToolConcurrency]); a panic in Func is not recovered.
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
	Func              func(ctx context.Context, args json.RawMessage) (string, error)
}

// Store persists one conversation as the agent works on it. The agent calls
// it synchronously during [Agent.Run]; an error from it ends the turn.
type Store interface {
	// Append records new messages as soon as they exist: the user's
	// prompt, each response, each request of tool returns. The messages
	// are read-only.
	Append(ctx context.Context, msgs ...processor.Message) error
	// Replace records that the working history was replaced: the
	// processor chain changed it before a request, or a compaction was
	// forced. working is the whole new history (ending with the request
	// about to be sent) and is read-only; messages appended later extend
	// it.
	Replace(ctx context.Context, working []processor.Message) error
}

// Result is the outcome of a turn.
type Result struct {
	// History is the conversation after the turn: the processed history
	// that was last sent, plus the response and tool returns that came
	// after it. Pass it to the next Run.
	History []processor.Message
	// New holds every message the turn created, in order: the user's
	// prompt, the responses, the tool returns. A compaction during the
	// turn may have folded some of them out of History.
	New []processor.Message
	// Text is the text of the final response.
	Text string
	// Usage sums the provider-reported usage of the turn's responses.
	Usage processor.Usage
	// Steps is the number of responses the turn received.
	Steps int
}

// Agent runs turns of a conversation. It is safe for concurrent use: it
// keeps no conversation state, and every turn works on the history it is
// given.
type Agent struct {
	model    model.Model
	optList  []Option
	opts     options
	chain    processor.Processor
	tools    map[string]Tool
	schemas  map[string]*argSchema // the tools' compiled Parameters
	settings model.Settings
	log      *zap.Logger
	err      error // a configuration error, returned by Run
}

// New returns an agent calling m, configured by opts. A misconfiguration
// (see [ErrConfig]) is reported by [Agent.Run].
func New(m model.Model, opts ...Option) *Agent {
	a := &Agent{model: m, optList: slices.Clone(opts)}
	for _, o := range opts {
		if o != nil {
			o.apply(&a.opts)
		}
	}
	if a.opts.maxSteps <= 0 {
		a.opts.maxSteps = DefaultMaxSteps
	}
	a.log = a.opts.logger
	if a.log == nil {
		a.log = zap.NewNop()
	}
	a.chain = processor.Chain(a.opts.processors...)
	if !a.opts.compactorSet {
		a.opts.compactor, _ = processor.Last[compact.Compactor](a.chain)
	}
	a.settings = a.opts.settings
	if a.opts.timeout > 0 {
		a.settings.Timeout = a.opts.timeout
	}
	if a.opts.onText != nil {
		a.settings.OnText = a.opts.onText
	}
	a.settings.Tools = nil
	a.tools = make(map[string]Tool, len(a.opts.tools))
	a.schemas = make(map[string]*argSchema, len(a.opts.tools))
	for i, t := range a.opts.tools {
		schema, serr := compileSchema(i, t.Parameters)
		switch _, dup := a.tools[t.Name]; {
		case t.Name == "" || t.Func == nil:
			a.err = fmt.Errorf("tool %d (%q) needs a name and a function: %w", i, t.Name, ErrConfig)
		case dup:
			a.err = fmt.Errorf("two tools named %q: %w", t.Name, ErrConfig)
		case serr != nil:
			a.err = fmt.Errorf("tool %q: %w: %w", t.Name, serr, ErrConfig)
		}
		a.tools[t.Name] = t
		a.schemas[t.Name] = schema
		a.settings.Tools = append(a.settings.Tools, model.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if m == nil {
		a.err = fmt.Errorf("no model: %w", ErrConfig)
	}
	return a
}

// With returns a new agent configured like a with opts applied after its
// own: a cheap way to give one conversation its own [WithStore],
// [WithOnText] or [WithEvents] on a shared agent.
func (a *Agent) With(opts ...Option) *Agent {
	return New(a.model, append(slices.Clip(a.optList), opts...)...)
}

// Run runs one turn: it appends prompt to history and calls the model,
// running the processor chain before every request and the requested tools
// after every response, until the model answers with text. The history is
// read-only; the Result holds the new one.
//
// Run returns a non-nil Result even when it fails, holding the history as
// far as the turn got: a provider error, a cancelled ctx, a store error, or
// [ErrStepLimit]. That history is valid to continue from, except after a
// store error, which may leave a response's tool calls unanswered.
func (a *Agent) Run(ctx context.Context, history []processor.Message, prompt string) (*Result, error) {
	t := &turn{Agent: a, history: slices.Clip(history)}
	if a.err != nil {
		return t.result(), a.err
	}
	if k, ok := a.opts.recall.(RecallKeeper); ok {
		if err := k.Keep(ctx, history...); err != nil {
			return t.result(), fmt.Errorf("recall store: %w", err)
		}
	}
	// History in: the user's prompt (with the system prompt when the
	// conversation starts) ends the history.
	if err := t.add(ctx, a.promptMessage(len(history) == 0, prompt)); err != nil {
		return t.result(), err
	}
	for t.steps < a.opts.maxSteps {
		// Processors: the chain sees the whole history before every
		// request, and its output becomes the working history.
		if err := t.process(ctx); err != nil {
			return t.result(), err
		}
		// Model call, with one forced compaction if the prompt overflows.
		resp, err := t.request(ctx)
		if err != nil {
			return t.result(), err
		}
		if err := t.add(ctx, resp); err != nil {
			return t.result(), err
		}
		if !resp.HasToolCalls() {
			t.text = resp.Text()
			return t.result(), nil
		}
		// Tools: every call is answered, with a result or a retry prompt.
		returns, cerr := t.runTools(ctx, resp.ToolCalls())
		if err := t.add(ctx, returns); err != nil {
			return t.result(), err
		}
		if cerr != nil {
			return t.result(), cerr
		}
	}
	// History out: the caller gets what the turn built so far.
	return t.result(), fmt.Errorf("%d model requests without a text answer: %w", t.steps, ErrStepLimit)
}

// promptMessage builds the request holding the user's prompt.
func (a *Agent) promptMessage(first bool, prompt string) processor.Message {
	if first && a.opts.system != "" {
		return processor.NewRequest(processor.SystemPrompt{Content: a.opts.system}, processor.UserPrompt{Content: prompt})
	}
	return processor.UserMessage(prompt)
}

// turn is the state of one Run.
type turn struct {
	*Agent
	history []processor.Message // the working history
	added   []processor.Message // messages created by the turn
	text    string
	usage   processor.Usage
	steps   int
}

func (t *turn) result() *Result {
	return &Result{History: t.history, New: t.added, Text: t.text, Usage: t.usage, Steps: t.steps}
}

// add appends a new message to the history and to the store.
func (t *turn) add(ctx context.Context, m processor.Message) error {
	t.history = append(t.history, m)
	t.added = append(t.added, m)
	if k, ok := t.opts.recall.(RecallKeeper); ok {
		if err := k.Keep(ctx, m); err != nil {
			return fmt.Errorf("recall store: %w", err)
		}
	}
	if t.opts.store == nil {
		return nil
	}
	if err := t.opts.store.Append(ctx, m); err != nil {
		return fmt.Errorf("store append: %w", err)
	}
	return nil
}

// replace makes h the working history and tells the store (and the recall
// store what any new summary replaced).
func (t *turn) replace(ctx context.Context, h []processor.Message) error {
	if k, ok := t.opts.recall.(RecallKeeper); ok {
		if err := keepSummaries(ctx, k, t.history, h); err != nil {
			return fmt.Errorf("recall store: %w", err)
		}
	}
	t.history = slices.Clip(h) // appending must never write into a processor's array
	if t.opts.store == nil {
		return nil
	}
	if err := t.opts.store.Replace(ctx, t.history); err != nil {
		return fmt.Errorf("store replace: %w", err)
	}
	return nil
}

// process runs the processor chain over the working history and, when it
// changed anything, makes its output the working history.
func (t *turn) process(ctx context.Context) error {
	out, err := t.chain.Process(ctx, t.history)
	if err == nil {
		// A chain of one is that processor, unchecked: check it here.
		err = processor.CheckOutput(out, t.history[len(t.history)-1])
	}
	if ce := (*processor.ChainError)(nil); errors.As(err, &ce) && ce.Position < 0 {
		return fmt.Errorf("history given to the agent is invalid (processor.Repair fixes broken tool call/return pairs): %w", err)
	}
	if err != nil {
		return fmt.Errorf("process history before request %d: %w", t.steps+1, err)
	}
	if sameHistory(out, t.history) {
		return nil
	}
	e := Event{Kind: EventProcessed, Step: t.steps + 1,
		MessagesBefore: len(t.history), TokensBefore: processor.ContentTokens(t.history),
		Messages: len(out), Tokens: processor.ContentTokens(out)}
	t.log.Debug("history processed", zap.Int("step", e.Step),
		zap.Int("messages_before", e.MessagesBefore), zap.Int("tokens_before", e.TokensBefore),
		zap.Int("messages", e.Messages), zap.Int("tokens", e.Tokens))
	t.emit(ctx, e)
	return t.replace(ctx, out)
}

// request sends the working history to the model. When the provider says
// the prompt overflows its context window and a compactor is configured, it
// forces a compaction and retries once.
func (t *turn) request(ctx context.Context) (processor.Message, error) {
	resp, err := t.send(ctx)
	if err == nil || t.opts.compactor == nil || !errors.Is(err, model.ErrContextOverflow) {
		return resp, err
	}
	if cerr := t.forceCompaction(ctx, err); cerr != nil {
		return resp, cerr
	}
	resp, err = t.send(ctx)
	if err != nil {
		return resp, fmt.Errorf("after forced compaction: %w", err)
	}
	return resp, nil
}

// send makes one model request and accounts for its response.
func (t *turn) send(ctx context.Context) (processor.Message, error) {
	step := t.steps + 1
	tokens := processor.EstimateTokens(t.history)
	t.log.Debug("request", zap.Int("step", step), zap.Int("messages", len(t.history)), zap.Int("tokens", tokens))
	t.emit(ctx, Event{Kind: EventRequest, Step: step, Messages: len(t.history), Tokens: tokens})
	start := time.Now()
	resp, err := t.model.Request(ctx, t.history, t.settings)
	if err != nil {
		return resp, fmt.Errorf("model request %d: %w", step, err)
	}
	d := time.Since(start)
	t.steps = step
	u := resp.Usage()
	t.usage = t.usage.Add(u)
	calls := len(resp.ToolCalls())
	t.log.Debug("response", zap.Int("step", step), zap.Duration("duration", d), zap.Int("tool_calls", calls),
		zap.Int64("input_tokens", u.InputTokens), zap.Int64("cached_input_tokens", u.CachedInputTokens),
		zap.Int64("output_tokens", u.OutputTokens))
	t.emit(ctx, Event{Kind: EventResponse, Step: step, Usage: u, ToolCalls: calls, Duration: d})
	return resp, nil
}

// forceCompaction runs the compactor over the working history after the
// provider refused it with cause.
func (t *turn) forceCompaction(ctx context.Context, cause error) error {
	e := Event{Kind: EventCompactionForced, Step: t.steps + 1, Cause: cause,
		MessagesBefore: len(t.history), TokensBefore: processor.ContentTokens(t.history)}
	out, err := t.opts.compactor.Compact(ctx, t.history)
	if err == nil {
		err = processor.CheckOutput(out, t.history[len(t.history)-1])
	}
	if err != nil {
		e.Err = err
		e.Messages, e.Tokens = e.MessagesBefore, e.TokensBefore
		t.emit(ctx, e)
		return fmt.Errorf("forced compaction after %w: %w", cause, err)
	}
	e.Messages, e.Tokens = len(out), processor.ContentTokens(out)
	t.log.Info("compaction forced", zap.Int("step", e.Step), zap.NamedError("cause", cause),
		zap.Int("messages_before", e.MessagesBefore), zap.Int("tokens_before", e.TokensBefore),
		zap.Int("messages", e.Messages), zap.Int("tokens", e.Tokens))
	t.emit(ctx, e)
	return t.replace(ctx, out)
}

// runTools runs the calls in order and returns the request answering all
// of them. When ctx ends, the calls not yet run are answered with a retry
// prompt saying so and the context's error is returned too.
func (t *turn) runTools(ctx context.Context, calls []processor.ToolCall) (processor.Message, error) {
	parts := make([]processor.Part, len(calls))
	if n := t.opts.toolConc; n > 1 && len(calls) > 1 {
		t.runConcurrently(ctx, calls, parts, n)
	} else {
		for i, c := range calls {
			if ctx.Err() != nil {
				parts[i] = notRun(ctx, c)
				continue
			}
			parts[i] = t.runTool(ctx, c)
		}
	}
	if err := ctx.Err(); err != nil {
		return processor.NewRequest(parts...), fmt.Errorf("tools of request %d: %w", t.steps, err)
	}
	return processor.NewRequest(parts...), nil
}

// runConcurrently runs calls, at most n at once, answering each in parts
// at its index. Once ctx is done, the calls not started are answered as
// not run. A panic in a tool is raised again here once every started call
// has returned.
func (t *turn) runConcurrently(ctx context.Context, calls []processor.ToolCall, parts []processor.Part, n int) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for i, c := range calls {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			parts[i] = notRun(ctx, c)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
				}
			}()
			parts[i] = t.runTool(ctx, c)
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}

// notRun answers a call that was not run because ctx is done.
func notRun(ctx context.Context, c processor.ToolCall) processor.Part {
	return processor.RetryPrompt{ToolName: c.ToolName, ToolCallID: c.ToolCallID,
		Content: fmt.Sprintf("Tool %s was not run: %v.", c.ToolName, ctx.Err())}
}

// runTool runs one call and returns the part answering it: a tool return,
// or a retry prompt when the tool is unknown, the arguments are not JSON or
// the tool failed.
func (t *turn) runTool(ctx context.Context, c processor.ToolCall) processor.Part {
	start := time.Now()
	out, err := t.callTool(ctx, c)
	d := time.Since(start)
	t.log.Debug("tool", zap.Int("step", t.steps), zap.String("tool", c.ToolName), zap.String("tool_call_id", c.ToolCallID),
		zap.Duration("duration", d), zap.NamedError("tool_error", err))
	t.emit(ctx, Event{Kind: EventTool, Step: t.steps, ToolName: c.ToolName, ToolCallID: c.ToolCallID, Duration: d, Err: err})
	if err != nil {
		return processor.RetryPrompt{ToolName: c.ToolName, ToolCallID: c.ToolCallID, Content: err.Error()}
	}
	return processor.ToolReturn{ToolName: c.ToolName, ToolCallID: c.ToolCallID, Content: out}
}

func (t *turn) callTool(ctx context.Context, c processor.ToolCall) (string, error) {
	tool, ok := t.tools[c.ToolName]
	if !ok {
		return "", fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, c.ToolName, t.toolNames())
	}
	args := json.RawMessage(c.Args)
	if strings.TrimSpace(c.Args) == "" {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return "", fmt.Errorf("%w for %s: %v; call it again with a JSON object matching its parameters", ErrInvalidArguments, c.ToolName, err)
	}
	if s := t.schemas[c.ToolName]; s != nil {
		if err := s.check(args); err != nil {
			return "", fmt.Errorf("%w for %s: %v; call it again with arguments matching its parameters", ErrInvalidArguments, c.ToolName, err)
		}
	}
	out, err := tool.Func(ctx, args)
	if err != nil {
		return "", fmt.Errorf("tool %s: %w", c.ToolName, err)
	}
	return out, nil
}

func (t *turn) toolNames() string {
	if len(t.tools) == 0 {
		return "none"
	}
	names := make([]string, 0, len(t.tools))
	for n := range t.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (t *turn) emit(ctx context.Context, e Event) {
	if t.opts.events != nil {
		t.opts.events(ctx, e)
	}
}

// sameHistory reports whether two histories hold equal messages.
func sameHistory(a, b []processor.Message) bool {
	return slices.EqualFunc(a, b, processor.Equal)
}
