package processor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

func interrupted(ids ...string) processor.Message {
	parts := make([]processor.Part, len(ids))
	for i, id := range ids {
		parts[i] = processor.ToolReturn{ToolCallID: id, ToolName: "tool-" + id, Content: processor.InterruptedContent}
	}
	return processor.NewRequest(parts...)
}

func TestRepairHistory(t *testing.T) {
	next := processor.UserMessage("next")
	tests := []struct {
		name      string
		in        []processor.Message
		want      []processor.Message // nil: want the input itself
		wantFixes []processor.Fix
	}{
		{
			name: "valid history unchanged",
			in:   []processor.Message{user, call("a", "b"), rets("b"), processor.NewRequest(processor.RetryPrompt{ToolCallID: "a", Content: "bad"}), text, next},
		},
		{
			name:      "orphan return dropped, rest of the request kept",
			in:        []processor.Message{user, text, processor.NewRequest(ret("x"), processor.UserPrompt{Content: "go on"})},
			want:      []processor.Message{user, text, processor.NewRequest(processor.UserPrompt{Content: "go on"})},
			wantFixes: []processor.Fix{{Index: 2, ToolCallID: "x", ToolName: "tool-x", Action: processor.ActionDroppedOrphan}},
		},
		{
			name: "request of orphans only dropped",
			in:   []processor.Message{user, call("a"), rets("a"), rets("a", "z"), text, next},
			want: []processor.Message{user, call("a"), rets("a"), text, next},
			wantFixes: []processor.Fix{
				{Index: 3, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionDroppedOrphan},
				{Index: 3, ToolCallID: "z", ToolName: "tool-z", Action: processor.ActionDroppedOrphan},
				{Index: 3, Action: processor.ActionDroppedRequest},
			},
		},
		{
			name:      "orphan retry prompt dropped",
			in:        []processor.Message{user, text, processor.NewRequest(processor.RetryPrompt{ToolCallID: "q", ToolName: "t", Content: "err"}, processor.UserPrompt{Content: "x"})},
			want:      []processor.Message{user, text, processor.NewRequest(processor.UserPrompt{Content: "x"})},
			wantFixes: []processor.Fix{{Index: 2, ToolCallID: "q", ToolName: "t", Action: processor.ActionDroppedOrphan}},
		},
		{
			name:      "dangling call answered before the next user prompt",
			in:        []processor.Message{user, call("a"), next},
			want:      []processor.Message{user, call("a"), interrupted("a"), next},
			wantFixes: []processor.Fix{{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall}},
		},
		{
			name:      "remaining calls answered after the returns already there",
			in:        []processor.Message{user, call("a", "b", "c"), rets("b"), next},
			want:      []processor.Message{user, call("a", "b", "c"), rets("b"), interrupted("a", "c"), next},
			wantFixes: []processor.Fix{{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall}, {Index: 1, ToolCallID: "c", ToolName: "tool-c", Action: processor.ActionAnsweredCall}},
		},
		{
			name:      "dangling call answered before the next response",
			in:        []processor.Message{user, call("a"), call("b"), rets("b")},
			want:      []processor.Message{user, call("a"), interrupted("a"), call("b"), rets("b")},
			wantFixes: []processor.Fix{{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall}},
		},
		{
			name:      "history cut after a tool call",
			in:        []processor.Message{user, call("a")},
			want:      []processor.Message{user, call("a"), interrupted("a")},
			wantFixes: []processor.Fix{{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall}},
		},
		{
			name: "return after user content: call answered, late return dropped",
			in:   []processor.Message{user, call("a"), processor.NewRequest(processor.UserPrompt{Content: "wait"}, ret("a"))},
			want: []processor.Message{user, call("a"), interrupted("a"), processor.NewRequest(processor.UserPrompt{Content: "wait"})},
			wantFixes: []processor.Fix{
				{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall},
				{Index: 2, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionDroppedOrphan},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := processortest.Clone(tt.in)
			got, fixes := processor.RepairHistory(tt.in)
			want := tt.want
			if want == nil {
				want = tt.in
				if len(got) != len(tt.in) || &got[0] != &tt.in[0] {
					t.Error("nothing to repair, but the input was not returned as is")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFixes, fixes); diff != "" {
				t.Errorf("fixes (-want +got):\n%s", diff)
			}
			if err := processortest.Diff(before, tt.in); err != nil {
				t.Errorf("input modified: %v", err)
			}
			if err := processor.Validate(got); err != nil {
				t.Errorf("repaired history is invalid: %v", err)
			}
			// Messages the repair did not change are shared, not copied.
			for _, m := range got {
				for i := range tt.in {
					if len(m.Parts) > 0 && len(tt.in[i].Parts) > 0 && processor.Equal(m, tt.in[i]) && &m.Parts[0] != &tt.in[i].Parts[0] && !sharesAny(got, tt.in[i]) {
						t.Errorf("message %d was copied", i)
					}
				}
			}
		})
	}
}

// sharesAny reports whether some message of h shares m's parts.
func sharesAny(h []processor.Message, m processor.Message) bool {
	for _, o := range h {
		if len(o.Parts) > 0 && &o.Parts[0] == &m.Parts[0] {
			return true
		}
	}
	return false
}

func TestRepairHistoryLeavesWhatItCannotFix(t *testing.T) {
	tests := []struct {
		name string
		in   []processor.Message
		want error
	}{
		{"ends with a response", []processor.Message{user, text}, processor.ErrNoFinalRequest},
		{"malformed part", []processor.Message{processor.NewRequest(processor.Text{Content: "x"})}, processor.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, fixes := processor.RepairHistory(tt.in)
			if len(fixes) != 0 {
				t.Errorf("fixes = %v, want none", fixes)
			}
			if err := processor.Validate(got); !errors.Is(err, tt.want) {
				t.Errorf("Validate(repaired) = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFixString(t *testing.T) {
	tests := []struct {
		fix  processor.Fix
		want string
	}{
		{processor.Fix{Index: 3, ToolCallID: "c1", ToolName: "bash", Action: processor.ActionAnsweredCall}, `message 3: answered-dangling-call "c1" (bash)`},
		{processor.Fix{Index: 2, ToolCallID: "c1", Action: processor.ActionDroppedOrphan}, `message 2: dropped-orphan-return "c1"`},
		{processor.Fix{Index: 1, Action: processor.ActionDroppedRequest}, `message 1: dropped-empty-request`},
	}
	for _, tt := range tests {
		if got := tt.fix.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestRepairProcessor(t *testing.T) {
	var reported [][]processor.Fix
	r := &processor.Repair{OnFix: func(_ context.Context, f []processor.Fix) { reported = append(reported, f) }}
	broken := []processor.Message{user, call("a"), processor.UserMessage("next")}
	out, err := processor.Chain(r, processor.Chain()).Process(context.Background(), broken)
	if err != nil {
		t.Fatalf("a chain starting with Repair failed on a repairable history: %v", err)
	}
	if diff := cmp.Diff([]processor.Message{user, call("a"), interrupted("a"), processor.UserMessage("next")}, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if _, err := r.Process(context.Background(), []processor.Message{user}); err != nil {
		t.Fatal(err)
	}
	want := [][]processor.Fix{{{Index: 1, ToolCallID: "a", ToolName: "tool-a", Action: processor.ActionAnsweredCall}}}
	if diff := cmp.Diff(want, reported); diff != "" {
		t.Errorf("OnFix calls (-want +got):\n%s", diff)
	}
	if _, err := r.Process(context.Background(), nil); !errors.Is(err, processor.ErrEmptyHistory) {
		t.Errorf("empty history: error = %v, want ErrEmptyHistory", err)
	}
	if _, err := (&processor.Repair{}).Process(context.Background(), broken); err != nil {
		t.Errorf("Repair without OnFix: %v", err)
	}
}

func TestRepairConformance(t *testing.T) {
	processortest.Run(t, func(*testing.T) processor.Processor { return &processor.Repair{} })
}

func TestRepairInChain(t *testing.T) {
	call := processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"})
	tests := []struct {
		name    string
		history []processor.Message
		want    []processor.Message
		wantErr error
		wantPos int
	}{
		{
			name: "orphan in the last request is dropped and the rest of the chain keeps the repaired request",
			history: []processor.Message{
				processor.UserMessage("hi"),
				processor.TextMessage("hello"),
				processor.NewRequest(processor.ToolReturn{ToolCallID: "gone", Content: "x"}, processor.UserPrompt{Content: "go on"}),
			},
			want: []processor.Message{
				processor.UserMessage("hi"),
				processor.TextMessage("hello"),
				processor.NewRequest(processor.UserPrompt{Content: "go on"}),
			},
		},
		{
			name: "dangling call answered before the last request",
			history: []processor.Message{
				processor.UserMessage("hi"),
				call,
				processor.UserMessage("go on"),
			},
			want: []processor.Message{
				processor.UserMessage("hi"),
				call,
				processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: processor.InterruptedContent}),
				processor.UserMessage("go on"),
			},
		},
		{
			name: "a last request of orphans only leaves nothing to send",
			history: []processor.Message{
				processor.UserMessage("hi"),
				processor.TextMessage("hello"),
				processor.NewRequest(processor.ToolReturn{ToolCallID: "gone", Content: "x"}),
			},
			wantErr: processor.ErrOrphanToolReturn,
			wantPos: -1,
		},
	}
	identity := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) { return h, nil })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := processor.Chain(&processor.Repair{}, identity).Process(context.Background(), tt.history)
			if tt.wantErr != nil {
				var ce *processor.ChainError
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &ce) || ce.Position != tt.wantPos {
					t.Fatalf("err = %v, want %v at position %d", err, tt.wantErr, tt.wantPos)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := processortest.Diff(tt.want, got); diff != nil {
				t.Error(diff)
			}
		})
	}
}

func TestRepairNothingLeftToSend(t *testing.T) {
	h := []processor.Message{
		processor.UserMessage("hi"),
		processor.TextMessage("hello"),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "gone", Content: "x"}),
	}
	_, err := (&processor.Repair{}).Process(context.Background(), h)
	if !errors.Is(err, processor.ErrNoFinalRequest) {
		t.Fatalf("err = %v, want ErrNoFinalRequest", err)
	}
}
