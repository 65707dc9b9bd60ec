package model_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// A Recorder answers from a script and records what each request sent.
func ExampleRecorder() {
	rec := model.NewRecorder(
		model.Respond(processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "clock", Args: `{}`})),
		model.RespondText("It is noon."),
	)
	history := []processor.Message{processor.UserMessage("What time is it?")}
	ctx := context.Background()
	for {
		resp, err := rec.Request(ctx, history, model.Settings{Tools: []model.Tool{{Name: "clock"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		history = append(history, resp)
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			break
		}
		history = append(history, processor.NewRequest(processor.ToolReturn{ToolName: "clock", ToolCallID: calls[0].ToolCallID, Content: "12:00"}))
	}
	fmt.Println("answer:", history[len(history)-1].Text())
	for i, c := range rec.Calls() {
		fmt.Printf("call %d sent %d messages, tools %d\n", i, len(c.Messages), len(c.Settings.Tools))
	}
	// Output:
	// answer: It is noon.
	// call 0 sent 1 messages, tools 1
	// call 1 sent 3 messages, tools 1
}

// Observe reports each request a model makes: here a Recorder's, one that
// succeeds and one that fails with a provider's error.
func ExampleObserve() {
	rec := model.NewRecorder(
		model.RespondText("Done."),
		model.Fail(&model.Error{StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down"}),
	)
	m := model.Observe(rec, func(ctx context.Context, o model.Observation) {
		fmt.Println("sent", o.Messages, "messages; error:", o.Err)
	})
	history := []processor.Message{processor.UserMessage("Summarize.")}
	for range 2 {
		_, err := m.Request(context.Background(), history, model.Settings{Timeout: time.Minute})
		if err != nil {
			var e *model.Error
			fmt.Println(errors.As(err, &e), e.StatusCode, errors.Is(err, model.ErrContextOverflow))
		}
	}
	// Output:
	// sent 1 messages; error: <nil>
	// sent 1 messages; error: model provider status 429 (rate_limit_exceeded): slow down
	// true 429 false
}
