package trimtools_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// The trimmer caps old tool returns; the last two messages (the current
// turn) are left alone.
func ExampleNew() {
	var log strings.Builder
	for i := range 200 {
		fmt.Fprintf(&log, "step %03d ok\n", i)
	}
	history := []processor.Message{
		processor.UserMessage("Run the build."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"make"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: log.String()}),
		processor.TextMessage("The build passed."),
		processor.UserMessage("Good. Now deploy."),
	}
	out, err := trimtools.New(trimtools.Options{MaxChars: 150}).Process(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := out[2].Parts[0].(processor.ToolReturn)
	fmt.Printf("%s %s: %d bytes, was %d\n%s", r.ToolName, r.ToolCallID, len(r.Content), log.Len(), r.Content)
	// Output:
	// bash c1: 136 bytes, was 2400
	// step 000 ok
	// step 001 ok
	// step 002 ok
	// step 003 ok
	// step 004 ok
	// step 005 ok
	// [... 2305 bytes trimmed by abridge ...]
	// step 198 ok
	// step 199 ok
}

// A custom processor written as a processor.Func, composed with the
// trimmer in a chain: secrets are redacted from tool returns first, then
// old returns are trimmed. The chain checks the history after each step.
func Example_chain() {
	redact := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		var out []processor.Message // nil until a message changes
		for i, m := range h {
			var parts []processor.Part
			for j, p := range m.Parts {
				r, ok := p.(processor.ToolReturn)
				if !ok || !strings.Contains(r.Content, "sk-") {
					continue
				}
				if parts == nil {
					parts = append([]processor.Part(nil), m.Parts...) // never modify the input
				}
				r.Content = strings.ReplaceAll(r.Content, "sk-live-1234", "[redacted]")
				parts[j] = r
			}
			if parts == nil {
				continue
			}
			if out == nil {
				out = append([]processor.Message(nil), h...)
			}
			out[i].Parts = parts
		}
		if out == nil {
			return h, nil
		}
		return out, nil
	})
	chain := processor.Chain(redact, trimtools.New(trimtools.Options{MaxChars: 120}))

	env := "API_KEY=sk-live-1234\n" + strings.Repeat("SETTING=value\n", 30)
	history := []processor.Message{
		processor.UserMessage("Show me the environment."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"env"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: env}),
		processor.TextMessage("Here it is (the key is redacted)."),
		processor.UserMessage("Thanks."),
	}
	out, err := chain.Process(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out[2].Parts[0].(processor.ToolReturn).Content)
	fmt.Println("input untouched:", strings.Contains(history[2].Parts[0].(processor.ToolReturn).Content, "sk-live-1234"))
	// Output:
	// API_KEY=[redacted]
	// SETTING=value
	// SETTING=value
	// SETTING=value
	// [... 365 bytes trimmed by abridge ...]
	// SETTING=value
	// input untouched: true
}
