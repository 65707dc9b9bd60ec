// Package recalltest runs an agent turn in which the model recalls what the
// window took out of its history: a scripted model reads files with the
// tool "cat" until it is sent a cleared output and a summary marker, then
// recalls both by reference. The agent's tests run it on the in-memory
// recall store, the session's on a session.
package recalltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// Output is what the tool "cat" returns for file n: long enough to be
// trimmed and cleared, and unmistakable.
func Output(n int) string {
	return fmt.Sprintf("contents of file%d.go: %s end of file%d.go", n, strings.Repeat(fmt.Sprintf("line of file%d ", n), 200), n)
}

// Script is the model of the turn (its Reply goes to model.NewRecorder). It
// reads files until the history it is sent holds an output cleared with a
// pointer to recall and a summary marker, then recalls the output (call
// "r1"), then the summary (call "r2"), then answers.
type Script struct {
	// CallID is the id of the first cleared call the model was sent, and
	// SummaryRef the reference of the first summary marker; empty until
	// then.
	CallID, SummaryRef string
	files              int
}

// Reply answers one model call.
func (s *Script) Reply(_ context.Context, _ int, call model.Call) (processor.Message, error) {
	for _, m := range call.Messages {
		if _, ref, ok := summary.ParseMarker(m); ok && s.SummaryRef == "" {
			s.SummaryRef = ref
		}
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok && s.CallID == "" {
				if _, cleared := summary.ParsePlaceholder(r); cleared && strings.Contains(r.Content, "recall") {
					s.CallID = r.ToolCallID
				}
			}
		}
	}
	last := call.Messages[len(call.Messages)-1]
	if r, ok := last.Parts[0].(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
		if r.ToolCallID == "r1" {
			return recall("r2", s.SummaryRef), nil
		}
		return processor.TextMessage("Recalled both."), nil
	}
	if s.CallID != "" && s.SummaryRef != "" {
		return recall("r1", s.CallID), nil
	}
	s.files++
	return processor.NewResponse(processor.ToolCall{ToolCallID: fmt.Sprintf("c%d", s.files), ToolName: "cat",
		Args: fmt.Sprintf(`{"n":%d}`, s.files)}), nil
}

func recall(id, ref string) processor.Message {
	return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: agent.RecallToolName, Args: fmt.Sprintf(`{"ref":%q}`, ref)})
}

// Agent returns an agent running m whose window compacts above 12
// messages, clears the tail's outputs but the last round's and tells the
// model about recall, with r as its recall store (and as its store when r
// is an agent.Store), and the tool "cat" answering Output.
func Agent(m model.Model, r agent.Recaller) *agent.Agent {
	w := window.New(window.Options{MaxMessages: 12, KeepMessages: 6, TailOutputs: 1, Recall: true})
	cat := agent.Tool{Name: "cat", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return Output(a.N), nil
		}}
	opts := []agent.Option{agent.WithProcessors(trimtools.New(trimtools.Options{}), w), agent.WithTools(cat), agent.WithRecall(r), agent.WithMaxSteps(40)}
	if st, ok := r.(agent.Store); ok {
		opts = append(opts, agent.WithStore(st))
	}
	return agent.New(m, opts...)
}

// Answers returns the recall answers among msgs (a turn's new messages),
// by call id: "r1" the cleared output, "r2" the summarized span.
func Answers(msgs []processor.Message) (output, span string) {
	answers := map[string]string{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok && r.ToolName == agent.RecallToolName {
				answers[r.ToolCallID] = r.Content
			}
		}
	}
	return answers["r1"], answers["r2"]
}

// Check checks what recall gave for s's cleared call (output, which must
// be the call's whole output) and its summary (span, which must hold the
// messages the summary replaced), and that the model saw both.
func (s *Script) Check(output, span string) error {
	if s.CallID == "" || s.SummaryRef == "" {
		return fmt.Errorf("the model never saw a cleared output (%q) and a summary (%q)", s.CallID, s.SummaryRef)
	}
	var n int
	if _, err := fmt.Sscanf(s.CallID, "c%d", &n); err != nil {
		return fmt.Errorf("cleared call %q: %w", s.CallID, err)
	}
	var errs []error
	if output != Output(n) {
		errs = append(errs, fmt.Errorf("recall of cleared call %s returned %q, want its whole output", s.CallID, processor.Preview(output, 200)))
	}
	if !strings.Contains(span, "contents of file1.go") || !strings.Contains(span, "assistant calls cat") {
		errs = append(errs, fmt.Errorf("recall of summary %s returned %q, want the messages it replaced", s.SummaryRef, processor.Preview(span, 200)))
	}
	return errors.Join(errs...)
}
