package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// messagesModel is a Messages model of the fake server f.
func messagesModel(f *providertest.Server, opts ...Option) model.Model {
	base := []Option{WithBaseURL(f.URL), WithAPIKey(providertest.Key), WithMaxRetries(0), WithModel("test-model")}
	return New(append(base, opts...)...)
}

// TestErrors checks that the Messages model classifies failures as the
// models of package model/openai do.
func TestErrors(t *testing.T) {
	anthropicErr := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
	}
	providertest.RunErrors(t, func(f *providertest.Server) model.Model { return messagesModel(f) }, []providertest.ErrorTest{
		{
			Name:    "prompt too long",
			Handler: providertest.ReplyJSON(400, anthropicErr("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")),
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"},
				Is: []error{model.ErrContextOverflow}, Contains: "prompt is too long"},
		},
		{
			Name:    "another bad request is no overflow",
			Handler: providertest.ReplyJSON(400, anthropicErr("invalid_request_error", "messages: roles must alternate")),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 400, Type: "invalid_request_error", Message: "messages: roles must alternate"}, Contains: "alternate"},
		},
		{
			Name:    "bad key, quoted",
			Handler: providertest.ReplyJSON(401, anthropicErr("authentication_error", "invalid x-api-key "+providertest.Key)),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key [redacted key]"}, Contains: "invalid x-api-key"},
		},
		{
			Name:    "rate limit",
			Handler: providertest.ReplyJSON(429, anthropicErr("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit"}, Contains: "rate limit"},
		},
		{
			Name:    "overloaded",
			Handler: providertest.ReplyJSON(529, anthropicErr("overloaded_error", "Overloaded")),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}, Contains: "Overloaded"},
		},
		{
			Name:     "timeout",
			Handler:  providertest.BlockUntilDone,
			Settings: model.Settings{Timeout: 50 * time.Millisecond},
			Want:     providertest.ErrorCase{Want: model.Error{Message: "request timed out after 50ms"}, Is: []error{context.DeadlineExceeded}, Contains: "timed out"},
		},
		{
			Name: "error event in a stream",
			Handler: providertest.ReplyEvents("message_start", anthropicStart,
				"error", anthropicErr("overloaded_error", "Overloaded")),
			Settings: model.Settings{OnText: func(string) {}},
			Want:     providertest.ErrorCase{Want: model.Error{StatusCode: 200, Type: "overloaded_error", Message: "Overloaded"}, Contains: "Overloaded"},
		},
		{
			Name:     "stream cut off",
			Handler:  providertest.ReplyEvents("message_start", anthropicStart),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 200, Message: "response cut off: the stream ended after 1 events without message_stop"},
				Is: []error{model.ErrIncompleteResponse}, Contains: "cut off"},
		},
		{
			Name: "not JSON",
			Handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, "<html>")
			},
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 200, Message: `response has Content-Type "text/html", not JSON`}, Is: []error{model.ErrMalformedResponse}, Contains: "not JSON"},
		},
	})
}

const anthropicStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-2025","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":300,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}`

