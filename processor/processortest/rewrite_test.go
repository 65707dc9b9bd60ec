package processortest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// TestCheckRewrite checks that CheckRewrite passes a processor keeping the
// rules and names the rule each broken one breaks.
func TestCheckRewrite(t *testing.T) {
	// marker rewrites the first message to text that each call or each
	// instance makes anew.
	marker := func(text func() string) processor.Processor {
		return processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
			out := append([]processor.Message(nil), h...)
			out[0] = processor.UserMessage(text())
			return out, nil
		})
	}
	calls, instances := 0, 0
	tests := []struct {
		name    string
		new     func() processor.Processor
		wantErr string // substring of the error; "" means no error
	}{
		{"identity", func() processor.Processor { return identity }, ""},
		{"rewriter", func() processor.Processor { return rewriter(false) }, ""},
		{"mutator", func() processor.Processor { return mutator }, "input modified"},
		{"dropper", func() processor.Processor { return returnDropper }, "invalid output"},
		{"last replaced", func() processor.Processor { return lastReplacer }, "last request altered"},
		{"panic", func() processor.Processor { return panicker }, "Process panicked: boom"},
		{"prepender", func() processor.Processor {
			return processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
				return append([]processor.Message{processor.SystemMessage("s")}, h...), nil
			})
		}, "messages out"},
		{"not idempotent", func() processor.Processor {
			return marker(func() string { calls++; return fmt.Sprint("call ", calls) })
		}, "not idempotent"},
		{"differs from a fresh one", func() processor.Processor {
			instances++
			n := instances
			return marker(func() string { return fmt.Sprint("instance ", n) })
		}, "differs from a fresh processor's result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := longToolLoop()
			out, err := CheckRewrite(tt.new, h)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("error = %q, want one containing %q", got, tt.wantErr)
			}
			if err == nil && len(out) != len(h) {
				t.Errorf("returned %d messages, want %d", len(out), len(h))
			}
		})
	}
}

// TestWithContentPrefix checks that WithContent replaces the first tool
// return's content in a copy, and Prefix cuts at a request point.
func TestWithContentPrefix(t *testing.T) {
	h := []processor.Message{
		processor.UserMessage("go"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a.go"}),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c2", ToolName: "ls", Args: "{}"}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c2", ToolName: "ls", Content: "b.go"}),
	}
	before := Clone(h)
	got := WithContent(h, "fuzzed")
	want := Clone(h)
	want[2] = processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "fuzzed"})
	if err := Diff(want, got); err != nil {
		t.Errorf("WithContent: %v", err)
	}
	if err := Diff(before, h); err != nil {
		t.Errorf("WithContent modified its input: %v", err)
	}
	if got := WithContent(h, ""); len(got) != len(h) || &got[0] != &h[0] {
		t.Error("WithContent with no content did not return h")
	}
	for _, tc := range []struct{ n, want int }{{1, 1}, {2, 1}, {3, 3}, {4, 3}, {5, 5}, {9, 5}} {
		if got := len(Prefix(h, tc.n)); got != tc.want {
			t.Errorf("Prefix(h, %d) has %d messages, want %d", tc.n, got, tc.want)
		}
	}
}
