package trimtools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// history returns a history whose two old tool returns carry the given
// contents, followed by a fresh turn.
func memoHistory(a, b string) []processor.Message {
	return []processor.Message{
		processor.UserMessage("start"),
		call("c1"),
		processor.NewRequest(ret("c1", a)),
		call("c2"),
		processor.NewRequest(ret("c2", b)),
		processor.TextMessage("done"),
		processor.UserMessage("next"),
	}
}

func TestMemo(t *testing.T) {
	big := strings.Repeat("line of output\n", 400)
	other := strings.Repeat("another output\n", 400)
	tests := []struct {
		name string
		opts trimtools.Options
	}{
		{"default memo", trimtools.Options{}},
		{"memo disabled", trimtools.Options{MemoBytes: -1}},
		{"memo smaller than one content", trimtools.Options{MemoBytes: 100}},
		{"memo holding one content at a time", trimtools.Options{MemoBytes: len(big) + 10}},
	}
	reference := trimtools.New(trimtools.Options{MemoBytes: -1})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trimtools.New(tt.opts)
			ctx := context.Background()
			// The same strings three times (memo hits), then equal but
			// distinct strings, then the same content under another call
			// ID: each result must equal a trim without memo.
			inputs := [][]processor.Message{
				memoHistory(big, other),
				memoHistory(big, other),
				memoHistory(big, other),
				memoHistory(strings.Clone(big), strings.Clone(other)),
				memoHistory(other, big),
			}
			for i, h := range inputs {
				want, err := reference.Process(ctx, h)
				if err != nil {
					t.Fatal(err)
				}
				got, err := tr.Process(ctx, h)
				if err != nil {
					t.Fatal(err)
				}
				if err := processortest.Diff(want, got); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if got[2].Parts[0].(processor.ToolReturn).ToolCallID != "c1" || got[4].Parts[0].(processor.ToolReturn).ToolCallID != "c2" {
					t.Fatalf("request %d: call IDs mixed up: %+v", i, got)
				}
			}
		})
	}
}

// A memo hit must not hand out a result trimmed under another call ID or
// tool name, even when the content string is the very same.
func TestMemoKeyedByCall(t *testing.T) {
	big := strings.Repeat("x", 5000)
	tr := trimtools.New(trimtools.Options{})
	h := []processor.Message{
		processor.UserMessage("start"),
		processor.NewResponse(
			processor.ToolCall{ToolCallID: "a", ToolName: "read", Args: "{}"},
			processor.ToolCall{ToolCallID: "b", ToolName: "grep", Args: "{}"},
		),
		processor.NewRequest(
			processor.ToolReturn{ToolCallID: "a", ToolName: "read", Content: big},
			processor.ToolReturn{ToolCallID: "b", ToolName: "grep", Content: big},
		),
		processor.TextMessage("done"),
		processor.UserMessage("next"),
	}
	got, err := tr.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []struct{ id, name string }{{"a", "read"}, {"b", "grep"}} {
		r := got[2].Parts[j].(processor.ToolReturn)
		if r.ToolCallID != want.id || r.ToolName != want.name || len(r.Content) > trimtools.DefaultMaxChars {
			t.Errorf("part %d = %q/%q (%d bytes), want %q/%q trimmed", j, r.ToolCallID, r.ToolName, len(r.Content), want.id, want.name)
		}
	}
}
