package summarizer_test

import (
	"context"
	"fmt"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

func history() []processor.Message {
	return []processor.Message{
		processor.UserMessage("Add a --verbose flag to cmd/tool/main.go."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "Edit", Args: `{"file_path":"cmd/tool/main.go","old_string":"a","new_string":"b"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "Edit", Content: "ok"}),
		processor.TextMessage("Added the flag."),
	}
}

// The offline digest needs no model.
func ExampleDigest() {
	d := summarizer.NewDigest(summarizer.DigestOptions{})
	s, _ := d.Summarize(context.Background(), history(), "", "")
	fmt.Println(s)
	// Output:
	// Digest of earlier messages (written offline, without a model).
	// Messages covered: 4.
	// Files written: cmd/tool/main.go
	// User requests:
	// - Add a --verbose flag to cmd/tool/main.go.
	// Tool calls:
	// 1 call: Edit x1
	// - Edit: cmd/tool/main.go
	// Last assistant text:
	// Added the flag.
}

// Any function is a Summarizer (the window, compact and config take one);
// here one that only counts.
func ExampleFunc() {
	var s summarizer.Summarizer = summarizer.Func(func(_ context.Context, ms []processor.Message, previous, focus string) (string, error) {
		return fmt.Sprintf("%d messages; focus %q", len(ms), focus), nil
	})
	out, _ := s.Summarize(context.Background(), history(), "", "the flag")
	fmt.Println(out)
	// Output:
	// 4 messages; focus "the flag"
}
