package compact_test

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
)

// A /compact command: the whole conversation becomes the system prompt, a
// summary marker and an acknowledgement. A scripted model stands in for
// the primary model here.
func Example() {
	m := model.NewRecorder(model.RespondText("Goal: fix TestParse in parse.go. Status: fixed, tests pass."))
	s := summarizer.New(m, summarizer.Options{})
	history := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Fix the failing test."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"go test ./..."}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: "--- FAIL: TestParse"}),
		processor.TextMessage("Fixed the off-by-one in parse.go; tests pass."),
	}

	out, rep, err := compact.Compact(context.Background(), s, history, "keep the file names")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d -> %d messages\n", rep.MessagesBefore, rep.MessagesAfter)
	fmt.Println(out[0].Parts[0].PartKind())
	summary, _ := window.ParseMarker(out[1])
	fmt.Println(summary)
	fmt.Println(out[2].Text())
	// Output:
	// 5 -> 3 messages
	// system-prompt
	// Goal: fix TestParse in parse.go. Status: fixed, tests pass.
	// Understood. I have the summary of our conversation so far and will continue from there.
}

// fixed is a summarizer that always returns the same summary.
type fixed string

func (f fixed) SummarizeFocus(context.Context, []processor.Message, string, string) (string, error) {
	return string(f), nil
}

// Compacting an openai-go history directly, then continuing the
// conversation by appending the next user message.
func ExampleCompactOpenAI() {
	history := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Rename Foo to Bar everywhere."),
		openai.AssistantMessage("Renamed in 12 files."),
		openai.UserMessage("Now update the docs."),
		openai.AssistantMessage("Docs updated."),
	}
	out, rep, err := compact.CompactOpenAI(context.Background(), fixed("Foo was renamed to Bar; docs updated."), history, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	out = append(out, openai.UserMessage("What is left?"))
	fmt.Println(rep.MessagesBefore, "->", rep.MessagesAfter, "messages;", len(out), "with the next prompt")
	// Output:
	// 4 -> 2 messages; 3 with the next prompt
}

// A history too short to be worth compacting is refused.
func ExampleCompact_tooShort() {
	history := []processor.Message{processor.UserMessage("hi"), processor.TextMessage("hello")}
	_, _, err := compact.Compact(context.Background(), fixed("x"), history, "")
	fmt.Println(err)
	// Output:
	// 2 messages, 2 to summarize: history too short to compact
}
