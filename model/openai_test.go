package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/processor"
)

const testKey = "sk-test-secret-key-0123456789"

// fake is an httptest server for the model APIs (Chat Completions,
// Responses, Messages): it records every request it receives and answers
// with its handler.
type fake struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []recorded
}

type recorded struct {
	path   string
	auth   string
	ctype  string
	header http.Header
	body   map[string]any
	rawErr error
}

func newFake(t *testing.T, handler http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recorded{path: r.URL.Path, auth: r.Header.Get("Authorization"), ctype: r.Header.Get("Content-Type"), header: r.Header.Clone()}
		data, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(data, &rec.body)
		}
		if err != nil {
			t.Errorf("request body %q: %v", data, err)
		}
		rec.rawErr = err
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// only returns the single request the server received.
func (f *fake) only(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 1 {
		t.Fatalf("server received %d requests, want 1", len(f.requests))
	}
	r := f.requests[0]
	if r.rawErr != nil {
		t.Fatalf("request body: %v", r.rawErr)
	}
	return r
}

func (f *fake) model(opts ...Option) *OpenAI {
	base := []Option{WithBaseURL(f.srv.URL), WithAPIKey(testKey), WithMaxRetries(0), WithModel("test-model")}
	return NewOpenAI(append(base, opts...)...)
}

// replyJSON answers with status and a JSON body.
func replyJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// replySSE answers with a server-sent event stream of the given data lines.
func replySSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
		}
	}
}

// blockUntilDone answers nothing until the client gives up.
func blockUntilDone(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func completion(message string, usage string) string {
	if usage == "" {
		usage = `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"test-model-2025",
	"choices":[{"index":0,"message":` + message + `,"finish_reason":"stop","logprobs":null}],"usage":` + usage + `}`
}

// history is a small valid history ending with a tool return.
func testHistory() []processor.Message {
	return []processor.Message{
		processor.SystemMessage("You are terse."),
		processor.UserMessage("List the files."),
		processor.NewResponse(processor.Text{Content: ""}, processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "call_1", Content: "a.go\nb.go"}),
	}
}

var bashTool = Tool{
	Name:        "bash",
	Description: "Run a shell command.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
}

func TestOpenAIRequestBody(t *testing.T) {
	wantMessages := []any{
		map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "List the files."},
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"ls"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "a.go\nb.go"},
	}
	wantTools := []any{map[string]any{"type": "function", "function": map[string]any{
		"name":        "bash",
		"description": "Run a shell command.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}},
			"required": []any{"command"}},
	}}}
	tests := []struct {
		name     string
		settings Settings
		// want holds the body keys checked, absent the keys that must not
		// be sent.
		want   map[string]any
		absent []string
	}{
		{
			name:     "defaults send only model and messages",
			settings: Settings{},
			want:     map[string]any{"model": "test-model", "messages": wantMessages},
			absent:   []string{"tools", "tool_choice", "temperature", "max_completion_tokens", "stream"},
		},
		{
			name:     "tools, auto, explicit zero temperature, max tokens",
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "auto", Temperature: Float(0), MaxTokens: 256},
			want: map[string]any{"model": "test-model", "messages": wantMessages, "tools": wantTools,
				"tool_choice": "auto", "temperature": 0.0, "max_completion_tokens": 256.0},
		},
		{
			name:     "tool choice none",
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "none"},
			want:     map[string]any{"tool_choice": "none"},
			absent:   []string{"temperature"},
		},
		{
			name:     "tool choice required",
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "required", Temperature: Float(0.7)},
			want:     map[string]any{"tool_choice": "required", "temperature": 0.7},
		},
		{
			name:     "tool choice by name",
			settings: Settings{Tools: []Tool{bashTool}, ToolChoice: "bash"},
			want:     map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}},
		},
		{
			name:     "strict tool without parameters",
			settings: Settings{Tools: []Tool{{Name: "now", Strict: true}}},
			want:     map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "now", "strict": true}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, completion(`{"role":"assistant","content":"ok"}`, "")))
			if _, err := f.model().Request(context.Background(), testHistory(), tt.settings); err != nil {
				t.Fatal(err)
			}
			req := f.only(t)
			if req.path != "/chat/completions" {
				t.Errorf("path = %q, want /chat/completions", req.path)
			}
			if req.auth != "Bearer "+testKey {
				t.Errorf("Authorization = %q, want the bearer key", req.auth)
			}
			if !strings.HasPrefix(req.ctype, "application/json") {
				t.Errorf("Content-Type = %q", req.ctype)
			}
			got := map[string]any{}
			for k := range tt.want {
				if v, ok := req.body[k]; ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			for _, k := range tt.absent {
				if v, ok := req.body[k]; ok {
					t.Errorf("body has %q = %v, want it absent", k, v)
				}
			}
		})
	}
}

