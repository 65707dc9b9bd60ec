package processor_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

func TestCloneNil(t *testing.T) {
	if got := processor.Clone(nil); got != nil {
		t.Errorf("Clone(nil) = %#v, want nil", got)
	}
	if got := processor.Clone([]processor.Message{}); got == nil || len(got) != 0 {
		t.Errorf("Clone(empty) = %#v, want an empty, non-nil slice", got)
	}
}

// holdsSlice reports whether p holds a slice Clone must copy.
func holdsSlice(p processor.Part) bool {
	switch p := p.(type) {
	case processor.UserPrompt:
		return p.Contents != nil
	case processor.ToolReturn:
		return p.JSON != nil || p.Contents != nil
	}
	return false
}

// scribble writes over every slice p holds, in place.
func scribble(p processor.Part) {
	switch p := p.(type) {
	case processor.UserPrompt:
		for k := range p.Contents {
			p.Contents[k].Text = "scribbled"
			for b := range p.Contents[k].Data {
				p.Contents[k].Data[b] = '#'
			}
		}
	case processor.ToolReturn:
		for b := range p.JSON {
			p.JSON[b] = '#'
		}
		for k := range p.Contents {
			p.Contents[k] = "scribbled"
		}
	}
}

// scribbleHistory writes over every slice of h in place: the slices the
// parts hold, the parts lists and the messages.
func scribbleHistory(h []processor.Message) {
	for i := range h {
		for j := range h[i].Parts {
			scribble(h[i].Parts[j])
			h[i].Parts[j] = processor.Text{Content: "scribbled"}
		}
		if h[i].Meta != nil {
			*h[i].Meta = processor.Meta{ModelName: "scribbled"}
		}
		h[i] = processor.TextMessage("scribbled")
	}
}

