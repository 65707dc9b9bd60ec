package cleartools_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/cleartools"
)

// Four rounds of a tool loop: the outputs of the rounds that have
// KeepRounds newer rounds after them are replaced by placeholders, once
// clearing them saves MinSaving characters; the newest rounds keep theirs.
func Example() {
	h := []processor.Message{processor.UserMessage("Why does the build fail?")}
	for i := range 4 {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: `{"command":"go build ./..."}`}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: strings.Repeat("pkg/x/x.go:12: undefined: Foo\n", 100)}))
	}
	h = append(h, processor.TextMessage("Foo was renamed."), processor.UserMessage("Fix it."))

	c := cleartools.New(cleartools.Options{KeepRounds: 2, MinSaving: 1000})
	out, err := c.Process(context.Background(), h)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				first, _, _ := strings.Cut(r.Content, "\n")
				fmt.Printf("%s, %d characters: %s\n", r.ToolCallID, len(r.Content), first)
			}
		}
	}
	// Output:
	// call_0, 88 characters: [abridge: the output of bash (call call_0) was cleared to save context: 3000 characters]
	// call_1, 88 characters: [abridge: the output of bash (call call_1) was cleared to save context: 3000 characters]
	// call_2, 3000 characters: pkg/x/x.go:12: undefined: Foo
	// call_3, 3000 characters: pkg/x/x.go:12: undefined: Foo
}
