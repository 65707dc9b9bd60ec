package processor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// walk records what WalkContent reports.
func walk(m processor.Message) string {
	var out string
	processor.WalkContent(m,
		func(n int) { out += fmt.Sprintf("#%d;", n) },
		func(s string) { out += fmt.Sprintf("%q;", s) })
	return out
}

func TestWalkContent(t *testing.T) {
	base := processor.NewRequest(
		processor.SystemPrompt{Content: "be brief"},
		processor.UserPrompt{Content: "hi"},
	)
	call := processor.NewResponse(processor.Text{Content: "ok"}, processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"})
	ret := processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a b"})
	multi := processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "x"}, {Type: "image_url", Data: json.RawMessage(`{"url":"u"}`)}}})
	// Each variant differs from its original in one thing a provider sees.
	tests := []struct {
		name    string
		a, b    processor.Message
		differs bool
	}{
		{"same content, metadata differs", call, call.WithMeta(processor.Meta{ModelName: "m", Usage: processor.Usage{InputTokens: 9}}), false},
		{"system becomes developer", base, processor.NewRequest(processor.SystemPrompt{Content: "be brief", Developer: true}, processor.UserPrompt{Content: "hi"}), true},
		{"user text", base, processor.NewRequest(processor.SystemPrompt{Content: "be brief"}, processor.UserPrompt{Content: "hi!"}), true},
		{"text moves between parts", base, processor.NewRequest(processor.SystemPrompt{Content: "be briefhi"}, processor.UserPrompt{Content: ""}), true},
		{"call arguments", call, processor.NewResponse(processor.Text{Content: "ok"}, processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: `{"a":1}`}), true},
		{"call ID", call, processor.NewResponse(processor.Text{Content: "ok"}, processor.ToolCall{ToolCallID: "c2", ToolName: "ls", Args: "{}"}), true},
		{"return content", ret, processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a c"}), true},
		{"return as JSON with the same text", ret, processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", JSON: json.RawMessage("a b")}), false},
		{"multi-part data", multi, processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "x"}, {Type: "image_url", Data: json.RawMessage(`{"url":"v"}`)}}}), true},
		{"refusal", call, call.WithMeta(processor.Meta{Refusal: "no"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := walk(tt.a) != walk(tt.b); got != tt.differs {
				t.Errorf("walks differ = %v, want %v:\n%s\n%s", got, tt.differs, walk(tt.a), walk(tt.b))
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		part  processor.Part
		width int
		want  string
	}{
		{processor.SystemPrompt{Content: "be\n  brief"}, 0, "system: be brief"},
		{processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "look"}, {Type: "image_url", Data: json.RawMessage(`{}`)}}}, 0, "user: look"},
		{processor.ToolReturn{ToolName: "ls", Contents: []string{"a", "b"}}, 0, "tool ls: a b"},
		{processor.RetryPrompt{ToolName: "ls", Content: "bad args"}, 0, "retry ls: bad args"},
		{processor.Text{Content: "héllo wörld"}, 4, "assistant: héll…"},
		{processor.ToolCall{ToolName: "ls", Args: `{"d":"."}`}, 0, `assistant calls ls({"d":"."})`},
		{processor.Thinking{Content: "hmm"}, 0, "thinking: hmm"},
		{processor.Opaque{API: "messages", Type: "redacted_thinking", Raw: `{"data":"x"}`}, 0, "messages redacted_thinking (12 bytes)"},
		{processor.Text{Content: "exactly"}, 7, "assistant: exactly"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := processor.Describe(tt.part, tt.width); got != tt.want {
				t.Errorf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		width    int
		want     string
	}{
		{"short", "a  b\n c", 10, "a b c"},
		{"cut", "héllo wörld", 5, "héllo…"},
		{"exact", "héllo", 5, "héllo"},
		{"no cut", "a\tb " + strings.Repeat("x", 300), 0, "a b " + strings.Repeat("x", 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, processor.Preview(tc.in, tc.width)); diff != "" {
				t.Errorf("Preview(%q, %d) (-want +got):\n%s", tc.in, tc.width, diff)
			}
		})
	}
}
