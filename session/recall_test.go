package session

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

// fileOutput is what the test tool returns for file n.
func fileOutput(n int) string {
	return fmt.Sprintf("contents of file%d.go: %s end", n, strings.Repeat(fmt.Sprintf("line %d ", n), 300))
}

// TestRecallSession runs an agent whose window summarizes and clears old
// tool outputs, with a session as its store and recall store; the model
// (scripted) recalls a cleared output and a summarized span by reference
// and gets them back; after a restart (a new store on the database, a new
// handle), the session still gives both.
func TestRecallSession(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		sess := openSession(t, openStore(t, dsn), "recall")
		var callID, ref string
		files := 0
		reply := func(_ context.Context, _ int, call model.Call) (processor.Message, error) {
			for _, m := range call.Messages {
				if _, r, ok := summary.ParseMarker(m); ok && ref == "" {
					ref = r
				}
				for _, p := range m.Parts {
					if r, ok := p.(processor.ToolReturn); ok && callID == "" {
						if _, cleared := summary.ParsePlaceholder(r); cleared {
							callID = r.ToolCallID
						}
					}
				}
			}
			last := call.Messages[len(call.Messages)-1].Parts[0]
			if r, ok := last.(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
				if r.ToolCallID == "r1" {
					return processor.NewResponse(processor.ToolCall{ToolCallID: "r2", ToolName: agent.RecallToolName, Args: fmt.Sprintf(`{"ref":%q}`, ref)}), nil
				}
				return processor.TextMessage("done"), nil
			}
			if callID != "" && ref != "" {
				return processor.NewResponse(processor.ToolCall{ToolCallID: "r1", ToolName: agent.RecallToolName, Args: fmt.Sprintf(`{"ref":%q}`, callID)}), nil
			}
			files++
			return processor.NewResponse(processor.ToolCall{ToolCallID: fmt.Sprintf("c%d", files), ToolName: "cat", Args: fmt.Sprintf(`{"n":%d}`, files)}), nil
		}
		cat := agent.Tool{Name: "cat", Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return fileOutput(a.N), nil
		}}
		w := window.New(window.Options{MaxMessages: 12, KeepMessages: 6, TailOutputs: 1, Recall: true})
		a := agent.New(model.NewRecorder(reply), agent.WithProcessors(trimtools.New(trimtools.Options{}), w),
			agent.WithTools(cat), agent.WithStore(sess), agent.WithRecall(sess), agent.WithMaxSteps(40))
		res, err := a.Run(ctx, nil, "Read the files.")
		if err != nil {
			t.Fatal(err)
		}
		if callID == "" || ref == "" {
			t.Fatalf("no cleared output (%q) or summary (%q) reached the model", callID, ref)
		}
		var n int
		fmt.Sscanf(callID, "c%d", &n)
		answers := map[string]string{}
		for _, m := range res.New {
			if r, ok := m.Parts[0].(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
				answers[r.ToolCallID] = r.Content
			}
		}
		check := func(when, output, span string) {
			t.Helper()
			if output != fileOutput(n) {
				t.Errorf("%s: recall of %s = %q, want its whole output", when, callID, processor.Clip(output, 120))
			}
			if !strings.Contains(span, "contents of file1.go") || !strings.Contains(span, "assistant calls cat") {
				t.Errorf("%s: recall of %s = %q, want the messages it replaced", when, ref, processor.Clip(span, 120))
			}
		}
		check("during the turn", answers["r1"], answers["r2"])

		// A restart: a new store and handle on the same database.
		again := openSession(t, openStore(t, dsn), "recall")
		output, ok1, err1 := again.Recall(ctx, callID)
		span, ok2, err2 := again.Recall(ctx, ref)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			t.Fatalf("after a restart: found %v %v, errors %v %v", ok1, ok2, err1, err2)
		}
		check("after a restart", output, span)
		if _, ok, err := again.Recall(ctx, "sum-00000000000000000000"); ok || err != nil {
			t.Errorf("an unknown reference: found %v, %v", ok, err)
		}
	})
}
