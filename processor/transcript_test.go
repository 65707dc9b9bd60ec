package processor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// shape writes a history one letter a message: S a system prompt, U a user
// prompt, R tool returns, A a text answer, C tool calls.
func shape(h []processor.Message) string {
	var b strings.Builder
	for _, m := range h {
		switch {
		case m.Kind == processor.Response && m.HasToolCalls():
			b.WriteByte('C')
		case m.Kind == processor.Response:
			b.WriteByte('A')
		default:
			switch m.Parts[0].(type) {
			case processor.SystemPrompt:
				b.WriteByte('S')
			case processor.ToolReturn:
				b.WriteByte('R')
			default:
				b.WriteByte('U')
			}
		}
	}
	return b.String()
}

// ofShape builds a valid history of the shape shape writes.
func ofShape(s string) []processor.Message {
	var h []processor.Message
	calls := 0
	for _, c := range s {
		switch c {
		case 'S':
			h = append(h, processor.SystemMessage("sys"))
		case 'U':
			h = append(h, processor.UserMessage("hi"))
		case 'A':
			h = append(h, processor.TextMessage("hello"))
		case 'C':
			calls++
			h = append(h, call(strings.Repeat("c", calls)))
		case 'R':
			h = append(h, processor.NewRequest(processor.ToolReturn{ToolCallID: strings.Repeat("c", calls), ToolName: "tool", Content: "out"}))
		}
	}
	return h
}

func TestSplitAtLastRequest(t *testing.T) {
	for _, tc := range []struct{ history, head, rest string }{
		{"SUA", "SU", "A"},
		{"SUCRA", "SUCR", "A"},
		{"SUCRC", "SUCR", "C"},
		{"SUAU", "SUAU", ""},
		{"SUCR", "SUCR", ""},
		{"A", "", "A"},
		{"", "", ""},
	} {
		t.Run(tc.history, func(t *testing.T) {
			h := ofShape(tc.history)
			head, rest := processor.SplitAtLastRequest(h)
			if got := shape(head) + "|" + shape(rest); got != tc.head+"|"+tc.rest {
				t.Errorf("split = %q, want %q", got, tc.head+"|"+tc.rest)
			}
			if tc.head == "" && head != nil {
				t.Errorf("head = %v, want nil", head)
			}
			if cap(head) != len(head) {
				t.Errorf("head has room for %d messages past its length: appending to it would write over rest", cap(head)-len(head))
			}
		})
	}
}

func TestProcessTranscript(t *testing.T) {
	// dropFirstTurn stands for a processor that shortens what it is given:
	// it drops the first exchange (U, A) after the system prompt.
	dropFirstTurn := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) < 4 {
			return h, nil
		}
		return append([]processor.Message{h[0]}, h[3:]...), nil
	})
	for _, tc := range []struct {
		history, want string
		err           error
	}{
		{history: "SUAUA", want: "SUA"},
		{history: "SUAUCRA", want: "SUCRA"},
		{history: "SUAUCRC", want: "SUCRC"},
		{history: "SUAU", want: "SU"},
		{history: "SUAUU", want: "SUU"},
		{history: "A", err: processor.ErrNoFinalRequest},
		{history: "", err: processor.ErrEmptyHistory},
	} {
		t.Run(tc.history, func(t *testing.T) {
			h := ofShape(tc.history)
			before := processor.Clone(h)
			out, err := processor.ProcessTranscript(context.Background(), processor.Chain(dropFirstTurn), h)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if got := shape(out); got != tc.want {
				t.Errorf("result = %q, want %q", got, tc.want)
			}
			if diff := cmp.Diff(before, h); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
		})
	}
}

// The result is the caller's even when the processor changed nothing: the
// answer after the last request is in new memory, so appending to the
// result leaves the input as it was.
func TestProcessTranscriptResultIsTheCallers(t *testing.T) {
	h := ofShape("SUAUA")
	out, err := processor.ProcessTranscript(context.Background(), processor.Chain(), h)
	if err != nil {
		t.Fatal(err)
	}
	out[len(out)-1] = processor.TextMessage("changed")
	if got := h[len(h)-1].Parts[0].(processor.Text).Content; got != "hello" {
		t.Errorf("after a change to the result, the input's last message says %q, want hello", got)
	}
}

func TestProcessTranscriptError(t *testing.T) {
	boom := errors.New("boom")
	fail := processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) { return nil, boom })
	if _, err := processor.ProcessTranscript(context.Background(), fail, ofShape("SUA")); !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
}
