package replay

import (
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// syntheticHistory returns a valid agent transcript of about 4*rounds
// messages: a system prompt and a user prompt, then rounds of a tool call
// reading a file answered by a long tool return, with a file edit, a text answer
// and a new user prompt every 8 rounds. It ends with an assistant text.
func syntheticHistory(rounds int) []processor.Message {
	h := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Fix the failing test in pkg/core/engine.go."),
		processor.TextMessage("I will look at the code first."),
		processor.UserMessage("Go ahead."),
	}
	for i := range rounds {
		id := fmt.Sprintf("call_%d", i)
		path := fmt.Sprintf("pkg/core/file_%d.go", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "read_file", Args: `{"path":"` + path + `"}`}),
			processor.NewRequest(processor.ToolReturn{ToolName: "read_file", ToolCallID: id,
				Content: "package core // " + path + "\n" + strings.Repeat(fmt.Sprintf("line %d of %s\n", i, path), 150)}),
		)
		if i%8 == 7 {
			eid := fmt.Sprintf("edit_%d", i)
			h = append(h,
				processor.NewResponse(processor.ToolCall{ToolCallID: eid, ToolName: "edit_file",
					Args: fmt.Sprintf(`{"path":"pkg/core/fixed_%d.go","content":"package core"}`, i)}),
				processor.NewRequest(processor.ToolReturn{ToolName: "edit_file", ToolCallID: eid, Content: "ok"}),
				processor.TextMessage(fmt.Sprintf("Read %s; it looks fine.", path)),
				processor.UserMessage(fmt.Sprintf("Now check docs/step_%d.md too.", i)),
			)
		}
	}
	return append(h, processor.TextMessage("Done: the fix is in pkg/core/engine.go."))
}

// countResponses returns the number of responses that follow a request.
func countResponses(h []processor.Message) int {
	n := 0
	for i, m := range h {
		if m.Kind == processor.Response && i > 0 && h[i-1].Kind == processor.Request {
			n++
		}
	}
	return n
}

// trimOff disables the tool-return trimmer.
var trimOff = trimtools.Options{MaxChars: -1}
