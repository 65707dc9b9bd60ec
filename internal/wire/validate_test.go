package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

func TestValidate(t *testing.T) {
	user := processor.UserMessage("go")
	call := func(id string, before ...processor.Part) processor.Message {
		return processor.NewResponse(append(before, processor.ToolCall{ToolCallID: id, ToolName: "sh"})...)
	}
	ret := func(id string) processor.Message {
		return processor.NewRequest(processor.ToolReturn{ToolCallID: id, Content: "ok"})
	}
	reasoning := processor.Thinking{Content: "r", API: "responses", Raw: `{"type":"reasoning","encrypted_content":"x"}`}
	signed := processor.Thinking{Content: "t", Signature: "s", API: "messages", Raw: `{"type":"thinking","thinking":"t","signature":"s"}`}
	resigned := signed
	resigned.Signature = "other"
	loop := []processor.Message{processor.SystemMessage("sys"), user, call("a", signed), ret("a")}
	// far is a history whose output for call "a" comes 40 messages after
	// it, past where the checks look back first.
	far := func(id string) []processor.Message {
		h := []processor.Message{user, call("a")}
		for k := range 20 {
			h = append(h, call(string(rune('b'+k))), ret(string(rune('b'+k))))
		}
		return append(h, ret(id))
	}
	for _, tc := range []struct {
		name    string
		codec   Codec
		in, out []processor.Message
		want    error
		at      string
	}{
		{"responses valid", Responses, nil, []processor.Message{user, call("a", reasoning), ret("a")}, nil, ""},
		{"responses orphan output", Responses, nil, []processor.Message{user, ret("b")}, ErrOrphanOutput, "message 1 part 0"},
		{"responses output far from its call", Responses, nil, far("a"), nil, ""},
		{"responses orphan output far down", Responses, nil, far("z"), ErrOrphanOutput, "message 42 part 0"},
		{"responses lone reasoning", Responses, nil, []processor.Message{user, processor.NewResponse(reasoning), user}, ErrLoneReasoning, "message 1 part 0"},
		{"messages valid", Messages, loop, loop, nil, ""},
		{"messages first from assistant", Messages, nil, []processor.Message{processor.SystemMessage("s"), processor.TextMessage("hi"), user}, ErrFirstNotUser, "message 1"},
		{"messages two user turns are one", Messages, nil, []processor.Message{user, user}, nil, ""},
		{"messages two assistant turns", Messages, nil, []processor.Message{user, processor.TextMessage("a"), processor.TextMessage("b"), user}, ErrRolesNotAlternating, "message 2"},
		{"messages result after text", Messages, nil, []processor.Message{user, call("a"), processor.NewRequest(processor.UserPrompt{Content: "x"}, processor.ToolReturn{ToolCallID: "a"})}, ErrToolResultNotFirst, "message 2 part 1"},
		{"messages thinking resigned", Messages, loop, []processor.Message{loop[0], user, call("a", resigned), ret("a")}, ErrThinkingChanged, "message 2"},
		{"messages thinking dropped", Messages, loop, []processor.Message{loop[0], user, call("a"), ret("a")}, ErrThinkingChanged, "message 2"},
		{"messages turn compacted away", Messages, loop, []processor.Message{loop[0], user}, ErrThinkingChanged, "message 2 of the history received"},
		{"messages thinking of an ended loop may go", Messages, append(loop, processor.TextMessage("done"), user), []processor.Message{loop[0], user}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.codec.Validate(tc.in, tc.out)
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("Validate = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), tc.at+":") {
				t.Errorf("Validate = %q, want it to name %q", err, tc.at)
			}
		})
	}
}

func TestForPath(t *testing.T) {
	for path, want := range map[string]Codec{
		"/v1/chat/completions": Chat, "/openai/v1/responses/": Responses, "/v1/messages": Messages,
		"/anthropic/v1/messages": Messages, "/v1/threads/t1/messages": nil,
		"/v1/messages/count_tokens": nil, "/v1/models": nil, "/v1/responses/resp_1": nil,
	} {
		if got := ForPath(path); got != want {
			t.Errorf("ForPath(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestFamily(t *testing.T) {
	for path, want := range map[string]Codec{
		"/v1/messages/count_tokens": Messages, "/v1/responses/resp_1": Responses, "/v1/chat/completions": Chat,
		"/v1/threads/t1/messages": nil, "/v1/models": nil,
	} {
		if got := Family(path); got != want {
			t.Errorf("Family(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestUsageAndOverflow(t *testing.T) {
	for _, tc := range []struct {
		codec Codec
		data  string
		want  processor.Usage
	}{
		{Chat, `{"usage":{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":64}}}`, processor.Usage{InputTokens: 100, CachedInputTokens: 64, OutputTokens: 5}},
		{Responses, `{"id":"resp_1","usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":80},"output_tokens":7}}`, processor.Usage{InputTokens: 100, CachedInputTokens: 80, OutputTokens: 7}},
		{Responses, `{"type":"response.completed","response":{"usage":{"input_tokens":9,"output_tokens":1}}}`, processor.Usage{InputTokens: 9, OutputTokens: 1}},
		{Messages, `{"usage":{"input_tokens":10,"cache_read_input_tokens":200,"cache_creation_input_tokens":30,"output_tokens":4}}`, processor.Usage{InputTokens: 240, CachedInputTokens: 200, CacheWriteInputTokens: 30, OutputTokens: 4}},
		{Messages, `{"type":"message_start","message":{"usage":{"input_tokens":3,"cache_read_input_tokens":5,"output_tokens":1}}}`, processor.Usage{InputTokens: 8, CachedInputTokens: 5, OutputTokens: 1}},
	} {
		got, ok := tc.codec.Usage([]byte(tc.data))
		if !ok || got != tc.want {
			t.Errorf("%s.Usage(%s) = %+v, %v, want %+v", tc.codec.API(), tc.data, got, ok, tc.want)
		}
	}
	if _, ok := Messages.Usage([]byte(`{"type":"ping"}`)); ok {
		t.Error("Messages.Usage read usage from a ping")
	}
	openai := []byte(`{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	anthropic := []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`)
	for _, tc := range []struct {
		codec  Codec
		status int
		body   []byte
		want   bool
	}{
		{Chat, 400, openai, true}, {Responses, 400, openai, true}, {Responses, 500, openai, false},
		{Messages, 400, anthropic, true}, {Messages, 400, openai, false}, {Chat, 400, anthropic, false},
	} {
		if got := tc.codec.Overflow(tc.status, tc.body); got != tc.want {
			t.Errorf("%s.Overflow(%d, %s) = %v", tc.codec.API(), tc.status, tc.body, got)
		}
	}
}

func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		codec Codec
		want  string
	}{
		{Chat, `{"error":{"message":"abridge: bad","type":"invalid_request_error","param":"messages","code":"invalid_history"}}` + "\n"},
		{Responses, `{"error":{"message":"abridge: bad","type":"invalid_request_error","param":"input","code":"invalid_history"}}` + "\n"},
		{Messages, `{"type":"error","error":{"type":"invalid_request_error","message":"invalid_history: abridge: bad"}}` + "\n"},
	} {
		if got := string(tc.codec.Refuse(400, "invalid_history", "abridge: bad")); got != tc.want {
			t.Errorf("%s.Refuse = %s, want %s", tc.codec.API(), got, tc.want)
		}
	}
}
