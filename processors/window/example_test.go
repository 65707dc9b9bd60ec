package window_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
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
		if s, _, ok := summary.ParseMarker(m); ok {
			fmt.Println("marker:", strings.SplitN(m.Text(), "\n", 2)[0])
			fmt.Println("  ", strings.SplitN(s, "\n", 2)[0])
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

// countingSummarizer counts its calls.
type countingSummarizer struct{ calls int }

func (c *countingSummarizer) Summarize(_ context.Context, ms []processor.Message, previous string) (string, error) {
	c.calls++
	return fmt.Sprintf("%d messages summarized.", len(ms)), nil
}

// Two windows sharing a store (two replicas of a service, or a process and
// its restart) summarize each message once: the second finds by content
// the summary the first wrote for the same history, decoded afresh.
func ExampleNewMemoryStore() {
	store := window.NewMemoryStore(0)
	sum := &countingSummarizer{}
	history := func() []processor.Message { // a new copy each time, as a proxy decodes it
		h := []processor.Message{processor.UserMessage("Fix pkg/x."), processor.TextMessage("Looking.")}
		for i := range 10 {
			id := fmt.Sprintf("call_%d", i)
			h = append(h,
				processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: `{"command":"go test ./pkg/x"}`}),
				processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: strings.Repeat("FAIL TestX\n", 30)}))
		}
		return h
	}
	a := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: store})
	b := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: store})
	outA, _ := a.Process(context.Background(), history())
	outB, _ := b.Process(context.Background(), history())
	fmt.Println(len(outA), len(outB), "messages; summarizer calls:", sum.calls)
	// Output:
	// 9 9 messages; summarizer calls: 1
}