func TestRequestBody(t *testing.T) {
	signed := `{"type":"thinking","thinking":"look","signature":"EqQBCgIYAh=="}`
	tests := []struct {
		name     string
		history  []processor.Message
		settings model.Settings
		want     map[string]any
	}{
		{
			name:     "history and settings",
			history:  providertest.ThinkingHistory(processor.Thinking{Content: "look", Signature: "EqQBCgIYAh==", API: "messages", Raw: signed}),
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "required", Temperature: model.Float(0), MaxTokens: 300},
			want: map[string]any{
				"model": "test-model", "max_tokens": 300.0, "temperature": 0.0,
				"system": []any{map[string]any{"type": "text", "text": "You are terse."}},
				"messages": []any{
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "List the files."}}},
					map[string]any{"role": "assistant", "content": []any{
						map[string]any{"type": "thinking", "thinking": "look", "signature": "EqQBCgIYAh=="},
						map[string]any{"type": "tool_use", "id": "call_1", "name": "bash", "input": map[string]any{"command": "ls"}},
					}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "call_1", "content": "a.go\nb.go"}}},
				},
				"tools": []any{map[string]any{"name": "bash", "description": "Run a shell command.",
					"input_schema": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []any{"command"}}}},
				"tool_choice": map[string]any{"type": "any"},
			},
		},
		{
			name: "consecutive requests merge, tool results first; Chat reasoning is not sent",
			history: []processor.Message{
				processor.UserMessage("go"),
				processor.NewResponse(processor.Thinking{Content: "hm"}, processor.ToolCall{ToolCallID: "t1", ToolName: "bash"}, processor.ToolCall{ToolCallID: "t2", ToolName: "bash", Args: `{"command":"pwd"}`}),
				processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "t1", Content: "ok"}),
				processor.NewRequest(processor.RetryPrompt{ToolName: "bash", ToolCallID: "t2", Content: "bad arguments"}, processor.UserPrompt{Content: "and then?"}),
			},
			settings: model.Settings{ToolChoice: "bash", Tools: []model.Tool{{Name: "bash"}}},
			want: map[string]any{
				"model": "test-model", "max_tokens": float64(DefaultMaxTokens),
				"messages": []any{
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "go"}}},
					map[string]any{"role": "assistant", "content": []any{
						map[string]any{"type": "tool_use", "id": "t1", "name": "bash", "input": map[string]any{}},
						map[string]any{"type": "tool_use", "id": "t2", "name": "bash", "input": map[string]any{"command": "pwd"}},
					}},
					map[string]any{"role": "user", "content": []any{
						map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
						map[string]any{"type": "tool_result", "tool_use_id": "t2", "content": "bad arguments", "is_error": true},
						map[string]any{"type": "text", "text": "and then?"},
					}},
				},
				"tools":       []any{map[string]any{"name": "bash", "input_schema": map[string]any{"type": "object", "properties": map[string]any{}}}},
				"tool_choice": map[string]any{"type": "tool", "name": "bash"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewServer(t, providertest.ReplyJSON(200, anthropicBody(`[{"type":"text","text":"ok"}]`)))
			if _, err := messagesModel(f).Request(context.Background(), tt.history, tt.settings); err != nil {
				t.Fatal(err)
			}
			got := f.Only(t)
			if got.Path != "/v1/messages" {
				t.Errorf("path %q, want /v1/messages", got.Path)
			}
			if k, v := got.Header.Get("X-Api-Key"), got.Header.Get("Anthropic-Version"); k != providertest.Key || v == "" {
				t.Errorf("x-api-key %q, anthropic-version %q: want the key and a version", k, v)
			}
			if a := got.Header.Get("Authorization"); a != "" {
				t.Errorf("Authorization %q, want none beside the x-api-key", a)
			}
			if diff := cmp.Diff(tt.want, got.Body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// anthropicBody is a Messages response with content.
func anthropicBody(content string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-2025","content":` + content + `,
	"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":300,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":7}}`
}

func TestResponse(t *testing.T) {
	thinking := `{"type":"thinking","thinking":"Listing.","signature":"EqQBCgIYAh=="}`
	redacted := `{"type":"redacted_thinking","data":"EmwKAhgB"}`
	search := `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`
	f := providertest.NewServer(t, providertest.ReplyJSON(200, anthropicBody(`[`+thinking+`,`+redacted+`,{"type":"text","text":"Two files."},
		{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"cat a.go"}},`+search+`]`)))
	got, err := messagesModel(f).Request(context.Background(), providertest.History(), model.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	want := processor.Message{
		Kind: processor.Response,
		Parts: []processor.Part{
			processor.Thinking{Content: "Listing.", Signature: "EqQBCgIYAh==", API: "messages", Raw: thinking},
			processor.Thinking{API: "messages", Raw: redacted},
			processor.Text{Content: "Two files."},
			processor.ToolCall{ToolCallID: "toolu_1", ToolName: "bash", Args: `{"command":"cat a.go"}`},
			processor.Opaque{API: "messages", Type: "server_tool_use", Raw: search},
		},
		// input_tokens leaves the cache's reads and writes out: they are
		// summed in.
		Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 2400, CachedInputTokens: 2000, CacheWriteInputTokens: 100, OutputTokens: 7, PromptMessages: 4},
			ModelName: "claude-test-2025", FinishReason: "end_turn"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}

	// What it answered goes back to it as it came.
	history := append(providertest.History(), got, processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "toolu_1", Content: "package a"}))
	f2 := providertest.NewServer(t, providertest.ReplyJSON(200, anthropicBody(`[]`)))
	if _, err := messagesModel(f2).Request(context.Background(), history, model.Settings{}); err != nil {
		t.Fatal(err)
	}
	msgs := f2.Only(t).Body["messages"].([]any)
	sent := msgs[len(msgs)-2].(map[string]any)["content"].([]any)
	var wantBlocks []any
	for _, raw := range []string{thinking, redacted, `{"type":"text","text":"Two files."}`, `{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"cat a.go"}}`, search} {
		var v any
		_ = json.Unmarshal([]byte(raw), &v)
		wantBlocks = append(wantBlocks, v)
	}
	if diff := cmp.Diff(wantBlocks, sent); diff != "" {
		t.Errorf("blocks sent back (-want +got):\n%s", diff)
	}
}

