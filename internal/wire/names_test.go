package wire

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestNamer checks that the namer names every tool return as a map of the
// calls before it, the last of each ID, does: calls near and far (past
// its look-back), an ID called twice, a return without its call.
func TestNamer(t *testing.T) {
	call := func(id, name string) processor.Message {
		return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: name, Args: "{}"})
	}
	var far []processor.Message
	far = append(far, call("a", "first"), call("b", "bash"))
	for i := range 3 * namerLook {
		far = append(far, processor.UserMessage(fmt.Sprint(i)))
	}
	far = append(far, call("a", "second"))
	for i := range 2 * namerLook {
		far = append(far, processor.UserMessage(fmt.Sprint(i)))
	}
	tests := []struct {
		name string
		msgs []processor.Message
		ids  []string
	}{
		{"near", []processor.Message{call("a", "ls"), call("b", "cat")}, []string{"a", "b", "c"}},
		{"far", far, []string{"a", "b", "c"}},
		{"empty", nil, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nm namer
			var got, want []string
			for i := range len(tt.msgs) + 1 {
				names := map[string]string{}
				for _, m := range tt.msgs[:i] {
					for _, c := range m.ToolCalls() {
						names[c.ToolCallID] = c.ToolName
					}
				}
				for _, id := range tt.ids {
					got = append(got, nm.name(tt.msgs[:i], id))
					want = append(want, names[id])
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("names by position (-map +namer):\n%s", diff)
			}
		})
	}
}
