package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// ignoreMeta ignores what the recorder fills in on responses.
var ignoreMeta = metaIgnoring(func(m *processor.Meta) { m.Usage, m.ModelName = processor.Usage{}, "" })

// metaIgnoring compares messages' metadata after clear has cleared, in
// copies, what is to be ignored (a nil Meta counts as a zero one).
func metaIgnoring(clear func(*processor.Meta)) cmp.Option {
	return cmp.Comparer(func(a, b *processor.Meta) bool {
		x, y := processor.Message{Meta: a}.Info(), processor.Message{Meta: b}.Info()
		clear(&x)
		clear(&y)
		return processor.Equal(processor.Message{}.WithMeta(x), processor.Message{}.WithMeta(y))
	})
}

func call(id, name, args string) processor.ToolCall {
	return processor.ToolCall{ToolCallID: id, ToolName: name, Args: args}
}

func callsResponse(calls ...processor.ToolCall) processor.Message {
	parts := make([]processor.Part, len(calls))
	for i, c := range calls {
		parts[i] = c
	}
	return processor.NewResponse(parts...)
}

var addTool = agent.Tool{
	Name:        "add",
	Description: "adds a and b",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	Func: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return fmt.Sprint(in.A + in.B), nil
	},
}

var failTool = agent.Tool{
	Name: "fail",
	Func: func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk full") },
}

// echoTool returns its raw arguments.
var echoTool = agent.Tool{
	Name: "echo",
	Func: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil },
}

func TestRunToolLoop(t *testing.T) {
	rec := model.NewRecorder(
		model.Respond(callsResponse(call("c1", "add", `{"a":1,"b":2}`), call("c2", "add", `{"a":3,"b":4}`))),
		model.RespondText("3 and 7"),
	)
	a := agent.New(rec, agent.WithTools(addTool))
	res, err := a.Run(context.Background(), nil, "add things")
	if err != nil {
		t.Fatal(err)
	}
	want := []processor.Message{
		processor.UserMessage("add things"),
		callsResponse(call("c1", "add", `{"a":1,"b":2}`), call("c2", "add", `{"a":3,"b":4}`)),
		processor.NewRequest(
			processor.ToolReturn{ToolName: "add", ToolCallID: "c1", Content: "3"},
			processor.ToolReturn{ToolName: "add", ToolCallID: "c2", Content: "7"},
		),
		processor.TextMessage("3 and 7"),
	}
	if diff := cmp.Diff(want, res.History, ignoreMeta); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, res.New, ignoreMeta); diff != "" {
		t.Errorf("new (-want +got):\n%s", diff)
	}
	if res.Text != "3 and 7" || res.Steps != 2 {
		t.Errorf("text %q steps %d, want %q 2", res.Text, res.Steps, "3 and 7")
	}
	calls := rec.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d model calls, want 2", len(calls))
	}
	if diff := cmp.Diff(want[:3], calls[1].Messages, ignoreMeta); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
	wantTools := []model.Tool{{Name: addTool.Name, Description: addTool.Description, Parameters: addTool.Parameters}}
	if diff := cmp.Diff(wantTools, calls[0].Settings.Tools); diff != "" {
		t.Errorf("tools offered (-want +got):\n%s", diff)
	}
	var sum processor.Usage
	for _, m := range res.History {
		if m.Kind == processor.Response {
			sum = sum.Add(m.Usage())
		}
	}
	if res.Usage != sum || res.Usage.InputTokens == 0 {
		t.Errorf("usage %+v, want the sum of the responses' %+v", res.Usage, sum)
	}
}

