package processor_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// upper changes the content of user prompts that have lower-case letters.
func upper(p processor.Part) (processor.Part, bool) {
	u, ok := p.(processor.UserPrompt)
	if !ok || strings.ToUpper(u.Content) == u.Content {
		return nil, false
	}
	u.Content = strings.ToUpper(u.Content)
	return u, true
}

func TestMapParts(t *testing.T) {
	sys := processor.SystemPrompt{Content: "be brief"}
	tests := []struct {
		name        string
		in          processor.Message
		want        processor.Message
		wantChanged bool
	}{
		{"no parts", processor.Message{Kind: processor.Request}, processor.Message{Kind: processor.Request}, false},
		{"nothing to change", processor.NewRequest(sys, processor.UserPrompt{Content: "HI"}),
			processor.NewRequest(sys, processor.UserPrompt{Content: "HI"}), false},
		{"the first part", processor.NewRequest(processor.UserPrompt{Content: "hi"}, sys),
			processor.NewRequest(processor.UserPrompt{Content: "HI"}, sys), true},
		{"parts after the first change", processor.NewRequest(sys, processor.UserPrompt{Content: "a"}, sys, processor.UserPrompt{Content: "b"}),
			processor.NewRequest(sys, processor.UserPrompt{Content: "A"}, sys, processor.UserPrompt{Content: "B"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := processor.Clone([]processor.Message{tt.in})[0]
			got, changed := processor.MapParts(tt.in, upper)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MapParts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.in); diff != "" {
				t.Errorf("MapParts modified its input (-before +after):\n%s", diff)
			}
			if !changed && len(got.Parts) > 0 && &got.Parts[0] != &tt.in.Parts[0] {
				t.Errorf("MapParts copied the parts of a message it did not change")
			}
		})
	}
}

func TestEdit(t *testing.T) {
	h := []processor.Message{user, text, processor.UserMessage("next")}
	e := processor.EditHistory(h)
	if got := e.History(); e.Changed() || &got[0] != &h[0] {
		t.Fatalf("an edit with nothing set returned a copy, or says it changed")
	}
	e.Set(1, processor.TextMessage("HELLO"))
	e.Set(2, processor.UserMessage("NEXT"))
	want := []processor.Message{user, processor.TextMessage("HELLO"), processor.UserMessage("NEXT")}
	if diff := cmp.Diff(want, e.History()); diff != "" || !e.Changed() {
		t.Errorf("edited history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]processor.Message{user, text, processor.UserMessage("next")}, h); diff != "" {
		t.Errorf("the edit modified its input (-want +got):\n%s", diff)
	}
}
