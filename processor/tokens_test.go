package processor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

func TestChars(t *testing.T) {
	tests := []struct {
		name string
		m    processor.Message
		want int
	}{
		{"user", processor.UserMessage("12345"), 5},
		{"multi-byte counted in bytes", processor.UserMessage("é"), 2},
		{"multi-part user", processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "abc"}, {Type: "image_url", Data: json.RawMessage(`{"u":1}`)}}}), 10},
		{"system", processor.SystemMessage("abcd"), 4},
		{"tool return", processor.NewRequest(processor.ToolReturn{ToolCallID: "id", ToolName: "t", Content: "123"}), 3},
		{"tool return JSON", processor.NewRequest(processor.ToolReturn{ToolCallID: "id", JSON: json.RawMessage(`{"a":1}`), Content: "ignored"}), 7},
		{"tool return parts joined", processor.NewRequest(processor.ToolReturn{ToolCallID: "id", Contents: []string{"ab", "cd", "e"}}), 7},
		{"tool return no parts", processor.NewRequest(processor.ToolReturn{ToolCallID: "id", Contents: []string{}}), 0},
		{"retry", processor.NewRequest(processor.RetryPrompt{Content: "no"}), 2},
		{"text and call", processor.NewResponse(processor.Text{Content: "ok"}, processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{}`}), 2 + 2 + 4 + 2},
		{"thinking of a text answer not counted", processor.NewResponse(processor.Thinking{Content: "long thoughts"}, processor.Text{Content: "x"}), 1},
		{"thinking of a tool call counted", processor.NewResponse(processor.Thinking{Content: "long thoughts"}, processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: `{}`}), 13 + 2 + 2 + 2},
		{"opaque counted by its bytes", processor.NewRequest(processor.Opaque{API: "responses", Type: "item_reference", Raw: `{"id":"x"}`}), 10},
		{"raw thinking of a tool call counted by its bytes", processor.NewResponse(processor.Thinking{Content: "ab", Raw: `{"t":"ab"}`}, processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: `{}`}), 10 + 2 + 2 + 2},
		{"refusal", processor.Message{Kind: processor.Response, Meta: &processor.Meta{Refusal: "no way"}}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := processor.Chars(tt.m); got != tt.want {
				t.Errorf("Chars = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	// msg10 has 10 characters: ceil(10/4) + 4 = 7 tokens.
	msg10 := processor.UserMessage(strings.Repeat("x", 10))
	const t10 = 7
	anchored := func(index int, in, out int64) processor.Message {
		m := processor.TextMessage(strings.Repeat("y", 100)) // 25 + 4 = 29 tokens if estimated
		return m.WithMeta(processor.Meta{Usage: processor.Usage{InputTokens: in, OutputTokens: out, PromptMessages: index}})
	}
	tests := []struct {
		name string
		h    []processor.Message
		want int
	}{
		{"empty", nil, 0},
		{"no anchor: chars/4 rounded up plus overhead", []processor.Message{msg10}, t10},
		{"empty message costs the overhead", []processor.Message{processor.NewRequest(processor.UserPrompt{})}, processor.MessageOverheadTokens},
		{"anchor used", []processor.Message{msg10, msg10, anchored(2, 1000, 50), msg10}, 1050 + t10},
		{"anchor at the end", []processor.Message{msg10, anchored(1, 1000, 50)}, 1050},
		{"stale anchor ignored", []processor.Message{msg10, anchored(5, 1000, 50), msg10}, t10 + 29 + t10},
		{"unknown prompt size ignored", []processor.Message{anchored(0, 1000, 50), msg10}, 29 + t10},
		{"no input tokens ignored", []processor.Message{msg10, anchored(1, 0, 50), msg10}, t10 + 29 + t10},
		{"latest trustworthy anchor wins", []processor.Message{msg10, anchored(1, 500, 5), msg10, anchored(3, 2000, 20), msg10}, 2020 + t10},
		{"falls back to an earlier anchor", []processor.Message{msg10, anchored(1, 500, 5), msg10, anchored(9, 2000, 20), msg10}, 505 + t10 + 29 + t10},
		{"request usage never anchors", []processor.Message{msg10, {Kind: processor.Request, Parts: []processor.Part{processor.UserPrompt{Content: "1234"}}, Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 900, PromptMessages: 1}}}}, t10 + 1 + 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, processor.EstimateTokens(tt.h)); diff != "" {
				t.Errorf("EstimateTokens (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageAdd(t *testing.T) {
	got := processor.Usage{InputTokens: 1, CachedInputTokens: 2, OutputTokens: 3, PromptMessages: 4}.Add(processor.Usage{InputTokens: 10, CachedInputTokens: 20, OutputTokens: 30, PromptMessages: 7})
	if diff := cmp.Diff(processor.Usage{InputTokens: 11, CachedInputTokens: 22, OutputTokens: 33, PromptMessages: 7}, got); diff != "" {
		t.Errorf("Add (-want +got):\n%s", diff)
	}
}