func TestRunToolAnswers(t *testing.T) {
	tests := []struct {
		name string
		call processor.ToolCall
		want processor.Part
	}{
		{"result", call("c1", "add", `{"a":2,"b":2}`),
			processor.ToolReturn{ToolName: "add", ToolCallID: "c1", Content: "4"}},
		{"tool error", call("c1", "fail", `{}`),
			processor.RetryPrompt{ToolName: "fail", ToolCallID: "c1", Content: "tool fail: disk full"}},
		{"unknown tool", call("c1", "rm", `{}`),
			processor.RetryPrompt{ToolName: "rm", ToolCallID: "c1", Content: `unknown tool "rm"; available tools: add, echo, fail`}},
		{"invalid JSON", call("c1", "add", `{"a":1,`),
			processor.RetryPrompt{ToolName: "add", ToolCallID: "c1", Content: "invalid tool arguments for add: unexpected end of JSON input; call it again with a JSON object matching its parameters"}},
		{"no arguments", call("c1", "echo", ``),
			processor.ToolReturn{ToolName: "echo", ToolCallID: "c1", Content: "{}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(model.Respond(callsResponse(tt.call)), model.RespondText("done"))
			a := agent.New(rec, agent.WithTools(addTool, failTool, echoTool))
			res, err := a.Run(context.Background(), nil, "go")
			if err != nil {
				t.Fatal(err)
			}
			calls := rec.Calls()
			if len(calls) != 2 {
				t.Fatalf("%d model calls, want 2", len(calls))
			}
			sent := calls[1].Messages
			if diff := cmp.Diff(processor.NewRequest(tt.want), sent[len(sent)-1]); diff != "" {
				t.Errorf("answer sent (-want +got):\n%s", diff)
			}
			if err := processor.Validate(res.History[:len(res.History)-1]); err != nil {
				t.Errorf("history before the final response is invalid: %v", err)
			}
		})
	}
}

// alwaysCalls answers every request with a call of echo, with a fresh ID.
func alwaysCalls(_ context.Context, i int, _ model.Call) (processor.Message, error) {
	return callsResponse(call(fmt.Sprintf("c%d", i), "echo", `{"i":1}`)), nil
}

func TestRunStepLimit(t *testing.T) {
	for _, steps := range []int{1, 3} {
		t.Run(fmt.Sprint(steps), func(t *testing.T) {
			rec := model.NewRecorder(alwaysCalls)
			a := agent.New(rec, agent.WithTools(echoTool), agent.WithMaxSteps(steps))
			res, err := a.Run(context.Background(), nil, "loop")
			if !errors.Is(err, agent.ErrStepLimit) {
				t.Fatalf("error %v, want ErrStepLimit", err)
			}
			if res == nil {
				t.Fatal("no result with the step-limit error")
			}
			if got := len(rec.Calls()); got != steps {
				t.Errorf("%d model calls, want %d", got, steps)
			}
			if res.Steps != steps || len(res.History) != 1+2*steps || len(res.New) != 1+2*steps {
				t.Errorf("steps %d, history %d, new %d; want %d, %d, %d", res.Steps, len(res.History), len(res.New), steps, 1+2*steps, 1+2*steps)
			}
			if err := processor.Validate(res.History); err != nil {
				t.Errorf("returned history is invalid: %v", err)
			}
		})
	}
}

func TestRunDefaultStepLimit(t *testing.T) {
	rec := model.NewRecorder(alwaysCalls)
	_, err := agent.New(rec, agent.WithTools(echoTool)).Run(context.Background(), nil, "loop")
	if !errors.Is(err, agent.ErrStepLimit) {
		t.Fatalf("error %v, want ErrStepLimit", err)
	}
	if got := len(rec.Calls()); got != agent.DefaultMaxSteps {
		t.Errorf("%d model calls, want %d", got, agent.DefaultMaxSteps)
	}
}

var overflow = &model.Error{StatusCode: 400, Code: "context_length_exceeded", Message: "too long"}

// keepLast is a compactor that keeps only the last request.
type keepLast struct {
	mu    sync.Mutex
	calls int
}

func (k *keepLast) Compact(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	k.mu.Lock()
	k.calls++
	k.mu.Unlock()
	return []processor.Message{h[len(h)-1]}, nil
}

// Process returns h unchanged: a keepLast in the chain is a processor that
// the agent finds as its compactor.
func (k *keepLast) Process(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	return h, nil
}

