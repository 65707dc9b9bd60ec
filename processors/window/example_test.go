package window_test

import (
	"context"
	"errors"
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

// refusingSummarizer refuses the key it is called with, as a provider does
// for a client whose key is wrong.
type refusingSummarizer struct{ calls int }

func (r *refusingSummarizer) Summarize(context.Context, []processor.Message, string) (string, error) {
	r.calls++
	return "", errors.New("401 Unauthorized")
}

// A proxy names who pays for each request's summaries: the failures of one
// payer's key open that payer's circuit breaker only. A request nobody
// pays for is compacted with the offline digest, the summarizer not
// called.
func ExampleWithPayer() {
	sum := &refusingSummarizer{}
	w := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: window.NewMemoryStore(0)})
	history := func(who string) []processor.Message {
		h := []processor.Message{processor.UserMessage("Fix pkg/x for " + who + "."), processor.TextMessage("Looking.")}
		for i := range 10 {
			id := fmt.Sprintf("call_%d", i)
			h = append(h,
				processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: fmt.Sprintf(`{"command":"go test ./pkg/x -run %d"}`, i)}),
				processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: strings.Repeat("FAIL TestX\n", 30)}))
		}
		return h
	}
	for i := range 5 {
		ctx := window.WithPayer(context.Background(), "refused-key-hash")
		_, _ = w.Process(ctx, history(fmt.Sprint("mallory ", i)))
	}
	fmt.Println("calls for the refused payer:", sum.calls)
	_, _ = w.Process(window.WithPayer(context.Background(), "tenant-a-hash"), history("alice"))
	fmt.Println("calls after tenant A's request:", sum.calls)
	_, _ = w.Process(window.WithoutSummarizer(context.Background()), history("a stranger"))
	fmt.Println("calls after an unpaid request:", sum.calls)
	// Output:
	// calls for the refused payer: 3
	// calls after tenant A's request: 4
	// calls after an unpaid request: 4
}
