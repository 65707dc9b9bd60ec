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

func (c *countingSummarizer) Summarize(_ context.Context, ms []processor.Message, previous, focus string) (string, error) {
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
	// Each summary written when due (Ahead: -1), so the count printed
	// is not racing a summary written ahead in the background.
	a := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: store, Ahead: -1})
	b := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: store, Ahead: -1})
	outA, _ := a.Process(context.Background(), history())
	outB, _ := b.Process(context.Background(), history())
	fmt.Println(len(outA), len(outB), "messages; summarizer calls:", sum.calls)
	// Output:
	// 9 9 messages; summarizer calls: 1
}

// refusingSummarizer refuses the key it is called with, as a provider does
// for a client whose key is wrong.
type refusingSummarizer struct{ calls int }

func (r *refusingSummarizer) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	r.calls++
	return "", errors.New("401 Unauthorized")
}

// A proxy names who pays for each request's summaries: the failures of one
// payer's key open that payer's circuit breaker only. A request nobody
// pays for is compacted with the offline digest, the summarizer not
// called.
func ExampleWithRequest() {
	sum := &refusingSummarizer{}
	w := window.New(window.Options{MaxMessages: 10, Summarizer: sum, Store: window.NewMemoryStore(0), Ahead: -1})
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
		ctx := window.WithRequest(context.Background(), window.Request{Payer: "refused-key-hash"})
		_, _ = w.Process(ctx, history(fmt.Sprint("mallory ", i)))
	}
	fmt.Println("calls for the refused payer:", sum.calls)
	_, _ = w.Process(window.WithRequest(context.Background(), window.Request{Payer: "tenant-a-hash"}), history("alice"))
	fmt.Println("calls after tenant A's request:", sum.calls)
	_, _ = w.Process(window.WithRequest(context.Background(), window.Request{Unpaid: true}), history("a stranger"))
	fmt.Println("calls after an unpaid request:", sum.calls)
	// Output:
	// calls for the refused payer: 3
	// calls after tenant A's request: 4
	// calls after an unpaid request: 4
}

// turns is a window.Runner that writes the summaries started ahead when
// the agent's turn is over: here, when the example says so.
type turns struct{ jobs []func(context.Context) }

func (r *turns) Go(_ string, job func(context.Context)) bool {
	r.jobs = append(r.jobs, job)
	return true
}

func (r *turns) turnOver() {
	for _, job := range r.jobs {
		job(context.Background())
	}
	r.jobs = nil
}

// The window writes the summary a compaction will need a few requests
// before its trigger fires (Options.Ahead), in the background: when the
// trigger fires, the summary is ready and the request waits for nothing.
// Here a runner of the example's own writes each summary at the end of
// the agent's turn; by default a Pool of goroutines does, as soon as it
// can.
func ExampleOptions_ahead() {
	sum := &countingSummarizer{}
	runner := &turns{}
	w := window.New(window.Options{MaxMessages: 20, Summarizer: sum, Background: runner,
		OnEvent: func(_ context.Context, e window.Event) {
			switch e.Type {
			case window.EventAheadStarted:
				fmt.Printf("  summary of messages %d to %d started ahead\n", e.From+1, e.To)
			case window.EventFinished:
				fmt.Printf("  compacted %d → %d messages; written ahead %v, waited %v\n", e.MessagesBefore, e.MessagesAfter, e.Prepared, e.Waited)
			}
		}})
	h := []processor.Message{processor.UserMessage("Fix pkg/x."), processor.TextMessage("Looking.")}
	for i := range 11 {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: `{"command":"go test ./pkg/x"}`}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: strings.Repeat("FAIL TestX\n", 30)}))
		fmt.Printf("request at %d messages\n", len(h))
		out, _ := w.Process(context.Background(), h)
		h = out
		runner.turnOver() // the model answers; the summaries started are written meanwhile
	}
	fmt.Println("summarizer calls:", sum.calls)
	// Output:
	// request at 4 messages
	// request at 6 messages
	// request at 8 messages
	// request at 10 messages
	// request at 12 messages
	// request at 14 messages
	//   summary of messages 3 to 12 started ahead
	// request at 16 messages
	// request at 18 messages
	// request at 20 messages
	// request at 22 messages
	//   compacted 22 → 13 messages; written ahead true, waited 0s
	// request at 15 messages
	//   summary of messages 3 to 11 started ahead
	// summarizer calls: 2
}