func TestRunOverflow(t *testing.T) {
	old := []processor.Message{processor.UserMessage("old question"), processor.TextMessage("old answer")}
	tests := []struct {
		name      string
		script    []model.Reply
		compactor string // how it is given: "option", "processor", "chain", "required" (a processor marked required), "off" (a processor, and WithCompactor(nil)), or not at all
		wantErr   bool
		wantCalls int
		wantComp  int
	}{
		{"compaction then retry", []model.Reply{model.Fail(overflow), model.RespondText("ok")}, "option", false, 2, 1},
		{"second overflow fails", []model.Reply{model.Fail(overflow)}, "option", true, 2, 1},
		{"no compactor", []model.Reply{model.Fail(overflow)}, "", true, 1, 0},
		{"compactor found among the processors", []model.Reply{model.Fail(overflow), model.RespondText("ok")}, "processor", false, 2, 1},
		{"compactor found in a nested chain", []model.Reply{model.Fail(overflow), model.RespondText("ok")}, "chain", false, 2, 1},
		{"compactor found marked required", []model.Reply{model.Fail(overflow), model.RespondText("ok")}, "required", false, 2, 1},
		{"found compactor turned off", []model.Reply{model.Fail(overflow)}, "off", true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(tt.script...)
			k := &keepLast{}
			var events []agent.Event
			opts := []agent.Option{agent.WithEvents(func(_ context.Context, e agent.Event) { events = append(events, e) })}
			noop := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) { return h, nil })
			switch tt.compactor {
			case "option":
				opts = append(opts, agent.WithCompactor(k))
			case "processor":
				opts = append(opts, agent.WithProcessors(noop, k))
			case "chain":
				opts = append(opts, agent.WithProcessors(processor.Chain(k, noop), noop))
			case "required":
				opts = append(opts, agent.WithProcessors(noop, processor.Required(k)))
			case "off":
				opts = append(opts, agent.WithProcessors(k), agent.WithCompactor(nil))
			}
			st := &memStore{}
			res, err := agent.New(rec, opts...).With(agent.WithStore(st)).Run(context.Background(), old, "new question")
			if tt.wantErr {
				if !errors.Is(err, model.ErrContextOverflow) {
					t.Fatalf("error %v, want a context overflow", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			calls := rec.Calls()
			if len(calls) != tt.wantCalls || k.calls != tt.wantComp {
				t.Fatalf("%d model calls, %d compactions; want %d, %d", len(calls), k.calls, tt.wantCalls, tt.wantComp)
			}
			if len(st.replaced) != tt.wantComp {
				t.Errorf("%d store replacements, want %d", len(st.replaced), tt.wantComp)
			}
			if diff := cmp.Diff(res.New, st.appended, ignoreMeta); diff != "" {
				t.Errorf("appended (-want +got):\n%s", diff)
			}
			if tt.wantComp == 0 {
				return
			}
			compacted := []processor.Message{processor.UserMessage("new question")}
			if diff := cmp.Diff(compacted, calls[1].Messages); diff != "" {
				t.Errorf("retried request (-want +got):\n%s", diff)
			}
			want := compacted
			if !tt.wantErr {
				want = append(want, processor.TextMessage("ok"))
			}
			if diff := cmp.Diff(want, res.History, ignoreMeta); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, st.working(), ignoreMeta); diff != "" {
				t.Errorf("store's working history (-want +got):\n%s", diff)
			}
			var forced []agent.Event
			for _, e := range events {
				if e.Kind == agent.EventCompactionForced {
					forced = append(forced, e)
				}
			}
			if len(forced) != 1 {
				t.Fatalf("%d compaction-forced events, want 1", len(forced))
			}
			f := forced[0]
			if f.MessagesBefore != 3 || f.Messages != 1 || !errors.Is(f.Cause, model.ErrContextOverflow) || f.Err != nil {
				t.Errorf("compaction event %+v", f)
			}
		})
	}
}

func TestRunOverflowCompactionFails(t *testing.T) {
	rec := model.NewRecorder(model.Fail(overflow))
	boom := errors.New("summarizer down")
	c := compact.Func(func(context.Context, []processor.Message) ([]processor.Message, error) { return nil, boom })
	_, err := agent.New(rec, agent.WithCompactor(c)).Run(context.Background(), nil, "hi")
	if !errors.Is(err, boom) || !errors.Is(err, model.ErrContextOverflow) {
		t.Fatalf("error %v, want both the compaction's and the overflow", err)
	}
	if got := len(rec.Calls()); got != 1 {
		t.Errorf("%d model calls, want 1 (no retry without a compaction)", got)
	}
}