func TestOpenAIResponse(t *testing.T) {
	tests := []struct {
		name    string
		message string
		usage   string
		want    processor.Message
	}{
		{
			name:    "text with usage",
			message: `{"role":"assistant","content":"Two files.","refusal":null}`,
			usage:   `{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1024}}`,
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Two files."}},
				Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 1200, CachedInputTokens: 1024, OutputTokens: 7, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "stop"},
			},
		},
		{
			name: "tool calls without content",
			message: `{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat a.go\"}"}},
				{"id":"call_b","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat b.go\"}"}}]}`,
			usage: `{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}`,
			want: processor.Message{
				Kind: processor.Response,
				Parts: []processor.Part{
					processor.ToolCall{ToolCallID: "call_a", ToolName: "bash", Args: `{"command":"cat a.go"}`},
					processor.ToolCall{ToolCallID: "call_b", ToolName: "bash", Args: `{"command":"cat b.go"}`},
				},
				Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 50, OutputTokens: 20, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "stop"},
			},
		},
		{
			name:    "refusal",
			message: `{"role":"assistant","content":null,"refusal":"I can't help with that."}`,
			want: processor.Message{
				Kind: processor.Response,
				Meta: &processor.Meta{Refusal: "I can't help with that.", Usage: processor.Usage{PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "stop"},
			},
		},
		{
			name:    "smallest accepted body",
			message: `{"content":"hi"}`,
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "hi"}},
				Meta:  &processor.Meta{Usage: processor.Usage{PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "stop"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, completion(tt.message, tt.usage)))
			got, err := f.model().Request(context.Background(), testHistory(), Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

// errorCase describes an expected failure.
type errorCase struct {
	want     Error // compared without Err
	is       []error
	contains string
}

func checkError(t *testing.T, err error, want errorCase) {
	t.Helper()
	if err == nil {
		t.Fatal("Request succeeded, want an error")
	}
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("error %q (%T) is not a *model.Error", err, err)
	}
	if diff := cmp.Diff(want.want, *me, cmpopts.IgnoreFields(Error{}, "Err")); diff != "" {
		t.Errorf("error fields (-want +got):\n%s", diff)
	}
	for _, target := range want.is {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(%q, %v) = false", err, target)
		}
	}
	if errors.Is(err, ErrContextOverflow) != containsErr(want.is, ErrContextOverflow) {
		t.Errorf("errors.Is(%q, ErrContextOverflow) = %v, want %v", err, errors.Is(err, ErrContextOverflow), containsErr(want.is, ErrContextOverflow))
	}
	if !strings.Contains(err.Error(), want.contains) {
		t.Errorf("error %q does not contain %q", err, want.contains)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", err), testKey) {
		t.Errorf("error %q contains the API key", err)
	}
}

