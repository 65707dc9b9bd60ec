package summary_test

import (
	"fmt"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summary"
)

// Paths lists the files a history wrote and the others it mentioned.
func ExamplePaths() {
	written, mentioned := summary.Paths([]processor.Message{
		processor.UserMessage("Read docs/design.md first."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"sed -i s/x/y/ src/a.go && cat src/b.go"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: "ok"}),
	})
	fmt.Println(written, mentioned)
	// Output:
	// [src/a.go] [docs/design.md src/b.go]
}

// A marker carries a summary in a history; ParseMarker reads it back.
func ExampleParseMarker() {
	m := summary.Marker("Goal: a --verbose flag. Status: added.")
	s, ref, ok := summary.ParseMarker(m)
	fmt.Println(ok, ref == summary.Ref(s))
	fmt.Println(s)
	_, _, ok = summary.ParseMarker(processor.UserMessage(summary.Prefix + "\nNot a marker: only its first line."))
	fmt.Println(ok)
	// Output:
	// true true
	// Goal: a --verbose flag. Status: added.
	// false
}

// The facts a summary carries beside its prose: what a person handing
// the work over copies exactly.
func ExampleFacts() {
	f := summary.NewFacts(summary.FactsOptions{})
	fmt.Println(f.Section(processortest.OneEdit(), "", 0))
	// Output:
	// Facts kept verbatim from the condensed messages (newest last):
	// User said:
	// - Add a --verbose flag to cmd/tool/main.go.
	// Files edited: cmd/tool/main.go
	// Commands and tool calls:
	// - Edit: cmd/tool/main.go; b; a
}