// trimOld replaces the content of every tool return except in the last
// message with "[trimmed]", and counts its calls.
type trimOld struct {
	mu    sync.Mutex
	calls int
}

func (p *trimOld) Process(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	out := make([]processor.Message, len(h))
	copy(out, h)
	for i := range out[:len(out)-1] {
		m := out[i]
		if m.Kind != processor.Request {
			continue
		}
		parts := make([]processor.Part, len(m.Parts))
		for j, part := range m.Parts {
			if r, ok := part.(processor.ToolReturn); ok {
				r.Content = "[trimmed]"
				part = r
			}
			parts[j] = part
		}
		m.Parts = parts
		out[i] = m
	}
	return out, nil
}

func TestRunChainBeforeEveryRequest(t *testing.T) {
	big := strings.Repeat("x", 100)
	// The stored history holds an old tool return the chain trims.
	stored := []processor.Message{
		processor.UserMessage("start"),
		callsResponse(call("c0", "echo", `{}`)),
		processor.NewRequest(processor.ToolReturn{ToolName: "echo", ToolCallID: "c0", Content: big}),
		processor.TextMessage("started"),
	}
	rec := model.NewRecorder(
		model.Respond(callsResponse(call("c1", "echo", `{"big":"`+big+`"}`))),
		model.Respond(callsResponse(call("c2", "echo", `{}`))),
		model.RespondText("done"),
	)
	p := &trimOld{}
	st := &memStore{}
	var processed []agent.Event
	onEvent := func(_ context.Context, e agent.Event) {
		if e.Kind == agent.EventProcessed {
			processed = append(processed, e)
		}
	}
	res, err := agent.New(rec, agent.WithTools(echoTool), agent.WithProcessors(p)).
		With(agent.WithStore(st), agent.WithEvents(onEvent)).Run(context.Background(), stored, "go on")
	if err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	if len(calls) != 3 || p.calls != 3 {
		t.Fatalf("%d requests, %d chain runs; want 3 and 3", len(calls), p.calls)
	}
	returnOf := func(ms []processor.Message, id string) string {
		for _, m := range ms {
			for _, part := range m.Parts {
				if r, ok := part.(processor.ToolReturn); ok && r.ToolCallID == id {
					return r.Content
				}
			}
		}
		return "(absent)"
	}
	tests := []struct {
		call       int
		id         string
		wantSent   string
		wantStored string // in the history the caller passed, or the result
	}{
		{0, "c0", "[trimmed]", big},
		{1, "c1", `{"big":"` + big + `"}`, "[trimmed]"}, // last message: untouched when sent
		{2, "c1", "[trimmed]", "[trimmed]"},
		{2, "c2", "{}", "{}"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("request %d %s", tt.call, tt.id), func(t *testing.T) {
			if got := returnOf(calls[tt.call].Messages, tt.id); got != tt.wantSent {
				t.Errorf("sent %q, want %q", got, tt.wantSent)
			}
			src := res.History
			if tt.id == "c0" {
				src = stored
			}
			if got := returnOf(src, tt.id); got != tt.wantStored {
				t.Errorf("stored %q, want %q", got, tt.wantStored)
			}
		})
	}
	// The processed history replaced the stored one: the result is what
	// was last sent plus the final response.
	last := calls[2].Messages
	if diff := cmp.Diff(append(last, processor.TextMessage("done")), res.History, ignoreMeta); diff != "" {
		t.Errorf("history is not the last request sent plus the response (-want +got):\n%s", diff)
	}
	if returnOf(res.History, "c0") != "[trimmed]" {
		t.Error("the trimmed old return was not kept in the result")
	}
	// The store saw every new message once, and each replacement.
	if diff := cmp.Diff(res.New, st.appended, ignoreMeta); diff != "" {
		t.Errorf("appended (-want +got):\n%s", diff)
	}
	// Requests 1 and 3 trimmed something new; request 2 did not.
	if len(st.replaced) != 2 {
		t.Fatalf("%d replacements, want 2", len(st.replaced))
	}
	if len(processed) != 2 || processed[0].Step != 1 || processed[1].Step != 3 ||
		processed[0].Messages != 5 || processed[0].TokensBefore <= processed[0].Tokens {
		t.Errorf("history-processed events %+v, want steps 1 and 3, 5 messages, fewer tokens after", processed)
	}
	if diff := cmp.Diff(last, st.replaced[1], ignoreMeta); diff != "" {
		t.Errorf("last replacement (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.History, st.working(), ignoreMeta); diff != "" {
		t.Errorf("store's working history (-want +got):\n%s", diff)
	}
}

// memStore is an in-memory Store.
type memStore struct {
	appended []processor.Message
	replaced [][]processor.Message
	work     []processor.Message
	failOn   int // fail the nth Append (1-based), 0 never
}

func (s *memStore) Append(_ context.Context, msgs ...processor.Message) error {
	s.appended = append(s.appended, msgs...)
	if s.failOn > 0 && len(s.appended) == s.failOn {
		return errors.New("disk full")
	}
	s.work = append(s.work, msgs...)
	return nil
}

func (s *memStore) Replace(_ context.Context, working []processor.Message) error {
	c := append([]processor.Message(nil), working...)
	s.replaced = append(s.replaced, c)
	s.work = append([]processor.Message(nil), c...)
	return nil
}

// working is the history the store would load: the initial history is not
// in it unless a replacement happened, as a session would have it.
func (s *memStore) working() []processor.Message { return s.work }

func TestRunUnchangedHistoryIsNotReplaced(t *testing.T) {
	st := &memStore{}
	identity := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		return append([]processor.Message(nil), h...), nil
	})
	rec := model.NewRecorder(model.Respond(callsResponse(call("c1", "echo", `{}`))), model.RespondText("ok"))
	a := agent.New(rec, agent.WithTools(echoTool), agent.WithProcessors(identity), agent.WithStore(st))
	res, err := a.Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.replaced) != 0 {
		t.Errorf("%d replacements, want none", len(st.replaced))
	}
	if diff := cmp.Diff(res.History, st.appended, ignoreMeta); diff != "" {
		t.Errorf("appended (-want +got):\n%s", diff)
	}
}

