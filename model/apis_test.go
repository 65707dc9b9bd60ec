package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// replyEvents answers with a server-sent event stream: each pair is an
// event's name and its data.
func replyEvents(pairs ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := 0; i+1 < len(pairs); i += 2 {
			// One line of data: a body written over several lines is
			// joined.
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", pairs[i], strings.ReplaceAll(pairs[i+1], "\n", ""))
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
		}
	}
}

// both models under test, built on one fake server.
func responsesModel(f *fake, opts ...Option) Model {
	base := []Option{WithBaseURL(f.srv.URL), WithAPIKey(testKey), WithMaxRetries(0), WithModel("test-model")}
	return NewResponses(append(base, opts...)...)
}

func anthropicModel(f *fake, opts ...Option) Model {
	base := []Option{WithBaseURL(f.srv.URL), WithAPIKey(testKey), WithMaxRetries(0), WithModel("test-model")}
	return NewAnthropic(append(base, opts...)...)
}

// thinkingHistory is testHistory with the assistant's reasoning, as each
// API reported it.
func thinkingHistory(th processor.Thinking) []processor.Message {
	h := testHistory()
	h[2].Parts = append([]processor.Part{th}, h[2].Parts...)
	return h
}

func TestResponsesRequestBody(t *testing.T) {
	reasoning := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA=="}`
	tests := []struct {
		name     string
		history  []processor.Message
		settings Settings
		want     map[string]any
	}{
		{
			name:     "history and settings",
			history:  thinkingHistory(processor.Thinking{Content: "look", API: "responses", Raw: reasoning}),
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "bash", Temperature: Float(0), MaxTokens: 300},
			want: map[string]any{
				"model": "test-model", "store": false, "temperature": 0.0, "max_output_tokens": 300.0,
				"input": []any{
					map[string]any{"type": "message", "role": "system", "content": "You are terse."},
					map[string]any{"type": "message", "role": "user", "content": "List the files."},
					map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}, "encrypted_content": "gAAA=="},
					map[string]any{"type": "message", "role": "assistant", "content": ""},
					map[string]any{"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": `{"command":"ls"}`},
					map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "a.go\nb.go"},
				},
				"tools": []any{map[string]any{"type": "function", "name": "bash", "description": "Run a shell command.", "strict": false,
					"parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []any{"command"}}}},
				"tool_choice": map[string]any{"type": "function", "name": "bash"},
			},
		},
		{
			name: "thinking of another API is not sent, a failed call is",
			history: []processor.Message{
				processor.UserMessage("go"),
				processor.NewResponse(processor.Thinking{Content: "hm", Signature: "sig", API: "messages"}, processor.ToolCall{ToolCallID: "t1", ToolName: "bash", Args: "{}"}),
				processor.NewRequest(processor.RetryPrompt{ToolName: "bash", ToolCallID: "t1", Content: "bad arguments"}),
			},
			// No tool choice goes without tools.
			settings: Settings{ToolChoice: "none"},
			want: map[string]any{
				"model": "test-model", "store": false,
				"input": []any{
					map[string]any{"type": "message", "role": "user", "content": "go"},
					map[string]any{"type": "function_call", "call_id": "t1", "name": "bash", "arguments": "{}"},
					map[string]any{"type": "function_call_output", "call_id": "t1", "output": "bad arguments"},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, responsesBody(`[]`, "")))
			if _, err := responsesModel(f).Request(context.Background(), tt.history, tt.settings); err != nil {
				t.Fatal(err)
			}
			got := f.only(t)
			if got.path != "/responses" {
				t.Errorf("path %q, want /responses", got.path)
			}
			if a := got.header.Get("Authorization"); a != "Bearer "+testKey {
				t.Errorf("Authorization %q, want the key as a bearer token", a)
			}
			if diff := cmp.Diff(tt.want, got.body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// responsesBody is a completed Responses response with output and usage.
func responsesBody(output, usage string) string {
	if usage == "" {
		usage = `{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`
	}
	return `{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","model":"test-model-2025",
	"output":` + output + `,"usage":` + usage + `,"error":null,"incomplete_details":null}`
}

func TestResponsesResponse(t *testing.T) {
	reasoning := `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Listing."}],"encrypted_content":"gAAA=="}`
	search := `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"go"}}`
	tests := []struct {
		name string
		body string
		want processor.Message
	}{
		{
			name: "reasoning, text, a call and an unknown item, with usage",
			body: responsesBody(`[`+reasoning+`,
				{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Two files.","annotations":[]}]},
				{"type":"function_call","id":"fc_1","call_id":"call_a","name":"bash","arguments":"{\"command\":\"cat a.go\"}","status":"completed"},
				`+search+`]`,
				`{"input_tokens":1200,"output_tokens":7,"total_tokens":1207,"input_tokens_details":{"cached_tokens":1024},"output_tokens_details":{"reasoning_tokens":0}}`),
			want: processor.Message{
				Kind: processor.Response,
				Parts: []processor.Part{
					processor.Thinking{Content: "Listing.", API: "responses", Raw: reasoning},
					processor.Text{Content: "Two files."},
					processor.ToolCall{ToolCallID: "call_a", ToolName: "bash", Args: `{"command":"cat a.go"}`},
					processor.Opaque{API: "responses", Type: "web_search_call", Raw: search},
				},
				Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 7, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "completed"},
			},
		},
		{
			name: "refusal, incomplete",
			body: strings.Replace(strings.Replace(responsesBody(`[{"type":"message","id":"msg_1","role":"assistant","status":"incomplete","content":[{"type":"refusal","refusal":"No."}]}]`, ""),
				`"status":"completed"`, `"status":"incomplete"`, 1), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1),
			want: processor.Message{
				Kind: processor.Response,
				Meta: &processor.Meta{Refusal: "No.", Usage: processor.Usage{PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "max_output_tokens"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, tt.body))
			got, err := responsesModel(f).Request(context.Background(), testHistory(), Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// TestModelErrors checks that the Responses and Anthropic models classify
// failures as the Chat model does.
func TestModelErrors(t *testing.T) {
	type build func(f *fake, opts ...Option) Model
	anthropicErr := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
	}
	tests := []struct {
		name     string
		model    build
		handler  http.HandlerFunc
		settings Settings
		want     errorCase
	}{
		{
			name:    "responses: context overflow",
			model:   responsesModel,
			handler: replyJSON(400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`),
			want: errorCase{want: Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Message: "Your input exceeds the context window of this model."},
				is: []error{ErrContextOverflow}, contains: "context window"},
		},
		{
			name:    "responses: bad key, quoted",
			model:   responsesModel,
			handler: replyJSON(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			want: errorCase{want: Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error", Message: "Incorrect API key provided: [redacted key]."},
				contains: "[redacted key]"},
		},
		{
			name:    "responses: rate limit",
			model:   responsesModel,
			handler: replyJSON(429, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			want:    errorCase{want: Error{StatusCode: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached."}, contains: "Rate limit"},
		},
		{
			name:    "responses: failed response",
			model:   responsesModel,
			handler: replyJSON(200, strings.Replace(strings.Replace(responsesBody(`[]`, ""), `"status":"completed"`, `"status":"failed"`, 1), `"error":null`, `"error":{"code":"server_error","message":"The model failed."}`, 1)),
			want:    errorCase{want: Error{StatusCode: 200, Code: "server_error", Message: "The model failed."}, contains: "The model failed."},
		},
		{
			name:     "responses: timeout",
			model:    responsesModel,
			handler:  blockUntilDone,
			settings: Settings{Timeout: 50 * time.Millisecond},
			want:     errorCase{want: Error{Message: "request timed out after 50ms"}, is: []error{context.DeadlineExceeded}, contains: "timed out"},
		},
		{
			name:     "responses: stream cut off",
			model:    responsesModel,
			handler:  replyEvents("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","sequence_number":1,"logprobs":[]}`),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{want: Error{StatusCode: 200, Message: "response cut off: the stream ended after 1 events without response.completed"},
				is: []error{ErrIncompleteResponse}, contains: "cut off"},
		},
		{
			name:    "anthropic: prompt too long",
			model:   anthropicModel,
			handler: replyJSON(400, anthropicErr("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")),
			want: errorCase{want: Error{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"},
				is: []error{ErrContextOverflow}, contains: "prompt is too long"},
		},
		{
			name:    "anthropic: another bad request is no overflow",
			model:   anthropicModel,
			handler: replyJSON(400, anthropicErr("invalid_request_error", "messages: roles must alternate")),
			want:    errorCase{want: Error{StatusCode: 400, Type: "invalid_request_error", Message: "messages: roles must alternate"}, contains: "alternate"},
		},
		{
			name:    "anthropic: bad key, quoted",
			model:   anthropicModel,
			handler: replyJSON(401, anthropicErr("authentication_error", "invalid x-api-key "+testKey)),
			want:    errorCase{want: Error{StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key [redacted key]"}, contains: "invalid x-api-key"},
		},
		{
			name:    "anthropic: rate limit",
			model:   anthropicModel,
			handler: replyJSON(429, anthropicErr("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
			want:    errorCase{want: Error{StatusCode: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit"}, contains: "rate limit"},
		},
		{
			name:    "anthropic: overloaded",
			model:   anthropicModel,
			handler: replyJSON(529, anthropicErr("overloaded_error", "Overloaded")),
			want:    errorCase{want: Error{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}, contains: "Overloaded"},
		},
		{
			name:     "anthropic: timeout",
			model:    anthropicModel,
			handler:  blockUntilDone,
			settings: Settings{Timeout: 50 * time.Millisecond},
			want:     errorCase{want: Error{Message: "request timed out after 50ms"}, is: []error{context.DeadlineExceeded}, contains: "timed out"},
		},
		{
			name:  "anthropic: error event in a stream",
			model: anthropicModel,
			handler: replyEvents("message_start", anthropicStart,
				"error", anthropicErr("overloaded_error", "Overloaded")),
			settings: Settings{OnText: func(string) {}},
			want:     errorCase{want: Error{StatusCode: 200, Type: "overloaded_error", Message: "Overloaded"}, contains: "Overloaded"},
		},
		{
			name:     "anthropic: stream cut off",
			model:    anthropicModel,
			handler:  replyEvents("message_start", anthropicStart),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{want: Error{StatusCode: 200, Message: "response cut off: the stream ended after 1 events without message_stop"},
				is: []error{ErrIncompleteResponse}, contains: "cut off"},
		},
		{
			name:  "anthropic: not JSON",
			model: anthropicModel,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, "<html>")
			},
			want: errorCase{want: Error{StatusCode: 200, Message: `response has Content-Type "text/html", not JSON`}, is: []error{ErrMalformedResponse}, contains: "not JSON"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			_, err := tt.model(f).Request(context.Background(), testHistory(), tt.settings)
			checkError(t, err, tt.want)
		})
	}
}

const anthropicStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-2025","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":300,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}`

func TestAnthropicRequestBody(t *testing.T) {
	signed := `{"type":"thinking","thinking":"look","signature":"EqQBCgIYAh=="}`
	tests := []struct {
		name     string
		history  []processor.Message
		settings Settings
		want     map[string]any
	}{
		{
			name:     "history and settings",
			history:  thinkingHistory(processor.Thinking{Content: "look", Signature: "EqQBCgIYAh==", API: "messages", Raw: signed}),
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "required", Temperature: Float(0), MaxTokens: 300},
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
			settings: Settings{ToolChoice: "bash", Tools: []Tool{{Name: "bash"}}},
			want: map[string]any{
				"model": "test-model", "max_tokens": float64(DefaultAnthropicMaxTokens),
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
			f := newFake(t, replyJSON(200, anthropicBody(`[{"type":"text","text":"ok"}]`)))
			if _, err := anthropicModel(f).Request(context.Background(), tt.history, tt.settings); err != nil {
				t.Fatal(err)
			}
			got := f.only(t)
			if got.path != "/v1/messages" {
				t.Errorf("path %q, want /v1/messages", got.path)
			}
			if k, v := got.header.Get("X-Api-Key"), got.header.Get("Anthropic-Version"); k != testKey || v == "" {
				t.Errorf("x-api-key %q, anthropic-version %q: want the key and a version", k, v)
			}
			if a := got.header.Get("Authorization"); a != "" {
				t.Errorf("Authorization %q, want none beside the x-api-key", a)
			}
			if diff := cmp.Diff(tt.want, got.body); diff != "" {
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

func TestAnthropicResponse(t *testing.T) {
	thinking := `{"type":"thinking","thinking":"Listing.","signature":"EqQBCgIYAh=="}`
	redacted := `{"type":"redacted_thinking","data":"EmwKAhgB"}`
	search := `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`
	f := newFake(t, replyJSON(200, anthropicBody(`[`+thinking+`,`+redacted+`,{"type":"text","text":"Two files."},
		{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"cat a.go"}},`+search+`]`)))
	got, err := anthropicModel(f).Request(context.Background(), testHistory(), Settings{})
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
	history := append(testHistory(), got, processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "toolu_1", Content: "package a"}))
	f2 := newFake(t, replyJSON(200, anthropicBody(`[]`)))
	if _, err := anthropicModel(f2).Request(context.Background(), history, Settings{}); err != nil {
		t.Fatal(err)
	}
	msgs := f2.only(t).body["messages"].([]any)
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

func TestModelStreaming(t *testing.T) {
	tests := []struct {
		name      string
		model     func(f *fake, opts ...Option) Model
		events    []string
		want      processor.Message
		wantDelta []string
	}{
		{
			name:  "responses",
			model: responsesModel,
			events: []string{
				"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"test-model-2025","output":[]}}`,
				"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","sequence_number":1,"logprobs":[]}`,
				"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo.","sequence_number":2,"logprobs":[]}`,
				"response.completed", `{"type":"response.completed","sequence_number":3,"response":` + responsesBody(`[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello.","annotations":[]}]}]`,
					`{"input_tokens":900,"output_tokens":12,"total_tokens":912,"input_tokens_details":{"cached_tokens":512},"output_tokens_details":{"reasoning_tokens":0}}`) + `}`,
			},
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Hello."}},
				Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 900, CachedInputTokens: 512, OutputTokens: 12, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "completed"},
			},
			wantDelta: []string{"Hel", "lo."},
		},
		{
			name:  "anthropic",
			model: anthropicModel,
			events: []string{
				"message_start", anthropicStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"ping", `{"type":"ping"}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo."}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`,
				"message_stop", `{"type":"message_stop"}`,
			},
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Hello."}},
				Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 2400, CachedInputTokens: 2000, CacheWriteInputTokens: 100, OutputTokens: 12, PromptMessages: 4},
					ModelName: "claude-test-2025", FinishReason: "end_turn"},
			},
			wantDelta: []string{"Hel", "lo."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyEvents(tt.events...))
			var deltas []string
			got, err := tt.model(f).Request(context.Background(), testHistory(), Settings{OnText: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDelta, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
			if s := f.only(t).body["stream"]; s != true {
				t.Errorf("body's stream = %v, want true", s)
			}
		})
	}
}

// TestModelsWithoutEnvironment checks that a model built WithoutEnvironment
// sends no key of the environment's, and that without it the environment's
// key is sent.
func TestModelsWithoutEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env-openai-0123456789")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-0123456789")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	tests := []struct {
		name   string
		build  func(base string, opts ...Option) Model
		reply  string
		header string
		envKey string
	}{
		{"chat", func(base string, opts ...Option) Model { return NewOpenAI(append(opts, WithBaseURL(base))...) },
			completion(`{"role":"assistant","content":"ok"}`, ""), "Authorization", "Bearer sk-env-openai-0123456789"},
		{"responses", func(base string, opts ...Option) Model { return NewResponses(append(opts, WithBaseURL(base))...) },
			responsesBody(`[]`, ""), "Authorization", "Bearer sk-env-openai-0123456789"},
		{"anthropic", func(base string, opts ...Option) Model { return NewAnthropic(append(opts, WithBaseURL(base))...) },
			anthropicBody(`[]`), "X-Api-Key", "sk-ant-env-0123456789"},
	}
	for _, tt := range tests {
		for _, noEnv := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/without=%v", tt.name, noEnv), func(t *testing.T) {
				f := newFake(t, replyJSON(200, tt.reply))
				opts := []Option{WithMaxRetries(0)}
				if noEnv {
					opts = append(opts, WithoutEnvironment())
				}
				if _, err := tt.build(f.srv.URL, opts...).Request(context.Background(), testHistory(), Settings{}); err != nil {
					t.Fatal(err)
				}
				h := f.only(t).header
				want := tt.envKey
				if noEnv {
					want = ""
				}
				if got := h.Get(tt.header); got != want {
					t.Errorf("%s = %q, want %q", tt.header, got, want)
				}
				if noEnv && (h.Get("Authorization") != "" || h.Get("X-Api-Key") != "") {
					t.Errorf("a credential was sent: %v", h)
				}
			})
		}
	}
}

// TestModelInvalidRequests checks that what the Responses and Anthropic
// models cannot send is refused before any call, with an error naming it.
func TestModelInvalidRequests(t *testing.T) {
	foreign := []processor.Message{processor.UserMessage("hi"),
		processor.NewResponse(processor.Opaque{API: "chat", Type: "audio", Raw: `{"id":"a1"}`})}
	image := []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
		{Type: "text", Text: "look"}, {Type: "image_url", Data: json.RawMessage(`{"type":"image_url","image_url":{"url":"https://x/y.png"}}`)}}})}
	tests := []struct {
		name     string
		history  []processor.Message
		settings Settings
		want     string
	}{
		{"required with no tools", testHistory(), Settings{ToolChoice: "required"}, `tool choice "required" with no tools offered`},
		{"a choice of no offered tool", testHistory(), Settings{ToolChoice: "grep", Tools: []Tool{bashTool}}, `tool choice "grep" names no offered tool`},
		{"negative max tokens", testHistory(), Settings{MaxTokens: -1}, "negative max tokens -1"},
		{"bad schema", testHistory(), Settings{Tools: []Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, `tool "x": parameters must be a JSON object schema`},
		{"an item of another API", foreign, Settings{}, `message 1 part 0: chat item of type "audio" cannot be sent`},
		{"an image", image, Settings{}, `message 0 part 0: user content part 1 has type "image_url": only text is sent`},
	}
	for _, tt := range tests {
		for api, build := range map[string]func(f *fake, opts ...Option) Model{"responses": responsesModel, "anthropic": anthropicModel} {
			t.Run(api+"/"+tt.name, func(t *testing.T) {
				f := newFake(t, replyJSON(200, "{}"))
				_, err := build(f).Request(context.Background(), tt.history, tt.settings)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want one containing %q", err, tt.want)
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.requests) != 0 {
					t.Errorf("%d requests were sent, want none", len(f.requests))
				}
			})
		}
	}
}

// TestAnthropicRequestOptions checks that WithAnthropicRequestOptions
// reaches the Anthropic client's requests, and only them: an OpenAI model
// built with the same options sends without them.
func TestAnthropicRequestOptions(t *testing.T) {
	opt := WithAnthropicRequestOptions(aoption.WithHeader("X-Test", "anthropic"))
	tests := []struct {
		name  string
		build func(f *fake) Model
		reply string
		want  string
	}{
		{"anthropic", func(f *fake) Model { return anthropicModel(f, opt) }, anthropicBody(`[]`), "anthropic"},
		{"chat", func(f *fake) Model {
			return NewOpenAI(WithBaseURL(f.srv.URL), WithAPIKey(testKey), WithMaxRetries(0), opt)
		}, completion(`{"role":"assistant","content":"ok"}`, ""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, tt.reply))
			if _, err := tt.build(f).Request(context.Background(), testHistory(), Settings{}); err != nil {
				t.Fatal(err)
			}
			if got := f.only(t).header.Get("X-Test"); got != tt.want {
				t.Errorf("X-Test = %q, want %q", got, tt.want)
			}
		})
	}
}
