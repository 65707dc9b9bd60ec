package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// output is what the tool "cat" returns for file n: long enough to be
// trimmed and cleared, and unmistakable.
func output(n int) string {
	return fmt.Sprintf("contents of file%d.go: %s end of file%d.go", n, strings.Repeat(fmt.Sprintf("line of file%d ", n), 200), n)
}

// recallScript is a model that reads files until the history it is sent
// holds a cleared output and a summary marker, then recalls both, then
// answers. It records the refs it recalled.
type recallScript struct {
	callID, summaryRef string
	files              int
}

func (s *recallScript) reply(_ context.Context, _ int, call model.Call) (processor.Message, error) {
	for _, m := range call.Messages {
		if _, ref, ok := summary.ParseMarker(m); ok && s.summaryRef == "" {
			s.summaryRef = ref
		}
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok && s.callID == "" {
				if _, cleared := summary.ParsePlaceholder(r); cleared && strings.Contains(r.Content, "recall") {
					s.callID = r.ToolCallID
				}
			}
		}
	}
	last := call.Messages[len(call.Messages)-1]
	if r, ok := last.Parts[0].(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
		if strings.Contains(r.Content, s.summaryRef) || strings.HasPrefix(r.Content, "[1]") {
			return processor.TextMessage("Recalled both."), nil
		}
		return processor.NewResponse(processor.ToolCall{ToolCallID: "r2", ToolName: agent.RecallToolName,
			Args: fmt.Sprintf(`{"ref":%q}`, s.summaryRef)}), nil
	}
	if s.callID != "" && s.summaryRef != "" {
		return processor.NewResponse(processor.ToolCall{ToolCallID: "r1", ToolName: agent.RecallToolName,
			Args: fmt.Sprintf(`{"ref":%q}`, s.callID)}), nil
	}
	s.files++
	return processor.NewResponse(processor.ToolCall{ToolCallID: fmt.Sprintf("c%d", s.files), ToolName: "cat",
		Args: fmt.Sprintf(`{"n":%d}`, s.files)}), nil
}

// recallAgent returns an agent whose window compacts above 12 messages,
// clears the tail's outputs but the last round's, and tells the model
// about recall; with store as its recall store (and session store when
// it is an agent.Store).
func recallAgent(m model.Model, r agent.Recaller) *agent.Agent {
	w := window.New(window.Options{MaxMessages: 12, KeepMessages: 6, TailOutputs: 1, Recall: true})
	cat := agent.Tool{Name: "cat", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return output(a.N), nil
		}}
	opts := []agent.Option{agent.WithProcessors(trimtools.New(trimtools.Options{}), w), agent.WithTools(cat), agent.WithRecall(r), agent.WithMaxSteps(40)}
	if st, ok := r.(agent.Store); ok {
		opts = append(opts, agent.WithStore(st))
	}
	return agent.New(m, opts...)
}

// checkRecalled checks the two recall answers of a turn: the cleared
// call's full output, and the messages the summary replaced.
func checkRecalled(t *testing.T, res *agent.Result, s *recallScript) {
	t.Helper()
	answers := map[string]string{}
	for _, m := range res.New {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
				answers[r.ToolCallID] = r.Content
			}
		}
	}
	n := 0
	fmt.Sscanf(s.callID, "c%d", &n)
	if answers["r1"] != output(n) {
		t.Errorf("recall of cleared call %s returned %q, want its whole output", s.callID, clip(answers["r1"]))
	}
	if !strings.Contains(answers["r2"], "contents of file1.go") || !strings.Contains(answers["r2"], "assistant calls cat") {
		t.Errorf("recall of summary %s returned %q, want the messages it replaced", s.summaryRef, clip(answers["r2"]))
	}
}

func clip(s string) string { return processor.Clip(s, 200) }

// TestRecallMemory runs a turn long enough for the window to summarize
// and clear outputs, with the in-memory recall store: the model retrieves
// a cleared output and a summarized span by reference.
func TestRecallMemory(t *testing.T) {
	s := &recallScript{}
	res, err := recallAgent(model.NewRecorder(s.reply), agent.NewRecallMemory(0)).Run(context.Background(), nil, "Read the files.")
	if err != nil {
		t.Fatal(err)
	}
	if s.callID == "" || s.summaryRef == "" {
		t.Fatalf("the model never saw a cleared output (%q) and a summary (%q)", s.callID, s.summaryRef)
	}
	checkRecalled(t, res, s)
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