func TestRunStoreError(t *testing.T) {
	st := &memStore{failOn: 2} // the first response
	rec := model.NewRecorder(model.RespondText("ok"))
	res, err := agent.New(rec, agent.WithStore(st)).Run(context.Background(), nil, "hi")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v, want the store's", err)
	}
	if len(res.History) != 2 {
		t.Errorf("history of %d messages, want 2", len(res.History))
	}
}

func TestRunInvalidProcessorOutput(t *testing.T) {
	dropLast := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		return h[:len(h)-1], nil
	})
	rec := model.NewRecorder(model.RespondText("ok"))
	old := []processor.Message{processor.UserMessage("a"), processor.TextMessage("b")}
	_, err := agent.New(rec, agent.WithProcessors(dropLast)).Run(context.Background(), old, "c")
	if !errors.Is(err, processor.ErrNoFinalRequest) {
		t.Fatalf("error %v, want ErrNoFinalRequest", err)
	}
	if len(rec.Calls()) != 0 {
		t.Error("an invalid history was sent")
	}
}

func TestRunSystemPrompt(t *testing.T) {
	tests := []struct {
		name    string
		history []processor.Message
		want    processor.Message
	}{
		{"new conversation", nil,
			processor.NewRequest(processor.SystemPrompt{Content: "be brief"}, processor.UserPrompt{Content: "hi"})},
		{"continued", []processor.Message{processor.UserMessage("a"), processor.TextMessage("b")},
			processor.UserMessage("hi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(model.RespondText("ok"))
			res, err := agent.New(rec, agent.WithSystemPrompt("be brief")).Run(context.Background(), tt.history, "hi")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.New[0]); diff != "" {
				t.Errorf("prompt message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(append(tt.history, tt.want), rec.Calls()[0].Messages); diff != "" {
				t.Errorf("first request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunDoesNotModifyInput(t *testing.T) {
	// Spare capacity in the caller's slice must not be written into.
	history := make([]processor.Message, 2, 10)
	history[0], history[1] = processor.UserMessage("a"), processor.TextMessage("b")
	spare := history[:3]
	spare[2] = processor.TextMessage("sentinel")
	rec := model.NewRecorder(model.RespondText("ok"))
	if _, err := agent.New(rec).Run(context.Background(), history, "c"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(processor.TextMessage("sentinel"), spare[2]); diff != "" {
		t.Errorf("caller's array was written (-want +got):\n%s", diff)
	}
}

// TestRunDoesNotWriteProcessorArray: the agent appends to what a
// processor returned without writing into the array behind it, even where
// it has spare capacity (a processor may return a slice of a buffer it
// keeps).
func TestRunDoesNotWriteProcessorArray(t *testing.T) {
	buf := make([]processor.Message, 0, 64)
	spare := func() []processor.Message { return buf[len(buf):cap(buf)] }
	keep := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		buf = append(buf[:0], h...)
		if first := buf[0].Text(); !strings.HasSuffix(first, "!") {
			buf[0] = processor.UserMessage(first + "!") // a change, so the agent takes the result
		}
		for i := range spare() {
			spare()[i] = processor.TextMessage("sentinel")
		}
		return buf, nil
	})
	rec := model.NewRecorder(model.Respond(callsResponse(call("c1", "add", `{"a":1,"b":1}`))), model.RespondText("2"))
	if _, err := agent.New(rec, agent.WithTools(addTool), agent.WithProcessors(keep)).
		Run(context.Background(), []processor.Message{processor.UserMessage("hello"), processor.TextMessage("hi")}, "1+1"); err != nil {
		t.Fatal(err)
	}
	for i, m := range spare() {
		if diff := cmp.Diff(processor.TextMessage("sentinel"), m); diff != "" {
			t.Fatalf("processor's array written at %d (-want +got):\n%s", len(buf)+i, diff)
		}
	}
}

func TestRunEvents(t *testing.T) {
	type ev struct {
		Kind                  string
		Step, Messages, Calls int
		ToolName, ToolCallID  string
		Err                   bool
	}
	var got []ev
	rec := model.NewRecorder(
		model.Respond(callsResponse(call("c1", "add", `{"a":1,"b":1}`), call("c2", "nope", `{}`))),
		model.RespondText("2"),
	)
	obs, logs := observer.New(zapcore.DebugLevel)
	a := agent.New(rec, agent.WithTools(addTool), agent.WithLogger(zap.New(obs)),
		agent.WithEvents(func(_ context.Context, e agent.Event) {
			got = append(got, ev{Kind: e.Kind, Step: e.Step, Messages: e.Messages, Calls: e.ToolCalls,
				ToolName: e.ToolName, ToolCallID: e.ToolCallID, Err: e.Err != nil})
		}))
	if _, err := a.Run(context.Background(), nil, "1+1"); err != nil {
		t.Fatal(err)
	}
	want := []ev{
		{Kind: agent.EventRequest, Step: 1, Messages: 1},
		{Kind: agent.EventResponse, Step: 1, Calls: 2},
		{Kind: agent.EventTool, Step: 1, ToolName: "add", ToolCallID: "c1"},
		{Kind: agent.EventTool, Step: 1, ToolName: "nope", ToolCallID: "c2", Err: true},
		{Kind: agent.EventRequest, Step: 2, Messages: 3},
		{Kind: agent.EventResponse, Step: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
	}
	wantLogs := []string{"request", "response", "tool", "tool", "request", "response"}
	if diff := cmp.Diff(wantLogs, msgs); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
	if n := logs.FilterField(zap.String("tool", "nope")).Len(); n != 1 {
		t.Errorf("%d log lines for the unknown tool, want 1", n)
	}
}

func TestRunUnknownToolEventError(t *testing.T) {
	var errs []error
	rec := model.NewRecorder(
		model.Respond(callsResponse(call("c1", "nope", `{}`), call("c2", "echo", `{`))),
		model.RespondText("ok"),
	)
	a := agent.New(rec, agent.WithTools(echoTool), agent.WithEvents(func(_ context.Context, e agent.Event) {
		if e.Kind == agent.EventTool {
			errs = append(errs, e.Err)
		}
	}))
	if _, err := a.Run(context.Background(), nil, "x"); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 || !errors.Is(errs[0], agent.ErrUnknownTool) || !errors.Is(errs[1], agent.ErrInvalidArguments) {
		t.Errorf("tool event errors %v, want ErrUnknownTool then ErrInvalidArguments", errs)
	}
}

func TestRunOnText(t *testing.T) {
	rec := model.NewRecorder(model.RespondText("hello"))
	shared := agent.New(rec)
	var sb strings.Builder
	res, err := shared.With(agent.WithOnText(func(d string) { sb.WriteString(d) })).Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if sb.String() != "hello" || res.Text != "hello" {
		t.Errorf("streamed %q, text %q; want %q", sb.String(), res.Text, "hello")
	}
	if rec.Calls()[0].Settings.OnText == nil {
		t.Error("OnText not passed to the model")
	}
	if _, err := shared.Run(context.Background(), nil, "hi"); err != nil {
		t.Fatal(err)
	}
	if rec.Calls()[1].Settings.OnText != nil {
		t.Error("With changed the shared agent")
	}
}

func TestRunSettings(t *testing.T) {
	rec := model.NewRecorder(model.RespondText("ok"))
	s := model.Settings{Temperature: model.Float(0), MaxTokens: 100, Tools: []model.Tool{{Name: "stale"}}}
	if _, err := agent.New(rec, agent.WithSettings(s), agent.WithTools(echoTool)).Run(context.Background(), nil, "hi"); err != nil {
		t.Fatal(err)
	}
	got := rec.Calls()[0].Settings
	if got.MaxTokens != 100 || got.Temperature == nil || *got.Temperature != 0 {
		t.Errorf("settings %+v not passed", got)
	}
	if diff := cmp.Diff([]model.Tool{{Name: "echo"}}, got.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestRunConfigErrors(t *testing.T) {
	rec := model.NewRecorder(model.RespondText("ok"))
	tests := []struct {
		name  string
		model model.Model
		opts  []agent.Option
	}{
		{"no model", nil, nil},
		{"tool without name", rec, []agent.Option{agent.WithTools(agent.Tool{Func: echoTool.Func})}},
		{"tool without func", rec, []agent.Option{agent.WithTools(agent.Tool{Name: "x"})}},
		{"duplicate tool", rec, []agent.Option{agent.WithTools(echoTool, echoTool)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := agent.New(tt.model, tt.opts...).Run(context.Background(), nil, "hi")
			if !errors.Is(err, agent.ErrConfig) {
				t.Fatalf("error %v, want ErrConfig", err)
			}
			if res == nil || len(res.History) != 0 {
				t.Errorf("result %+v, want an empty one", res)
			}
		})
	}
	if len(rec.Calls()) != 0 {
		t.Error("a misconfigured agent called the model")
	}
}

func TestRunCancelDuringTools(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := 0
	stop := agent.Tool{Name: "stop", Func: func(context.Context, json.RawMessage) (string, error) {
		ran++
		cancel()
		return "stopped", nil
	}}
	rec := model.NewRecorder(model.Respond(callsResponse(call("c1", "stop", `{}`), call("c2", "stop", `{}`))))
	res, err := agent.New(rec, agent.WithTools(stop)).Run(ctx, nil, "go")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if ran != 1 {
		t.Errorf("tool ran %d times, want 1", ran)
	}
	want := processor.NewRequest(
		processor.ToolReturn{ToolName: "stop", ToolCallID: "c1", Content: "stopped"},
		processor.RetryPrompt{ToolName: "stop", ToolCallID: "c2", Content: "Tool stop was not run: context canceled."},
	)
	if diff := cmp.Diff(want, res.History[len(res.History)-1]); diff != "" {
		t.Errorf("last message (-want +got):\n%s", diff)
	}
	if err := processor.Validate(res.History); err != nil {
		t.Errorf("history is invalid: %v", err)
	}
}

func TestRunModelError(t *testing.T) {
	boom := errors.New("boom")
	rec := model.NewRecorder(model.Fail(boom))
	res, err := agent.New(rec, agent.WithCompactor(&keepLast{})).Run(context.Background(), nil, "hi")
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	if len(rec.Calls()) != 1 {
		t.Errorf("%d calls: a non-overflow error was retried", len(rec.Calls()))
	}
	if diff := cmp.Diff([]processor.Message{processor.UserMessage("hi")}, res.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

func TestRunCompactionForcedLog(t *testing.T) {
	obs, logs := observer.New(zapcore.InfoLevel)
	rec := model.NewRecorder(model.Fail(overflow), model.RespondText("ok"))
	a := agent.New(rec, agent.WithCompactor(&keepLast{}), agent.WithLogger(zap.New(obs)))
	if _, err := a.Run(context.Background(), nil, "hi"); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessage("compaction forced").Len(); n != 1 {
		t.Errorf("%d 'compaction forced' lines at info, want 1", n)
	}
}

// conversational answers like a model would: a user prompt gets a call of
// echo carrying the prompt, a tool return gets a text quoting it. Each
// conversation's answer therefore depends only on its own history.
func conversational(_ context.Context, i int, c model.Call) (processor.Message, error) {
	last := c.Messages[len(c.Messages)-1]
	switch p := last.Parts[len(last.Parts)-1].(type) {
	case processor.UserPrompt:
		args, _ := json.Marshal(map[string]string{"text": p.Content})
		return callsResponse(call(fmt.Sprintf("call_%d", i), "echo", string(args))), nil
	case processor.ToolReturn:
		return processor.TextMessage("echoed " + p.Content), nil
	}
	return processor.Message{}, fmt.Errorf("unexpected last part %T", last.Parts[0])
}

func TestRunConcurrentRecorder(t *testing.T) {
	const n = 200
	rec := model.NewRecorder(conversational)
	var mu sync.Mutex
	events := 0
	a := agent.New(rec, agent.WithTools(echoTool), agent.WithProcessors(&trimOld{}),
		agent.WithSystemPrompt("sys"),
		agent.WithEvents(func(context.Context, agent.Event) { mu.Lock(); events++; mu.Unlock() }))
	results := make([]*agent.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = a.Run(context.Background(), nil, fmt.Sprintf("prompt %d", i))
		})
	}
	wg.Wait()
	checkEchoTurns(t, results, errs)
	if got := len(rec.Calls()); got != 2*n {
		t.Errorf("%d model calls, want %d", got, 2*n)
	}
	if events != 5*n { // request, response, tool, request, response
		t.Errorf("%d events, want %d", events, 5*n)
	}
}

// A broken history given to Run is refused before any request, with an
// error that names the broken pair and points to processor.Repair.
func TestRunInvalidInputHistory(t *testing.T) {
	dangling := []processor.Message{
		processor.UserMessage("list"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
	}
	identity := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) { return h, nil })
	tests := []struct {
		name string
		opts []agent.Option
	}{
		{"no processors", nil},
		{"two processors", []agent.Option{agent.WithProcessors(identity, identity)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(model.RespondText("never"))
			_, err := agent.New(rec, tt.opts...).Run(context.Background(), dangling, "go on")
			if !errors.Is(err, processor.ErrUnansweredToolCall) || !strings.Contains(err.Error(), "processor.Repair") {
				t.Fatalf("err = %v, want ErrUnansweredToolCall with a hint to processor.Repair", err)
			}
			if n := len(rec.Calls()); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// checkEchoTurns checks the concurrent turns of the echo conversation: each
// turn i answered its own prompt, in four messages (prompt, call, return,
// answer).
func checkEchoTurns(t *testing.T, results []*agent.Result, errs []error) {
	t.Helper()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("turn %d: %v", i, errs[i])
		}
		want := fmt.Sprintf(`echoed {"text":"prompt %d"}`, i)
		if results[i].Text != want || len(results[i].History) != 4 {
			t.Errorf("turn %d: text %q, %d messages; want %q, 4", i, results[i].Text, len(results[i].History), want)
		}
	}
}
