package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/recalltest"
)

// TestRecallMemory runs a turn long enough for the window to summarize
// and clear outputs, with the in-memory recall store: the model retrieves
// a cleared output and a summarized span by reference.
func TestRecallMemory(t *testing.T) {
	s := &recalltest.Script{}
	res, err := recalltest.Agent(model.NewRecorder(s.Reply), agent.NewRecallMemory(0)).Run(context.Background(), nil, "Read the files.")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(recalltest.Answers(res.New)); err != nil {
		t.Error(err)
	}
}

// TestRecallUnknown checks the answer to a reference nothing is stored
// under: a plain tool result, and the turn goes on.
func TestRecallUnknown(t *testing.T) {
	rec := model.NewRecorder(
		model.Respond(processor.NewResponse(processor.ToolCall{ToolCallID: "r1", ToolName: agent.RecallToolName, Args: `{"ref":"sum-0000"}`})),
		model.RespondText("ok"))
	res, err := agent.New(rec, agent.WithRecall(agent.NewRecallMemory(0))).Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	r := res.New[2].Parts[0].(processor.ToolReturn)
	if !strings.Contains(r.Content, `Nothing is stored under "sum-0000"`) || res.Text != "ok" {
		t.Errorf("answer %q, text %q", r.Content, res.Text)
	}
}

// TestRecallMemoryBounded checks that the memory forgets what it kept
// first when full, and keeps an original output over a later copy.
func TestRecallMemoryBounded(t *testing.T) {
	ctx := context.Background()
	m := agent.NewRecallMemory(100)
	ret := func(id, content string) processor.Message {
		return processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "t", Content: content})
	}
	m.Keep(ctx, ret("a", strings.Repeat("a", 60)))
	m.Keep(ctx, ret("a", summary.Placeholder("t", "a", 60, true)), ret("b", strings.Repeat("b", 60)))
	if _, ok, _ := m.Recall(ctx, "a"); ok {
		t.Error("the first output is still kept past the bound")
	}
	if text, ok, _ := m.Recall(ctx, "b"); !ok || text != strings.Repeat("b", 60) {
		t.Errorf("recall b = %q, %v", text, ok)
	}
	m.Keep(ctx, ret("b", "a trimmed copy"))
	if text, _, _ := m.Recall(ctx, "b"); text != strings.Repeat("b", 60) {
		t.Errorf("the original was replaced by %q", text)
	}
}
