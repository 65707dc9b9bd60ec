package processor_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

var (
	user   = processor.UserMessage("hi")
	opaque = processor.Opaque{API: "responses", Type: "item_reference", Raw: `{"type":"item_reference","id":"msg_1"}`}
	text   = processor.TextMessage("hello")
)

func call(ids ...string) processor.Message {
	parts := make([]processor.Part, len(ids))
	for i, id := range ids {
		parts[i] = processor.ToolCall{ToolCallID: id, ToolName: "tool-" + id, Args: `{}`}
	}
	return processor.NewResponse(parts...)
}

func ret(id string) processor.ToolReturn {
	return processor.ToolReturn{ToolCallID: id, ToolName: "tool-" + id, Content: "result " + id}
}

func rets(ids ...string) processor.Message {
	parts := make([]processor.Part, len(ids))
	for i, id := range ids {
		parts[i] = ret(id)
	}
	return processor.NewRequest(parts...)
}

var sentinels = map[string]error{
	"ErrEmptyHistory":       processor.ErrEmptyHistory,
	"ErrNoFinalRequest":     processor.ErrNoFinalRequest,
	"ErrOrphanToolReturn":   processor.ErrOrphanToolReturn,
	"ErrUnansweredToolCall": processor.ErrUnansweredToolCall,
	"ErrMalformed":          processor.ErrMalformed,
	"ErrLastRequestAltered": processor.ErrLastRequestAltered,
}

// verdict is what a test compares of a validation error: which sentinel it
// matches (with errors.Is) and the index of the message it is about (a
// *HistoryError's), -1 when none.
type verdict struct {
	Sentinel string
	Index    int
}

func verdictOf(err error) verdict {
	if err == nil {
		return verdict{Index: -1}
	}
	v := verdict{Sentinel: "unknown: " + err.Error(), Index: -1}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			v.Sentinel = name
		}
	}
	var he *processor.HistoryError
	if errors.As(err, &he) {
		v.Index = he.Index
		if want := "message " + strconv.Itoa(he.Index); !strings.HasPrefix(err.Error(), want) {
			v.Sentinel += ", not saying " + want + ": " + err.Error()
		}
	}
	return v
}

