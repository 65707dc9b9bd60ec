package cleartools_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/cleartools"
	"github.com/abridge-go/abridge/summary"
)

func TestConformance(t *testing.T) {
	for _, opts := range []cleartools.Options{{}, {KeepRounds: 1, MinSaving: -1}, {KeepRounds: 2, MinSaving: 500, Keep: []string{"bash"}}, {TriggerTokens: 200, KeepRounds: 1}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			processortest.Run(t, func(*testing.T) processor.Processor { return cleartools.New(opts) })
		})
	}
}

// loop returns a user prompt and n tool rounds whose outputs are size
// characters each, then the next request (the last round's return).
func loop(n, size int, tool string) []processor.Message {
	h := []processor.Message{processor.UserMessage("Fix the build.")}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: tool, Args: `{}`}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: strings.Repeat("x", size)}))
	}
	return h
}

// cleared returns, per tool return of h, whether it holds a placeholder.
func cleared(h []processor.Message) string {
	var b strings.Builder
	for _, m := range h {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				if _, ok := summary.ParsePlaceholder(r); ok {
					b.WriteByte('c')
				} else {
					b.WriteByte('.')
				}
			}
		}
	}
	return b.String()
}

// TestTiming checks when outputs are cleared: never those of the last
// KeepRounds rounds, nor in the last request; only once the clearable
// outputs save MinSaving or more (a clear that saves less does not
// happen), all of them together; and, request by request, the rounds
// cleared stay cleared and nothing else changes until the next batch.
func TestTiming(t *testing.T) {
	tests := []struct {
		name string
		opts cleartools.Options
		h    []processor.Message
		want string
	}{
		{"under the floor: nothing", cleartools.Options{KeepRounds: 2, MinSaving: 5000}, loop(5, 1000, "bash"), "....."},
		{"at the floor: the clearable ones", cleartools.Options{KeepRounds: 2, MinSaving: 2500}, loop(5, 1000, "bash"), "ccc.."},
		{"no floor: all but the last rounds", cleartools.Options{KeepRounds: 1, MinSaving: -1}, loop(5, 1000, "bash"), "cccc."},
		{"kept tools are never cleared", cleartools.Options{KeepRounds: 1, MinSaving: -1, Keep: []string{"read"}}, loop(5, 1000, "read"), "....."},
		{"outputs shorter than a placeholder are left", cleartools.Options{KeepRounds: 1, MinSaving: -1}, loop(5, 20, "bash"), "....."},
		// Four rounds pass 1000 tokens: the three before the last are cleared.
		{"the trigger", cleartools.Options{KeepRounds: 1, TriggerTokens: 1000}, loop(5, 1000, "bash"), "ccc.."},
		{"under the trigger", cleartools.Options{KeepRounds: 1, TriggerTokens: 10000}, loop(5, 1000, "bash"), "....."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cleartools.New(tc.opts).Process(context.Background(), tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cleared(out)); diff != "" {
				t.Errorf("cleared outputs (-want +got):\n%s", diff)
			}
		})
	}

	// Request by request: a batch every time the clearable outputs reach
	// the floor; in between, the rounds cleared and the others unchanged.
	c := cleartools.New(cleartools.Options{KeepRounds: 2, MinSaving: 2500})
	h := loop(12, 1000, "bash")
	var got []string
	for _, k := range processortest.RequestPoints(h) {
		out, err := c.Process(context.Background(), h[:k])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, cleared(out))
	}
	want := []string{"", ".", "..", "...", "....", "ccc..", "ccc...", "ccc....", "cccccc..", "cccccc...", "cccccc....", "ccccccccc..", "ccccccccc..."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cleared outputs request by request (-want +got):\n%s", diff)
	}
}

// TestPlaceholder checks what stands for a cleared output: the tool, the
// call, the size, and the recall tool when the agent offers it.
func TestPlaceholder(t *testing.T) {
	h := loop(3, 1000, "bash")
	for _, recall := range []bool{false, true} {
		out, err := cleartools.New(cleartools.Options{KeepRounds: 1, MinSaving: -1, Recall: recall}).Process(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		r := out[2].Parts[0].(processor.ToolReturn)
		want := summary.Placeholder("bash", "c0", 1000, recall)
		if r.Content != want || r.ToolCallID != "c0" || r.ToolName != "bash" {
			t.Errorf("cleared return %+v, want the placeholder %q", r, want)
		}
		for _, s := range []string{"bash", "c0", "1000 characters"} {
			if !strings.Contains(r.Content, s) {
				t.Errorf("placeholder %q does not name %q", r.Content, s)
			}
		}
		if strings.Contains(r.Content, "recall") != recall {
			t.Errorf("placeholder %q: mentions recall = %v, want %v", r.Content, !recall, recall)
		}
	}
}
