package replay_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// A transcript held in memory is replayed as an agent would have sent it,
// with a window of 10 messages.
func ExampleRunHistory() {
	history := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Fix the bug in main.go."),
		processor.TextMessage("Looking."),
		processor.UserMessage("Go on."),
	}
	for i := range 12 {
		id := fmt.Sprintf("call_%d", i)
		history = append(history,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "read_file", Args: `{"path":"main.go"}`}),
			processor.NewRequest(processor.ToolReturn{ToolName: "read_file", ToolCallID: id, Content: strings.Repeat("package main\n", 50)}),
		)
	}
	history = append(history, processor.TextMessage("Fixed."))

	res, err := replay.RunHistory(context.Background(), "example", history, replay.Options{
		Mode:   replay.ModeProcessed,
		Window: window.Options{MaxMessages: 10},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("requests:", res.Requests)
	fmt.Println("compacted:", res.Compactions > 0)
	fmt.Println("smaller prompts:", res.MaxPromptCharsAfter < res.MaxPromptCharsBefore)
	fmt.Println("invalid requests:", res.InvalidRequests)
	fmt.Println("never summarized:", res.Unsummarized)
	// Output:
	// requests: 14
	// compacted: true
	// smaller prompts: true
	// invalid requests: 0
	// never summarized: 0
}

// Replaying files gives a report that prints as a table, as JSON or as a
// chart.
func ExampleRun() {
	rep, err := replay.Run(context.Background(), nil, replay.Options{Mode: replay.ModeFull})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Options.Mode, rep.Options.Summarizer, len(rep.Results), rep.Total.File)
	// Output:
	// full digest 0 total
}