func TestValidate(t *testing.T) {
	ok := verdict{Index: -1}
	tests := []struct {
		name string
		h    []processor.Message
		want verdict
	}{
		{"single user", []processor.Message{user}, ok},
		{"system and user", []processor.Message{processor.SystemMessage("s"), user, text, user}, ok},
		{"tool loop", []processor.Message{user, call("a"), rets("a"), call("b", "c"), rets("c"), rets("b"), text, user}, ok},
		{"retry prompt answers a call", []processor.Message{user, call("a", "b"), processor.NewRequest(ret("a"), processor.RetryPrompt{ToolCallID: "b", Content: "bad args"})}, ok},
		{"retry prompt without call", []processor.Message{user, text, processor.NewRequest(processor.RetryPrompt{Content: "wrong format"})}, ok},
		{"returns then user content in one request", []processor.Message{user, call("a"), processor.NewRequest(ret("a"), processor.UserPrompt{Content: "and now?"})}, ok},
		{"response with thinking and text", []processor.Message{user, processor.NewResponse(processor.Thinking{Content: "hm"}, processor.Text{Content: "t"}), user}, ok},
		{"opaque items among calls and returns", []processor.Message{processor.NewRequest(opaque), user, processor.NewResponse(opaque, processor.ToolCall{ToolCallID: "a", ToolName: "t"}), processor.NewRequest(opaque, ret("a")), processor.NewRequest(opaque)}, ok},
		{"same call ID in two responses", []processor.Message{user, call("a"), rets("a"), call("a"), rets("a")}, ok},

		{"nil", nil, verdict{"ErrEmptyHistory", -1}},
		{"empty", []processor.Message{}, verdict{"ErrEmptyHistory", -1}},
		{"ends with a response", []processor.Message{user, text}, verdict{"ErrNoFinalRequest", 1}},
		{"return without call", []processor.Message{user, rets("a")}, verdict{"ErrOrphanToolReturn", 1}},
		{"return for an older response", []processor.Message{user, call("a"), rets("a"), text, rets("a")}, verdict{"ErrOrphanToolReturn", 4}},
		{"return answered twice", []processor.Message{user, call("a"), rets("a"), rets("a")}, verdict{"ErrOrphanToolReturn", 3}},
		{"return for another ID", []processor.Message{user, call("a"), rets("b")}, verdict{"ErrOrphanToolReturn", 2}},
		{"retry prompt for an unknown call", []processor.Message{user, text, processor.NewRequest(processor.RetryPrompt{ToolCallID: "x"})}, verdict{"ErrOrphanToolReturn", 2}},
		// An unanswered call is named by the message holding it.
		{"return after user content", []processor.Message{user, call("a"), processor.NewRequest(processor.UserPrompt{Content: "x"}, ret("a"))}, verdict{"ErrUnansweredToolCall", 1}},
		{"call unanswered before the next response", []processor.Message{user, call("a"), text, user}, verdict{"ErrUnansweredToolCall", 1}},
		{"call unanswered at the end", []processor.Message{user, call("a")}, verdict{"ErrUnansweredToolCall", 1}},
		{"one of two calls answered", []processor.Message{user, call("a", "b"), rets("a"), user}, verdict{"ErrUnansweredToolCall", 1}},
		{"unknown kind", []processor.Message{{Parts: []processor.Part{processor.UserPrompt{Content: "x"}}}}, verdict{"ErrMalformed", 0}},
		{"request without parts", []processor.Message{user, text, processor.NewRequest()}, verdict{"ErrMalformed", 2}},
		{"response part in a request", []processor.Message{processor.NewRequest(processor.Text{Content: "x"})}, verdict{"ErrMalformed", 0}},
		{"request part in a response", []processor.Message{user, processor.NewResponse(processor.UserPrompt{Content: "x"}), user}, verdict{"ErrMalformed", 1}},
		{"nil part", []processor.Message{user, processor.NewResponse(nil), user}, verdict{"ErrMalformed", 1}},
		{"nil request part", []processor.Message{processor.NewRequest(nil)}, verdict{"ErrMalformed", 0}},
		{"tool call without ID", []processor.Message{user, processor.NewResponse(processor.ToolCall{ToolName: "x"}), user}, verdict{"ErrMalformed", 1}},
		{"tool return without ID", []processor.Message{user, call("a"), processor.NewRequest(processor.ToolReturn{ToolName: "x"})}, verdict{"ErrMalformed", 2}},
		{"duplicate call IDs", []processor.Message{user, call("a", "a"), rets("a", "a")}, verdict{"ErrMalformed", 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, verdictOf(processor.Validate(tt.h))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := processor.Message{
		Kind:  processor.Response,
		Parts: []processor.Part{processor.Text{Content: "t"}},
		Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 10, PromptMessages: 3}, ModelName: "m", FinishReason: "stop", Name: "n", Refusal: "r", Time: at},
	}
	with := func(f func(*processor.Message)) processor.Message {
		m := base
		m.Parts = append([]processor.Part(nil), base.Parts...)
		f(&m)
		return m
	}
	withMeta := func(f func(*processor.Meta)) processor.Message {
		meta := *base.Meta
		f(&meta)
		return base.WithMeta(meta)
	}
	req := func(p processor.Part) processor.Message { return processor.NewRequest(p) }
	tests := []struct {
		name string
		a, b processor.Message
		want bool
	}{
		{"same", base, with(func(*processor.Message) {}), true},
		{"same metadata in another Meta", base, withMeta(func(*processor.Meta) {}), true},
		{"same instant in another zone", base, withMeta(func(m *processor.Meta) { m.Time = at.In(time.FixedZone("x", 3600)) }), true},
		{"kind", base, with(func(m *processor.Message) { m.Kind = processor.Request }), false},
		{"usage", base, withMeta(func(m *processor.Meta) { m.Usage.PromptMessages = 4 }), false},
		{"model", base, withMeta(func(m *processor.Meta) { m.ModelName = "o" }), false},
		{"finish reason", base, withMeta(func(m *processor.Meta) { m.FinishReason = "length" }), false},
		{"name", base, withMeta(func(m *processor.Meta) { m.Name = "o" }), false},
		{"refusal", base, withMeta(func(m *processor.Meta) { m.Refusal = "" }), false},
		{"time", base, withMeta(func(m *processor.Meta) { m.Time = at.Add(time.Second) }), false},
		{"no metadata", base, with(func(m *processor.Message) { m.Meta = nil }), false},
		{"nil and zero metadata", processor.UserMessage("x"), processor.UserMessage("x").WithMeta(processor.Meta{}), true},
		{"nil and zero metadata by pointer", processor.UserMessage("x"), func() processor.Message {
			m := processor.UserMessage("x")
			m.Meta = &processor.Meta{}
			return m
		}(), true},
		{"extra part", base, with(func(m *processor.Message) { m.Parts = append(m.Parts, processor.Text{}) }), false},
		{"text content", base, with(func(m *processor.Message) { m.Parts[0] = processor.Text{Content: "u"} }), false},
		{"text vs thinking", base, with(func(m *processor.Message) { m.Parts[0] = processor.Thinking{Content: "t"} }), false},
		{"nil parts", processor.Message{Kind: processor.Request}, processor.Message{Kind: processor.Request, Parts: []processor.Part{}}, true},
		{"nil part", processor.NewRequest(nil), processor.NewRequest(nil), true},
		{"nil part vs text", processor.NewRequest(nil), req(processor.Text{}), false},
		{"tool call args", processor.NewResponse(processor.ToolCall{ToolCallID: "a", Args: "{}"}), processor.NewResponse(processor.ToolCall{ToolCallID: "a", Args: "{ }"}), false},
		{"opaque bytes", processor.NewRequest(processor.Opaque{API: "responses", Type: "x", Raw: "{}"}), processor.NewRequest(processor.Opaque{API: "responses", Type: "x", Raw: "{ }"}), false},
		{"opaque API", processor.NewRequest(processor.Opaque{API: "responses", Type: "x", Raw: "{}"}), processor.NewRequest(processor.Opaque{API: "messages", Type: "x", Raw: "{}"}), false},
		{"thinking raw", processor.NewResponse(processor.Thinking{Raw: "{}"}), processor.NewResponse(processor.Thinking{}), false},
		{"thinking signature", processor.NewResponse(processor.Thinking{Signature: "s"}), processor.NewResponse(processor.Thinking{}), false},
		{"system developer", req(processor.SystemPrompt{Content: "s"}), req(processor.SystemPrompt{Content: "s", Developer: true}), false},
		{"retry call", req(processor.RetryPrompt{Content: "r"}), req(processor.RetryPrompt{Content: "r", ToolCallID: "a"}), false},
		{"return JSON", req(processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage(`{"a":1}`)}), req(processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage(`{"a":1}`)}), true},
		{"return JSON bytes", req(processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage(`{"a":1}`)}), req(processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage(`{"a":2}`)}), false},
		{"return JSON nil vs empty", req(processor.ToolReturn{ToolCallID: "a"}), req(processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage{}}), false},
		{"return contents", req(processor.ToolReturn{ToolCallID: "a", Contents: []string{"x", "y"}}), req(processor.ToolReturn{ToolCallID: "a", Contents: []string{"x", "y"}}), true},
		{"return contents differ", req(processor.ToolReturn{ToolCallID: "a", Contents: []string{"x", "y"}}), req(processor.ToolReturn{ToolCallID: "a", Contents: []string{"x"}}), false},
		{"return contents nil vs empty", req(processor.ToolReturn{ToolCallID: "a"}), req(processor.ToolReturn{ToolCallID: "a", Contents: []string{}}), false},
		{"return tool name", req(processor.ToolReturn{ToolCallID: "a", ToolName: "x"}), req(processor.ToolReturn{ToolCallID: "a", ToolName: "y"}), false},
		{"user contents", req(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(`{"url":"u"}`)}}}),
			req(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(`{"url":"u"}`)}}}), true},
		{"user contents data", req(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(`{"url":"u"}`)}}}),
			req(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(`{"url":"v"}`)}}}), false},
		// A plain prompt and a multi-part prompt with no parts are sent differently.
		{"user contents nil vs empty", req(processor.UserPrompt{Content: "x"}), req(processor.UserPrompt{Content: "x", Contents: []processor.UserContent{}}), false},
		{"user name", req(processor.UserPrompt{Content: "x"}), req(processor.UserPrompt{Content: "x", Name: "bob"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := processor.Equal(tt.a, tt.b); got != tt.want {
				t.Errorf("Equal(a, b) = %v, want %v", got, tt.want)
			}
			if got := processor.Equal(tt.b, tt.a); got != tt.want {
				t.Errorf("Equal(b, a) = %v, want %v", got, tt.want)
			}
		})
	}
}