func TestStreaming(t *testing.T) {
	providertest.RunStreaming(t, func(f *providertest.Server) model.Model { return messagesModel(f) }, []providertest.StreamTest{
		{
			Name: "anthropic",
			Events: []string{
				"message_start", anthropicStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"ping", `{"type":"ping"}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo."}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`,
				"message_stop", `{"type":"message_stop"}`,
			},
			Want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Hello."}},
				Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 2400, CachedInputTokens: 2000, CacheWriteInputTokens: 100, OutputTokens: 12, PromptMessages: 4},
					ModelName: "claude-test-2025", FinishReason: "end_turn"},
			},
			WantDelta: []string{"Hel", "lo."},
		},
	})
}

// TestWithoutEnvironment checks that a model built WithoutEnvironment
// sends no key of the environment's, and that without it the
// environment's key is sent.
func TestWithoutEnvironment(t *testing.T) {
	providertest.RunWithoutEnvironment(t, []providertest.EnvTest{
		{Name: "anthropic", Build: func(base string, noEnv bool) model.Model {
			opts := []Option{WithMaxRetries(0), WithBaseURL(base)}
			if noEnv {
				opts = append(opts, WithoutEnvironment())
			}
			return New(opts...)
		}, Reply: anthropicBody(`[]`), Header: "X-Api-Key", EnvKey: providertest.EnvAnthropicKey},
	})
}

// TestInvalidRequests checks that what the Messages model cannot send is
// refused before any call, with an error naming it.
func TestInvalidRequests(t *testing.T) {
	providertest.RunInvalidRequests(t, func(f *providertest.Server) model.Model { return messagesModel(f) })
}

// TestRequestOptions checks that WithRequestOptions reaches the client's
// requests, and that an option of this package is no option of package
// model/openai's: an OpenAI model cannot be given one (the compiler
// refuses it), where it would be silently ignored.
func TestRequestOptions(t *testing.T) {
	f := providertest.NewServer(t, providertest.ReplyJSON(200, anthropicBody(`[]`)))
	opt := WithRequestOptions(option.WithHeader("X-Test", "anthropic"))
	if _, err := messagesModel(f, opt).Request(context.Background(), providertest.History(), model.Settings{}); err != nil {
		t.Fatal(err)
	}
	if got := f.Only(t).Header.Get("X-Test"); got != "anthropic" {
		t.Errorf("X-Test = %q, want %q", got, "anthropic")
	}
	if reflect.TypeOf(opt).Implements(reflect.TypeFor[openai.Option]()) {
		t.Errorf("%T is an openai.Option", opt)
	}
}
