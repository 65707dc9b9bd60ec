package trimtools

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestMemoAdopts sends a Trimmer the same old tool return nine times, each
// time as a new copy of its content (as a cache that decoded it anew gives
// it), and checks which copy the memo holds after each: the one of its
// 1st, 2nd, 4th and 8th match, so that later comparisons find the bytes
// shared. The content is JSON, bytes whose copy is told by the address of
// the first.
func TestMemoAdopts(t *testing.T) {
	long := []byte(`{"out":"` + strings.Repeat("line of output ", 400) + `"}`)
	copies := make([][]byte, 10)
	for i := range copies {
		copies[i] = slices.Clone(long)
	}
	history := func(content []byte) []processor.Message {
		return []processor.Message{
			processor.UserMessage("go"),
			processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: "{}"}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", JSON: content}),
			processor.TextMessage("done"),
			processor.UserMessage("next"),
		}
	}
	tr := New(Options{})
	held := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		p := &tr.memo["c1"].in.JSON[0]
		for i, c := range copies {
			if &c[0] == p {
				return i
			}
		}
		return -1
	}
	var got, want []int
	for i, c := range copies {
		out, err := tr.Process(context.Background(), history(c))
		if err != nil {
			t.Fatal(err)
		}
		if r := out[2].Parts[0].(processor.ToolReturn); r.JSON != nil || len(r.Content) > DefaultMaxChars {
			t.Fatalf("request %d: the old return was not trimmed", i)
		}
		got = append(got, held())
	}
	// The first request trims and remembers copy 0; request i is match i.
	want = []int{0, 1, 2, 2, 4, 4, 4, 4, 8, 8}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy held after each request (-want +got):\n%s", diff)
	}
}
