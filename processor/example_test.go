package processor_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// A custom processor is a plain function. This one drops the model's
// thinking from earlier responses; the chain runs the built-in tool-return
// trimmer first, then it, and checks the history after each step.
func ExampleChain() {
	dropThinking := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		out := make([]processor.Message, len(h))
		for i, m := range h {
			out[i] = m
			if m.Kind != processor.Response {
				continue
			}
			var parts []processor.Part // a new slice: the input is read-only
			for _, p := range m.Parts {
				if _, ok := p.(processor.Thinking); !ok {
					parts = append(parts, p)
				}
			}
			out[i].Parts = parts
		}
		return out, nil
	})
	chain := processor.Chain(trimtools.New(trimtools.Options{MaxChars: 120}), dropThinking)

	history := []processor.Message{
		processor.UserMessage("List the files."),
		processor.NewResponse(
			processor.Thinking{Content: "I should run ls."},
			processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"ls"}`},
		),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: strings.Repeat("file.go\n", 100)}),
		processor.TextMessage("There are 100 files."),
		processor.UserMessage("Thanks!"),
	}
	out, err := chain.Process(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		var kinds []string
		for _, p := range m.Parts {
			kinds = append(kinds, p.PartKind())
		}
		fmt.Println(m.Kind, kinds)
	}
	fmt.Printf("%s\n", out[2].Parts[0].(processor.ToolReturn).Content)
	// Output:
	// request [user-prompt]
	// response [tool-call]
	// request [tool-return]
	// response [text]
	// request [user-prompt]
	// file.go
	// file.go
	// file.go
	// file.go
	// file.go
	// file.go
	// file.go
	// [... 729 bytes trimmed by abridge ...]
	// file.go
	// file.go
}

// A response's metadata is shared by the copies of the message and never
// changed in place: WithMeta gives the message a new one, and the other
// copies keep theirs.
func ExampleMessage_WithMeta() {
	resp := processor.TextMessage("Done.").WithMeta(processor.Meta{
		ModelName: "gpt-4.1-mini",
		Usage:     processor.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 3},
	})
	stored := resp

	meta := resp.Info()
	meta.Usage.PromptMessages = 5
	resp = resp.WithMeta(meta)

	fmt.Println(resp.Info().ModelName, resp.Usage().InputTokens, resp.Usage().PromptMessages)
	fmt.Println(stored.Usage().PromptMessages)
	fmt.Println(processor.UserMessage("hi").Info() == processor.Meta{})
	// Output:
	// gpt-4.1-mini 1200 5
	// 0
	// true
}

// A processor that rewrites parts copies only what it changes: MapParts
// returns a new message only when a part changed, and an Edit copies the
// history slice only at its first change. This one redacts an API key in
// tool outputs; the history it was given stays as it was.
func ExampleMapParts() {
	redact := func(p processor.Part) (processor.Part, bool) {
		r, ok := p.(processor.ToolReturn)
		if !ok || !strings.Contains(r.Content, "sk-") {
			return nil, false
		}
		r.Content = strings.ReplaceAll(r.Content, "sk-secret", "[key]")
		return r, true
	}
	redactor := processor.Func(func(_ context.Context, history []processor.Message) ([]processor.Message, error) {
		edit := processor.EditHistory(history)
		for i, m := range history {
			if m, changed := processor.MapParts(m, redact); changed {
				edit.Set(i, m)
			}
		}
		return edit.History(), nil
	})

	history := []processor.Message{
		processor.UserMessage("what is in .env?"),
		processor.NewResponse(processor.ToolCall{ToolName: "cat", ToolCallID: "c1", Args: `{"path":".env"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "cat", ToolCallID: "c1", Content: "KEY=sk-secret"}),
	}
	out, err := redactor.Process(context.Background(), history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[2].Parts[0].(processor.ToolReturn).Content)
	fmt.Println(history[2].Parts[0].(processor.ToolReturn).Content)
	fmt.Println(&out[0] == &history[0], &out[1].Parts[0] == &history[1].Parts[0])
	// Output:
	// KEY=[key]
	// KEY=sk-secret
	// false true
}

// A transcript saved after the model answered ends with that answer, not
// with a request. ProcessTranscript processes it as it was before the
// answer was asked for, and keeps the answer after the result: the old
// tool output is trimmed to fit 120 characters, the answer left as it was.
func ExampleProcessTranscript() {
	transcript := []processor.Message{
		processor.UserMessage("List the files."),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: strings.Repeat("file.go\n", 100)}),
		processor.TextMessage("There are 100 files."),
		processor.UserMessage("Thanks!"),
		processor.TextMessage("You are welcome."),
	}
	trim := trimtools.New(trimtools.Options{MaxChars: 120})
	out, err := processor.ProcessTranscript(context.Background(), trim, transcript)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		fmt.Println(m.Kind, processor.Chars(m))
	}
	// Output:
	// request 15
	// response 22
	// request 111
	// response 20
	// request 7
	// response 16
}

// CheckOutput holds a processor's output to the contract, as the chain
// does after each processor: here a processor that dropped the last
// request.
func ExampleCheckOutput() {
	history := []processor.Message{processor.UserMessage("hi"), processor.TextMessage("hello"), processor.UserMessage("go on")}
	fmt.Println(processor.CheckOutput(history, history[2]))
	fmt.Println(processor.CheckOutput(history[:2], history[2]))
	// Output:
	// <nil>
	// message 1: history does not end with a request
}
