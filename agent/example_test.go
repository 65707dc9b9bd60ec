package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// An agent with one tool, run against a scripted model: the model calls the
// tool, gets its result, and answers.
func Example() {
	upper := agent.Tool{
		Name:        "upper",
		Description: "Upper-cases a text.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return strings.ToUpper(in.Text), nil
		},
	}
	m := model.NewRecorder(
		model.Respond(processor.NewResponse(processor.ToolCall{ToolCallID: "call_1", ToolName: "upper", Args: `{"text":"hello"}`})),
		model.RespondText("It is HELLO."),
	)
	a := agent.New(m,
		agent.WithSystemPrompt("You are terse."),
		agent.WithTools(upper),
		agent.WithEvents(func(_ context.Context, e agent.Event) {
			switch e.Kind {
			case agent.EventRequest:
				fmt.Printf("step %d: sending %d messages\n", e.Step, e.Messages)
			case agent.EventTool:
				fmt.Printf("step %d: ran %s\n", e.Step, e.ToolName)
			}
		}),
	)

	res, err := a.Run(context.Background(), nil, "Shout hello.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text)
	for _, m := range res.History {
		for _, p := range m.Parts {
			fmt.Printf("  %s %s\n", m.Kind, p.PartKind())
		}
	}
	// Output:
	// step 1: sending 1 messages
	// step 1: ran upper
	// step 2: sending 3 messages
	// It is HELLO.
	//   request system-prompt
	//   request user-prompt
	//   response tool-call
	//   request tool-return
	//   response text
}

// A processor runs before every request, and what it returns replaces the
// stored history: here a processor that keeps only the last four messages
// (cutting at a user prompt so no tool call loses its return).
func ExampleWithProcessors() {
	keepRecent := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		for start := max(len(h)-4, 0); start < len(h); start++ {
			m := h[start]
			if m.Kind != processor.Request || len(m.Parts) == 0 {
				continue
			}
			if _, ok := m.Parts[0].(processor.UserPrompt); ok {
				return h[start:], nil
			}
		}
		return h, nil
	})
	m := model.NewRecorder(model.RespondText("ok"))
	a := agent.New(m, agent.WithProcessors(keepRecent))

	var history []processor.Message
	for _, prompt := range []string{"one", "two", "three", "four"} {
		res, err := a.Run(context.Background(), history, prompt)
		if err != nil {
			fmt.Println(err)
			return
		}
		history = res.History
		fmt.Printf("%s: sent %d, kept %d\n", prompt, len(m.Calls()[len(m.Calls())-1].Messages), len(history))
	}
	// Output:
	// one: sent 1, kept 2
	// two: sent 3, kept 4
	// three: sent 3, kept 4
	// four: sent 3, kept 4
}

// When the provider says the prompt is too long, the agent forces its
// compactor and retries the request once.
func ExampleWithCompactor() {
	m := model.NewRecorder(
		model.Fail(&model.Error{StatusCode: 400, Code: "context_length_exceeded"}),
		model.RespondText("ok"),
	)
	lastOnly := compact.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		return h[len(h)-1:], nil
	})
	a := agent.New(m, agent.WithCompactor(lastOnly), agent.WithEvents(func(_ context.Context, e agent.Event) {
		if e.Kind == agent.EventCompactionForced {
			fmt.Printf("compacted %d -> %d messages\n", e.MessagesBefore, e.Messages)
		}
	}))
	old := []processor.Message{processor.UserMessage("long ago"), processor.TextMessage("yes")}
	res, err := a.Run(context.Background(), old, "now")
	fmt.Println(res.Text, err, len(m.Calls()))
	// Output:
	// compacted 3 -> 1 messages
	// ok <nil> 2
}

// A window among the processors is also the compactor the agent forces
// when the provider says the prompt is too long: no WithCompactor needed.
func ExampleWithProcessors_compactor() {
	m := model.NewRecorder(
		model.Fail(&model.Error{StatusCode: 400, Code: "context_length_exceeded"}),
		model.RespondText("ok"),
	)
	win := window.New(window.Options{MaxMessages: -1}) // no trigger of its own
	a := agent.New(m, agent.WithProcessors(win), agent.WithEvents(func(_ context.Context, e agent.Event) {
		if e.Kind == agent.EventCompactionForced {
			fmt.Printf("compacted %d messages: %v\n", e.MessagesBefore, e.Messages < e.MessagesBefore)
		}
	}))
	var old []processor.Message
	for i := range 6 {
		old = append(old, processor.UserMessage(fmt.Sprintf("question %d", i)),
			processor.TextMessage(strings.Repeat(fmt.Sprintf("answer %d. ", i), 50)))
	}
	res, err := a.Run(context.Background(), old, "and now?")
	fmt.Println(res.Text, err)
	// Output:
	// compacted 13 messages: true
	// ok <nil>
}
