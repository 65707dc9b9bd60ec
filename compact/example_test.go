package compact_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/summary"
)

// A /compact command: the whole conversation becomes the system prompt, a
// summary marker and an acknowledgement. A scripted model stands in for
// the primary model here.
func Example() {
	m := model.NewRecorder(model.RespondText("Goal: fix TestParse in parse.go. Status: fixed, tests pass."))
	s := llm.New(m, llm.Options{})
	history := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Fix the failing test."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"go test ./..."}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: strings.Repeat("--- PASS: TestOK (0.00s)\n", 40) + "--- FAIL: TestParse"}),
		processor.TextMessage("Fixed the off-by-one in parse.go; tests pass."),
	}

	out, rep, err := compact.Compact(context.Background(), s, history, "keep the file names")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d -> %d messages\n", rep.MessagesBefore, rep.MessagesAfter)
	fmt.Println(out[0].Parts[0].PartKind())
	sum, _, _ := summary.ParseMarker(out[1])
	fmt.Println(sum)
	fmt.Println(out[2].Text())
	// Output:
	// 5 -> 3 messages
	// system-prompt
	// Goal: fix TestParse in parse.go. Status: fixed, tests pass.
	// Understood. I have the summary of our conversation so far and will continue from there.
}

// fixed is a summarizer that always returns the same summary.
type fixed string

func (f fixed) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	return string(f), nil
}

// A history too short to be worth compacting is refused.
func ExampleCompact_tooShort() {
	history := []processor.Message{processor.UserMessage("hi"), processor.TextMessage("hello")}
	_, _, err := compact.Compact(context.Background(), fixed("x"), history, "")
	fmt.Println(err)
	// Output:
	// 2 messages, 2 to summarize: history too short to compact
}

// A Compactor is what the agent and the middleware call after the provider
// refused a request as too long: a window's Compact method, or a function,
// here one that keeps the last request only.
func ExampleFunc() {
	var c compact.Compactor = compact.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		return h[len(h)-1:], nil
	})
	out, _ := c.Compact(context.Background(), []processor.Message{
		processor.UserMessage("Fix the test."), processor.TextMessage("Fixed."), processor.UserMessage("Now the docs."),
	})
	fmt.Println(len(out), out[0].Text())
	// Output:
	// 1 Now the docs.
}
