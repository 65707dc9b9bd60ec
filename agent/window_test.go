package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// The window processor fits as the forced compactor as it is.
var _ compact.Compactor = (*window.Window)(nil)

func TestRunWindowAsCompactor(t *testing.T) {
	var history []processor.Message
	for i := range 10 {
		// Answers long enough that a summary is smaller than what it
		// replaces: the window never compacts into a bigger request.
		history = append(history, processor.UserMessage(fmt.Sprintf("question %d", i)), processor.TextMessage(strings.Repeat(fmt.Sprintf("answer %d. ", i), 100)))
	}
	var windowEvents []window.EventType
	w := window.New(window.Options{OnEvent: func(_ context.Context, e window.Event) { windowEvents = append(windowEvents, e.Type) }})
	rec := model.NewRecorder(model.Fail(overflow), model.RespondText("ok"))
	// In the chain the window is not triggered (21 messages < 40); forced,
	// it compacts.
	res, err := agent.New(rec, agent.WithProcessors(w), agent.WithCompactor(w)).Run(context.Background(), history, "question 10")
	if err != nil {
		t.Fatal(err)
	}
	calls := rec.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d requests, want 2", len(calls))
	}
	first, retried := calls[0].Messages, calls[1].Messages
	if len(first) != 21 || len(retried) >= len(first) {
		t.Fatalf("sent %d then %d messages, want 21 then fewer", len(first), len(retried))
	}
	if !slices.ContainsFunc(retried, func(m processor.Message) bool { return summary.IsMarker(m) }) {
		t.Error("the retried request holds no summary marker")
	}
	if !processor.Equal(retried[len(retried)-1], processor.UserMessage("question 10")) {
		t.Error("the retried request does not end with the prompt")
	}
	if len(res.History) != len(retried)+1 {
		t.Errorf("history of %d messages, want the retried request plus the answer (%d)", len(res.History), len(retried)+1)
	}
	if !slices.Contains(windowEvents, window.EventFinished) {
		t.Errorf("window events %v, want a finished compaction", windowEvents)
	}
}