func containsErr(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		settings Settings
		want     errorCase
	}{
		{
			name: "400 context length exceeded",
			handler: replyJSON(400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
				"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			want: errorCase{
				want: Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error",
					Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."},
				is:       []error{ErrContextOverflow},
				contains: "status 400 (context_length_exceeded): This model's maximum context length",
			},
		},
		{
			name:    "401 bad key",
			handler: replyJSON(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			want: errorCase{
				want:     Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error", Message: "Incorrect API key provided."},
				contains: "status 401 (invalid_api_key): Incorrect API key provided.",
			},
		},
		{
			name:    "401 message quoting a masked key",
			handler: replyJSON(401, `{"error":{"message":"Incorrect API key provided: sk-proj-********************abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			want: errorCase{
				want: Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error",
					Message: "Incorrect API key provided: [redacted key]. You can find your API key at https://platform.openai.com/account/api-keys."},
				contains: "Incorrect API key provided: [redacted key]. You can find",
			},
		},
		{
			name:    "429 rate limited",
			handler: replyJSON(429, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			want: errorCase{
				want:     Error{StatusCode: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached."},
				contains: "status 429",
			},
		},
		{
			name:    "500 server error",
			handler: replyJSON(500, `{"error":{"message":"The server had an error.","type":"server_error","param":null,"code":null}}`),
			want: errorCase{
				want:     Error{StatusCode: 500, Type: "server_error", Message: "The server had an error."},
				contains: "status 500: The server had an error.",
			},
		},
		{
			name: "502 with an HTML body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				io.WriteString(w, "<html><body>Bad Gateway</body></html>")
			},
			want: errorCase{
				want:     Error{StatusCode: 502, Message: "Bad Gateway (no error message in the response)"},
				contains: "status 502: Bad Gateway",
			},
		},
		{
			name:    "404 with a detail",
			handler: replyJSON(404, `{"detail":"Not Found"}`),
			want: errorCase{
				want:     Error{StatusCode: 404, Message: "Not Found: Not Found"},
				contains: "status 404: Not Found: Not Found",
			},
		},
		{
			name:    "404 with a string error",
			handler: replyJSON(404, `{"error":"model not found"}`),
			want: errorCase{
				want:     Error{StatusCode: 404, Message: "Not Found: model not found"},
				contains: "status 404: Not Found: model not found",
			},
		},
		{
			name:    "malformed JSON body",
			handler: replyJSON(200, `{"id":"x","choices":[{"message":{"content":"hi"}`),
			want: errorCase{
				want:     Error{StatusCode: 200, Message: "malformed JSON in response: error parsing response json: unexpected EOF"},
				contains: "malformed JSON in response",
			},
		},
		{
			name: "200 with an HTML body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, "<html><body>Sign in</body></html>")
			},
			want: errorCase{
				want:     Error{StatusCode: 200, Message: `response has Content-Type "text/html; charset=utf-8", not JSON`},
				contains: "not JSON",
			},
		},
		{
			name:    "no choices",
			handler: replyJSON(200, `{"id":"x","object":"chat.completion","model":"m","choices":[]}`),
			want: errorCase{
				want:     Error{StatusCode: 200, Message: "response has no choices"},
				contains: "response has no choices",
			},
		},
		{
			name:    "tool call of another type",
			handler: replyJSON(200, completion(`{"content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"grammar","input":"x"}}]}`, "")),
			want: errorCase{
				want:     Error{StatusCode: 200, Message: `response tool call 0 has unsupported type "custom"`},
				contains: "unsupported type",
			},
		},
		{
			name:     "server slower than the timeout",
			handler:  blockUntilDone,
			settings: Settings{Timeout: 50 * time.Millisecond},
			want: errorCase{
				want:     Error{Message: "request timed out after 50ms"},
				is:       []error{context.DeadlineExceeded},
				contains: "request timed out after 50ms",
			},
		},
		{
			name:     "stream: 400 context length exceeded",
			handler:  replyJSON(400, `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{
				want:     Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Message: "too long"},
				is:       []error{ErrContextOverflow},
				contains: "too long",
			},
		},
		{
			name: "stream: error event",
			handler: replySSE(
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
				`{"error":{"message":"The server is overloaded.","type":"server_error","code":"server_overloaded"}}`,
			),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{
				want:     Error{StatusCode: 200, Code: "server_overloaded", Type: "server_error", Message: "stream error: The server is overloaded."},
				contains: "The server is overloaded.",
			},
		},
		{
			name:     "stream: malformed chunk",
			handler:  replySSE(`{"id":"c1","choices":[`),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{
				want:     Error{StatusCode: 200, Message: "malformed JSON in response: unexpected end of JSON input"},
				contains: "malformed JSON in response",
			},
		},
		{
			name:     "stream: no chunks",
			handler:  replySSE(`[DONE]`),
			settings: Settings{OnText: func(string) {}},
			want: errorCase{
				want:     Error{StatusCode: 200, Message: "response has no choices"},
				contains: "response has no choices",
			},
		},
		{
			name:     "stream: server slower than the timeout",
			handler:  blockUntilDone,
			settings: Settings{Timeout: 50 * time.Millisecond, OnText: func(string) {}},
			want: errorCase{
				want:     Error{Message: "request timed out after 50ms"},
				is:       []error{context.DeadlineExceeded},
				contains: "request timed out after 50ms",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			_, err := f.model().Request(context.Background(), testHistory(), tt.settings)
			checkError(t, err, tt.want)
		})
	}
}

func TestOpenAICanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		blockUntilDone(w, r)
	})
	_, err := f.model().Request(ctx, testHistory(), Settings{Timeout: time.Minute})
	checkError(t, err, errorCase{
		want:     Error{Message: "request interrupted: context canceled"},
		is:       []error{context.Canceled},
		contains: "request interrupted",
	})
}

// chunk is a stream chunk whose choice 0 carries delta, and finish as its
// finish reason ("" for null).
func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-2025","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

func TestOpenAIStreaming(t *testing.T) {
	usage := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-2025","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":12,"total_tokens":912,"prompt_tokens_details":{"cached_tokens":512}}}`
	tests := []struct {
		name      string
		events    []string
		want      processor.Message
		wantDelta []string
	}{
		{
			name: "text with usage",
			events: []string{
				chunk(`{"role":"assistant","content":""}`, ""),
				chunk(`{"content":"Hel"}`, ""),
				chunk(`{"content":"lo."}`, ""),
				chunk(`{}`, "stop"),
				usage,
				"[DONE]",
			},
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "Hello."}},
				Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 900, CachedInputTokens: 512, OutputTokens: 12, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "stop"},
			},
			wantDelta: []string{"Hel", "lo."},
		},
		{
			name: "tool call with usage",
			events: []string{
				chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"bash","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				usage,
				"[DONE]",
			},
			want: processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.ToolCall{ToolCallID: "call_9", ToolName: "bash", Args: `{"command":"ls"}`}},
				Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 900, CachedInputTokens: 512, OutputTokens: 12, PromptMessages: 4}, ModelName: "test-model-2025", FinishReason: "tool_calls"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replySSE(tt.events...))
			var deltas []string
			got, err := f.model().Request(context.Background(), testHistory(), Settings{OnText: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDelta, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
			body := f.only(t).body
			want := map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}
			if diff := cmp.Diff(want, map[string]any{"stream": body["stream"], "stream_options": body["stream_options"]}); diff != "" {
				t.Errorf("stream keys of the body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIInvalidSettings(t *testing.T) {
	tests := []struct {
		name     string
		history  []processor.Message
		settings Settings
		want     string
	}{
		{"tool choice names no tool", testHistory(), Settings{Tools: []Tool{bashTool}, ToolChoice: "python"}, `tool choice "python" names no offered tool`},
		{"tool without name", testHistory(), Settings{Tools: []Tool{{Description: "x"}}}, "tool 0 without name"},
		{"parameters not an object", testHistory(), Settings{Tools: []Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, `tool "x": parameters must be a JSON object schema`},
		{"negative max tokens", testHistory(), Settings{MaxTokens: -1}, "negative max tokens -1"},
		{"unconvertible history", []processor.Message{{Kind: 9}}, Settings{}, "message 0: unknown message kind kind(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, replyJSON(200, completion(`{"content":"hi"}`, "")))
			_, err := f.model().Request(context.Background(), tt.history, tt.settings)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			f.mu.Lock()
			n := len(f.requests)
			f.mu.Unlock()
			if n != 0 {
				t.Errorf("server received %d requests, want none", n)
			}
		})
	}
}

func TestOpenAIOptions(t *testing.T) {
	if got := NewOpenAI().Name(); got != DefaultModel {
		t.Errorf("default Name() = %q, want %q", got, DefaultModel)
	}
	if got := NewOpenAI(WithModel("gpt-x")).Name(); got != "gpt-x" {
		t.Errorf("Name() = %q, want gpt-x", got)
	}

	// Options win over the environment.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/unused")
	var header string
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get("X-Test")
		replyJSON(200, completion(`{"content":"hi"}`, ""))(w, r)
	})
	var trips countingTransport
	client := &http.Client{Timeout: time.Minute, Transport: &trips}
	m := f.model(WithHTTPClient(client), WithRequestOptions(option.WithHeader("X-Test", "yes")), WithLogger(nil))
	if _, err := m.Request(context.Background(), testHistory(), Settings{}); err != nil {
		t.Fatal(err)
	}
	if trips.n.Load() != 1 {
		t.Errorf("the HTTP client given as an option made %d round trips, want 1", trips.n.Load())
	}
	if got := f.only(t).auth; got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the key given as an option", got)
	}
	if header != "yes" {
		t.Errorf("X-Test header = %q, want the request option applied", header)
	}
}

// countingTransport counts the round trips made through it.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestOpenAIRetries(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			replyJSON(503, `{"error":{"message":"busy","type":"server_error","code":null}}`)(w, r)
			return
		}
		replyJSON(200, completion(`{"content":"hi"}`, ""))(w, r)
	})
	got, err := f.model(WithMaxRetries(1)).Request(context.Background(), testHistory(), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if got.Text() != "hi" || n != 2 {
		t.Errorf("text %q after %d calls, want \"hi\" after 2", got.Text(), n)
	}
}

func TestOpenAILogs(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	f := newFake(t, replyJSON(200, completion(`{"content":"hi"}`, `{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}`)))
	m := f.model(WithLogger(zap.New(core)))
	if _, err := m.Request(context.Background(), testHistory(), Settings{}); err != nil {
		t.Fatal(err)
	}
	entries := logs.FilterMessage("model request").All()
	if len(entries) != 1 {
		t.Fatalf("logged %d \"model request\" lines, want 1", len(entries))
	}
	fields := entries[0].ContextMap()
	if fields["input_tokens"] != int64(10) || fields["messages"] != int64(4) {
		t.Errorf("logged fields %v, want input_tokens 10 and messages 4", fields)
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()), testKey) || strings.Contains(e.Message, testKey) {
			t.Errorf("log line %q contains the API key", e.Message)
		}
	}

	// Failures are returned, not logged.
	logs.TakeAll()
	bad := newFake(t, replyJSON(500, `{"error":{"message":"boom","type":"server_error","code":null}}`))
	if _, err := bad.model(WithLogger(zap.New(core))).Request(context.Background(), testHistory(), Settings{}); err == nil {
		t.Fatal("Request succeeded against a failing server")
	}
	if n := logs.Len(); n != 0 {
		t.Errorf("a failed request logged %d lines, want 0", n)
	}
}
