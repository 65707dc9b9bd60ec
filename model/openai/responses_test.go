package openai

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// responsesModel is a Responses model of the fake server f.
func responsesModel(f *providertest.Server, opts ...Option) model.Model {
	base := []Option{WithBaseURL(f.URL), WithAPIKey(providertest.Key), WithMaxRetries(0), WithModel("test-model")}
	return NewResponses(append(base, opts...)...)
}

func TestResponsesRequestBody(t *testing.T) {
	reasoning := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA=="}`
	tests := []struct {
		name     string
		history  []processor.Message
		settings model.Settings
		want     map[string]any
	}{
		{
			name:     "history and settings",
			history:  providertest.ThinkingHistory(processor.Thinking{Content: "look", API: "responses", Raw: reasoning}),
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "bash", Temperature: model.Float(0), MaxTokens: 300},
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
			settings: model.Settings{ToolChoice: "none"},
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
			f := providertest.NewServer(t, providertest.ReplyJSON(200, responsesBody(`[]`, "")))
			if _, err := responsesModel(f).Request(context.Background(), tt.history, tt.settings); err != nil {
				t.Fatal(err)
			}
			got := f.Only(t)
			if got.Path != "/responses" {
				t.Errorf("path %q, want /responses", got.Path)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer "+providertest.Key {
				t.Errorf("Authorization %q, want the key as a bearer token", a)
			}
			if diff := cmp.Diff(tt.want, got.Body); diff != "" {
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
			f := providertest.NewServer(t, providertest.ReplyJSON(200, tt.body))
			got, err := responsesModel(f).Request(context.Background(), providertest.History(), model.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesErrors checks that the Responses model classifies failures
// as the Chat model does.
func TestResponsesErrors(t *testing.T) {
	providertest.RunErrors(t, func(f *providertest.Server) model.Model { return responsesModel(f) }, []providertest.ErrorTest{
		{
			Name:    "context overflow",
			Handler: providertest.ReplyJSON(400, `{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`),
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Message: "Your input exceeds the context window of this model."},
				Is: []error{model.ErrContextOverflow}, Contains: "context window"},
		},
		{
			Name:    "bad key, quoted",
			Handler: providertest.ReplyJSON(401, `{"error":{"message":"Incorrect API key provided: `+providertest.Key+`.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error", Message: "Incorrect API key provided: [redacted key]."},
				Contains: "[redacted key]"},
		},
		{
			Name:    "rate limit",
			Handler: providertest.ReplyJSON(429, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached."}, Contains: "Rate limit"},
		},
		{
			Name:    "failed response",
			Handler: providertest.ReplyJSON(200, strings.Replace(strings.Replace(responsesBody(`[]`, ""), `"status":"completed"`, `"status":"failed"`, 1), `"error":null`, `"error":{"code":"server_error","message":"The model failed."}`, 1)),
			Want:    providertest.ErrorCase{Want: model.Error{StatusCode: 200, Code: "server_error", Message: "The model failed."}, Contains: "The model failed."},
		},
		{
			Name:     "timeout",
			Handler:  providertest.BlockUntilDone,
			Settings: model.Settings{Timeout: 50 * time.Millisecond},
			Want:     providertest.ErrorCase{Want: model.Error{Message: "request timed out after 50ms"}, Is: []error{context.DeadlineExceeded}, Contains: "timed out"},
		},
		{
			Name:     "stream cut off",
			Handler:  providertest.ReplyEvents("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","sequence_number":1,"logprobs":[]}`),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{Want: model.Error{StatusCode: 200, Message: "response cut off: the stream ended after 1 events without response.completed"},
				Is: []error{model.ErrIncompleteResponse}, Contains: "cut off"},
		},
	})
}

func TestResponsesStreaming(t *testing.T) {
	providertest.RunStreaming(t, func(f *providertest.Server) model.Model { return responsesModel(f) }, []providertest.StreamTest{
		{
			Name: "responses",
			Events: []string{
				"response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"test-model-2025","output":[]}}`,
				"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","sequence_number":1,"logprobs":[]}`,
				"response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo.","sequence_number":2,"logprobs":[]}`,
				"response.completed", `{"type":"response.completed","sequence_number":3,"response":` + responsesBody(`[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello.","annotations":[]}]}]`,
					`{"input_tokens":900,"output_tokens":12,"total_tokens":912,"input_tokens_details":{"cached_tokens":512},"output_tokens_details":{"reasoning_tokens":0}}`) + `}`,
			},
			Want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Hello."}},
				Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 900, CachedInputTokens: 512, OutputTokens: 12, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "completed"},
			},
			WantDelta: []string{"Hel", "lo."},
		},
	})
}

// TestModelsWithoutEnvironment checks that a model built WithoutEnvironment
// sends no key of the environment's, and that without it the environment's
// key is sent.
func TestModelsWithoutEnvironment(t *testing.T) {
	build := func(newModel func(...Option) model.Model) func(string, bool) model.Model {
		return func(base string, noEnv bool) model.Model {
			opts := []Option{WithMaxRetries(0), WithBaseURL(base)}
			if noEnv {
				opts = append(opts, WithoutEnvironment())
			}
			return newModel(opts...)
		}
	}
	providertest.RunWithoutEnvironment(t, []providertest.EnvTest{
		{Name: "chat", Build: build(func(opts ...Option) model.Model { return New(opts...) }),
			Reply: completion(`{"role":"assistant","content":"ok"}`, ""), Header: "Authorization", EnvKey: "Bearer " + providertest.EnvOpenAIKey},
		{Name: "responses", Build: build(func(opts ...Option) model.Model { return NewResponses(opts...) }),
			Reply: responsesBody(`[]`, ""), Header: "Authorization", EnvKey: "Bearer " + providertest.EnvOpenAIKey},
	})
}

// TestResponsesInvalidRequests checks that what the Responses model cannot
// send is refused before any call, with an error naming it.
func TestResponsesInvalidRequests(t *testing.T) {
	providertest.RunInvalidRequests(t, func(f *providertest.Server) model.Model { return responsesModel(f) })
}
