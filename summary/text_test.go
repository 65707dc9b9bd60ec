package summary

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

func call(id, tool, args string) processor.Message {
	return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: tool, Args: args})
}

func ret(id, tool, content string) processor.Message {
	return processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: content})
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
	}{
		{"short", "hello", 10},
		{"long ascii", strings.Repeat("abcdefghij", 100), 200},
		{"long unicode", strings.Repeat("héllo wörld ", 300), 500},
		{"tiny bound", strings.Repeat("é", 100), 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Clip(tc.in, tc.n)
			if len(got) > max(tc.n, len(tc.in)) || (len(tc.in) > tc.n && len(got) > tc.n) {
				t.Errorf("clip to %d gave %d bytes", tc.n, len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("clip split a rune: %q", got)
			}
			if len(tc.in) > tc.n && tc.n > 64 {
				if !strings.Contains(got, "characters cut") || !strings.HasPrefix(tc.in, got[:10]) || !strings.HasSuffix(tc.in, got[len(got)-10:]) {
					t.Errorf("clip should keep head and tail around a note: %q", got)
				}
			}
		})
	}
}
