package window_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// A window with the default offline digest compacts a long tool loop into
// head, marker and tail.
func Example() {
	h := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Rename Foo to Bar in pkg/x."),
		processor.TextMessage("On it."),
	}
	for i := range 6 {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: fmt.Sprintf(`{"command":"sed -i s/Foo/Bar/ pkg/x/f%d.go"}`, i)}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: fmt.Sprintf("pkg/x/f%d.go:\n%s", i, strings.Repeat("-\tFoo()\n+\tBar()\n", 20))}))
	}
	w := window.New(window.Options{MaxMessages: 8})
	out, err := w.Process(context.Background(), h)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		if summary, ok := window.ParseMarker(m); ok {
			fmt.Println("marker:", strings.SplitN(m.Text(), "\n", 2)[0])
			fmt.Println("  ", strings.SplitN(summary, "\n", 2)[0])
			continue
		}
		fmt.Println(m.Kind, m.Parts[0].PartKind())
	}
	// Output:
	// request system-prompt
	// request user-prompt
	// response text
	// marker: [abridge: summary of the earlier conversation]
	//    Digest of earlier messages (written offline, without a model).
	// response tool-call
	// request tool-return
	// response tool-call
	// request tool-return
}

// ParseMarker recognises a marker and returns its summary.
func ExampleParseMarker() {
	m := window.Marker("Goal: rename Foo to Bar.")
	summary, ok := window.ParseMarker(m)
	fmt.Println(ok, summary)
	_, ok = window.ParseMarker(processor.UserMessage("hello"))
	fmt.Println(ok)
	// Output:
	// true Goal: rename Foo to Bar.
	// false
}
