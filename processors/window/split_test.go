package window

import (
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// TestTextOnly checks textOnly against its definition: a response with
// no tool call whose Text is not all white space.
func TestTextOnly(t *testing.T) {
	tests := []processor.Message{
		text("done"),
		text(""),
		text(" \n\t"),
		text("\u00a0\u2028"),
		text("\xe2\x80"),
		processor.NewResponse(processor.Text{Content: " "}, processor.Text{Content: "\n"}),
		processor.NewResponse(processor.Text{Content: " "}, processor.Text{Content: "x"}),
		processor.NewResponse(processor.Thinking{Content: "hmm"}),
		processor.NewResponse(processor.Text{Content: "x"}, processor.ToolCall{ToolCallID: "c", ToolName: "t"}),
		processor.NewResponse(processor.UserPrompt{Content: "odd"}),
		processor.NewResponse(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url"}, {Type: "text", Text: " "}}}),
		processor.NewResponse(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "y"}}}),
		user("a request"),
	}
	for _, m := range tests {
		want := m.Kind == processor.Response && !m.HasToolCalls() && strings.TrimSpace(m.Text()) != ""
		if got := textOnly(m); got != want {
			t.Errorf("textOnly(%#v) = %v, want %v", m, got, want)
		}
	}
}
