package agent_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// BenchmarkRun measures the agent's own cost of a turn with one tool call
// over a 200-message history, against the recorder (no network).
func BenchmarkRun(b *testing.B) {
	var history []processor.Message
	for i := range 100 {
		history = append(history, processor.UserMessage(fmt.Sprintf("question %d", i)), processor.TextMessage(fmt.Sprintf("answer %d", i)))
	}
	rec := model.NewRecorder(conversational)
	a := agent.New(rec, agent.WithTools(echoTool), agent.WithProcessors(&trimOld{}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Run(context.Background(), history, "prompt"); err != nil {
			b.Fatal(err)
		}
	}
}