// TestClone checks that Clone shares no slice with its input, keeps nil
// slices nil and empty ones empty, keeps the very interface value of the
// parts that hold no slice, and that each copy is Equal to its original.
func TestClone(t *testing.T) {
	img := json.RawMessage(`{"url":"data:image/png;base64,iVBORw0KGgo="}`)
	tests := []struct {
		name string
		// history builds the input; it is called more than once, so that
		// a pristine copy is at hand after the input was written over.
		history func() []processor.Message
	}{
		{"nil parts", func() []processor.Message {
			return []processor.Message{{Kind: processor.Request}, {Kind: processor.Response}}
		}},
		{"empty parts", func() []processor.Message {
			return []processor.Message{{Kind: processor.Request, Parts: []processor.Part{}}}
		}},
		{"nil part", func() []processor.Message {
			return []processor.Message{{Kind: processor.Request, Parts: []processor.Part{nil}}}
		}},
		{"parts without slices", func() []processor.Message {
			return []processor.Message{
				processor.NewRequest(processor.SystemPrompt{Content: "be brief", Developer: true, Name: "dev"}, processor.UserPrompt{Content: "hi", Name: "ann"}),
				processor.NewResponse(processor.Thinking{Content: "hmm", Signature: "sig"}, processor.Text{Content: "calling"}, processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"cmd":"ls"}`}),
				processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c1", Content: "a b c"}),
				processor.NewRequest(processor.RetryPrompt{ToolName: "bash", ToolCallID: "c2", Content: "again"}),
				processor.NewRequest(processor.UserPrompt{}, processor.ToolReturn{}),
			}
		}},
		{"tool return with JSON", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.ToolReturn{ToolName: "api", ToolCallID: "c1", JSON: json.RawMessage(`{"ok":true,"n":42}`)})}
		}},
		{"tool return with empty JSON", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.ToolReturn{ToolName: "api", ToolCallID: "c1", JSON: json.RawMessage{}})}
		}},
		{"multi-part tool return", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c1", Contents: []string{"out", "err"}})}
		}},
		{"multi-part tool return, empty", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c1", Contents: []string{}})}
		}},
		{"tool return with JSON and contents", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", JSON: json.RawMessage(`[1,2]`), Contents: []string{"x"}})}
		}},
		{"multi-part user prompt", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
				{Type: "text", Text: "look"},
				{Type: "image_url", Data: append(json.RawMessage(nil), img...)},
				{Type: "file", Data: json.RawMessage{}},
			}})}
		}},
		{"multi-part user prompt, empty", func() []processor.Message {
			return []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{}})}
		}},
		{"metadata", func() []processor.Message {
			return []processor.Message{
				processor.UserMessage("hi").WithMeta(processor.Meta{Time: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}),
				processor.TextMessage("hello").WithMeta(processor.Meta{
					Usage:     processor.Usage{InputTokens: 12, OutputTokens: 3, PromptMessages: 1},
					ModelName: "m", FinishReason: "stop", Name: "bot", Refusal: "no",
				}),
			}
		}},
		{"mixed", func() []processor.Message {
			return []processor.Message{
				processor.UserMessage("start"),
				processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "a"}, processor.ToolCall{ToolCallID: "c2", ToolName: "b"}),
				processor.NewRequest(
					processor.ToolReturn{ToolName: "a", ToolCallID: "c1", Content: "plain"},
					processor.ToolReturn{ToolName: "b", ToolCallID: "c2", JSON: json.RawMessage(`{"k":"v"}`)},
				),
				processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "t"}, {Type: "image_url", Data: append(json.RawMessage(nil), img...)}}}),
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pristine := tt.history()
			in := tt.history()
			out := processor.Clone(in)
			checkClone(t, in, out)

			// Writing through the copy does not reach the original.
			scribbleHistory(out)
			if diff := cmp.Diff(pristine, in); diff != "" {
				t.Errorf("writing through the copy changed the original (-want +got):\n%s", diff)
			}

			// Writing through the original does not reach the copy.
			out = processor.Clone(in)
			scribbleHistory(in)
			if diff := cmp.Diff(pristine, out); diff != "" {
				t.Errorf("writing through the original changed the copy (-want +got):\n%s", diff)
			}
		})
	}
}

// checkClone checks out, just made by Clone(in).
func checkClone(t *testing.T, in, out []processor.Message) {
	t.Helper()
	if len(out) != len(in) {
		t.Fatalf("%d messages, want %d", len(out), len(in))
	}
	if len(in) > 0 && &out[0] == &in[0] {
		t.Error("the message slice is shared")
	}
	for i := range in {
		a, b := in[i], out[i]
		if !processor.Equal(a, b) {
			t.Errorf("message %d: not Equal to its copy:\n%s", i, cmp.Diff(a, b))
		}
		if (a.Parts == nil) != (b.Parts == nil) {
			t.Errorf("message %d: parts nil=%v, copy's nil=%v", i, a.Parts == nil, b.Parts == nil)
		}
		if len(a.Parts) > 0 && &a.Parts[0] == &b.Parts[0] {
			t.Errorf("message %d: the parts slice is shared", i)
		}
		if (a.Meta == nil) != (b.Meta == nil) || (a.Meta != nil && a.Meta == b.Meta) {
			t.Errorf("message %d: metadata %p, copy's %p: want a copy (or nil for nil)", i, a.Meta, b.Meta)
		}
		for j := range a.Parts {
			p, q := a.Parts[j], b.Parts[j]
			if holdsSlice(p) {
				checkPartCopy(t, i, j, p, q)
			}
		}
	}
}

// checkPartCopy checks that q, the copy of p, keeps the nil-ness of each
// slice of p and shares none of their arrays: writing over every slice of
// q leaves p as it was.
func checkPartCopy(t *testing.T, i, j int, p, q processor.Part) {
	t.Helper()
	nils := func(x processor.Part) []bool {
		switch x := x.(type) {
		case processor.ToolReturn:
			return []bool{x.JSON == nil, x.Contents == nil}
		case processor.UserPrompt:
			out := []bool{x.Contents == nil}
			for _, c := range x.Contents {
				out = append(out, c.Data == nil)
			}
			return out
		}
		return nil
	}
	if diff := cmp.Diff(nils(p), nils(q)); diff != "" {
		t.Errorf("message %d part %d: nil slices differ from the copy's (-original +copy):\n%s", i, j, diff)
	}
	before := fmt.Sprintf("%#v", p)
	scribble(q)
	if after := fmt.Sprintf("%#v", p); before != after {
		t.Errorf("message %d part %d: writing over the copy changed the original: an array is shared", i, j)
	}
}
