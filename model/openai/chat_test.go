package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// chatModel is a Chat model of the fake server f, with its key, no
// retries and the model name "test-model".
func chatModel(f *providertest.Server, opts ...Option) *Chat {
	base := []Option{WithBaseURL(f.URL), WithAPIKey(providertest.Key), WithMaxRetries(0), WithModel("test-model")}
	return New(append(base, opts...)...)
}

func completion(message string, usage string) string {
	if usage == "" {
		usage = `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"test-model-2025",
	"choices":[{"index":0,"message":` + message + `,"finish_reason":"stop","logprobs":null}],"usage":` + usage + `}`
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
		settings model.Settings
		// want holds the body keys checked, absent the keys that must not
		// be sent.
		want   map[string]any
		absent []string
	}{
		{
			name:     "defaults send only model and messages",
			settings: model.Settings{},
			want:     map[string]any{"model": "test-model", "messages": wantMessages},
			absent:   []string{"tools", "tool_choice", "temperature", "max_completion_tokens", "stream"},
		},
		{
			name:     "tools, auto, explicit zero temperature, max tokens",
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "auto", Temperature: model.Float(0), MaxTokens: 256},
			want: map[string]any{"model": "test-model", "messages": wantMessages, "tools": wantTools,
				"tool_choice": "auto", "temperature": 0.0, "max_completion_tokens": 256.0},
		},
		{
			name:     "tool choice none",
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "none"},
			want:     map[string]any{"tool_choice": "none"},
			absent:   []string{"temperature"},
		},
		{
			name:     "tool choice required",
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "required", Temperature: model.Float(0.7)},
			want:     map[string]any{"tool_choice": "required", "temperature": 0.7},
		},
		{
			name:     "tool choice by name",
			settings: model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "bash"},
			want:     map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "bash"}}},
		},
		{
			name:     "strict tool without parameters",
			settings: model.Settings{Tools: []model.Tool{{Name: "now", Strict: true}}},
			want:     map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "now", "strict": true}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewServer(t, providertest.ReplyJSON(200, completion(`{"role":"assistant","content":"ok"}`, "")))
			if _, err := chatModel(f).Request(context.Background(), providertest.History(), tt.settings); err != nil {
				t.Fatal(err)
			}
			req := f.Only(t)
			if req.Path != "/chat/completions" {
				t.Errorf("path = %q, want /chat/completions", req.Path)
			}
			if req.Auth != "Bearer "+providertest.Key {
				t.Errorf("Authorization = %q, want the bearer key", req.Auth)
			}
			if !strings.HasPrefix(req.ContentType, "application/json") {
				t.Errorf("Content-Type = %q", req.ContentType)
			}
			got := map[string]any{}
			for k := range tt.want {
				if v, ok := req.Body[k]; ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request body (-want +got):\n%s", diff)
			}
			for _, k := range tt.absent {
				if v, ok := req.Body[k]; ok {
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
			f := providertest.NewServer(t, providertest.ReplyJSON(200, completion(tt.message, tt.usage)))
			got, err := chatModel(f).Request(context.Background(), providertest.History(), model.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	build := func(f *providertest.Server) model.Model { return chatModel(f) }
	providertest.RunErrors(t, build, []providertest.ErrorTest{
		{
			Name: "400 context length exceeded",
			Handler: providertest.ReplyJSON(400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
				"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			Want: providertest.ErrorCase{
				Want: model.Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error",
					Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."},
				Is:       []error{model.ErrContextOverflow},
				Contains: "status 400 (context_length_exceeded): This model's maximum context length",
			},
		},
		{
			Name:    "401 bad key",
			Handler: providertest.ReplyJSON(401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error", Message: "Incorrect API key provided."},
				Contains: "status 401 (invalid_api_key): Incorrect API key provided.",
			},
		},
		{
			Name:    "401 message quoting a masked key",
			Handler: providertest.ReplyJSON(401, `{"error":{"message":"Incorrect API key provided: sk-proj-********************abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			Want: providertest.ErrorCase{
				Want: model.Error{StatusCode: 401, Code: "invalid_api_key", Type: "invalid_request_error",
					Message: "Incorrect API key provided: [redacted key]. You can find your API key at https://platform.openai.com/account/api-keys."},
				Contains: "Incorrect API key provided: [redacted key]. You can find",
			},
		},
		{
			Name:    "429 rate limited",
			Handler: providertest.ReplyJSON(429, `{"error":{"message":"Rate limit reached.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached."},
				Contains: "status 429",
			},
		},
		{
			Name:    "500 server error",
			Handler: providertest.ReplyJSON(500, `{"error":{"message":"The server had an error.","type":"server_error","param":null,"code":null}}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 500, Type: "server_error", Message: "The server had an error."},
				Contains: "status 500: The server had an error.",
			},
		},
		{
			Name: "502 with an HTML body",
			Handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				io.WriteString(w, "<html><body>Bad Gateway</body></html>")
			},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 502, Message: "Bad Gateway (no error message in the response)"},
				Contains: "status 502: Bad Gateway",
			},
		},
		{
			Name:    "404 with a detail",
			Handler: providertest.ReplyJSON(404, `{"detail":"Not Found"}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 404, Message: "Not Found: Not Found"},
				Contains: "status 404: Not Found: Not Found",
			},
		},
		{
			Name:    "404 with a string error",
			Handler: providertest.ReplyJSON(404, `{"error":"model not found"}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 404, Message: "Not Found: model not found"},
				Contains: "status 404: Not Found: model not found",
			},
		},
		{
			Name:    "malformed JSON body",
			Handler: providertest.ReplyJSON(200, `{"id":"x","choices":[{"message":{"content":"hi"}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: "malformed JSON in response: error parsing response json: unexpected EOF"},
				Contains: "malformed JSON in response",
			},
		},
		{
			Name: "200 with an HTML body",
			Handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, "<html><body>Sign in</body></html>")
			},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: `response has Content-Type "text/html; charset=utf-8", not JSON`},
				Contains: "not JSON",
			},
		},
		{
			Name:    "no choices",
			Handler: providertest.ReplyJSON(200, `{"id":"x","object":"chat.completion","model":"m","choices":[]}`),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: "response has no choices"},
				Contains: "response has no choices",
			},
		},
		{
			Name:    "tool call of another type",
			Handler: providertest.ReplyJSON(200, completion(`{"content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"grammar","input":"x"}}]}`, "")),
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: `response tool call 0 has unsupported type "custom"`},
				Contains: "unsupported type",
			},
		},
		{
			Name:     "server slower than the timeout",
			Handler:  providertest.BlockUntilDone,
			Settings: model.Settings{Timeout: 50 * time.Millisecond},
			Want: providertest.ErrorCase{
				Want:     model.Error{Message: "request timed out after 50ms"},
				Is:       []error{context.DeadlineExceeded},
				Contains: "request timed out after 50ms",
			},
		},
		{
			Name:     "stream: 400 context length exceeded",
			Handler:  providertest.ReplyJSON(400, `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Message: "too long"},
				Is:       []error{model.ErrContextOverflow},
				Contains: "too long",
			},
		},
		{
			Name: "stream: error event",
			Handler: providertest.ReplySSE(
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
				`{"error":{"message":"The server is overloaded.","type":"server_error","code":"server_overloaded"}}`,
			),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Code: "server_overloaded", Type: "server_error", Message: "stream error: The server is overloaded."},
				Contains: "The server is overloaded.",
			},
		},
		{
			Name:     "stream: malformed chunk",
			Handler:  providertest.ReplySSE(`{"id":"c1","choices":[`),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: "malformed JSON in response: unexpected end of JSON input"},
				Contains: "malformed JSON in response",
			},
		},
		{
			Name:     "stream: no chunks",
			Handler:  providertest.ReplySSE(`[DONE]`),
			Settings: model.Settings{OnText: func(string) {}},
			Want: providertest.ErrorCase{
				Want:     model.Error{StatusCode: 200, Message: "response has no choices"},
				Contains: "response has no choices",
			},
		},
		{
			Name:     "stream: server slower than the timeout",
			Handler:  providertest.BlockUntilDone,
			Settings: model.Settings{Timeout: 50 * time.Millisecond, OnText: func(string) {}},
			Want: providertest.ErrorCase{
				Want:     model.Error{Message: "request timed out after 50ms"},
				Is:       []error{context.DeadlineExceeded},
				Contains: "request timed out after 50ms",
			},
		},
	})
}

func TestOpenAICanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		providertest.BlockUntilDone(w, r)
	})
	_, err := chatModel(f).Request(ctx, providertest.History(), model.Settings{Timeout: time.Minute})
	providertest.CheckError(t, err, providertest.ErrorCase{
		Want:     model.Error{Message: "request interrupted: context canceled"},
		Is:       []error{context.Canceled},
		Contains: "request interrupted",
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
			f := providertest.NewServer(t, providertest.ReplySSE(tt.events...))
			var deltas []string
			got, err := chatModel(f).Request(context.Background(), providertest.History(), model.Settings{OnText: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDelta, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
			body := f.Only(t).Body
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
		settings model.Settings
		want     string
	}{
		{"tool choice names no tool", providertest.History(), model.Settings{Tools: []model.Tool{providertest.BashTool()}, ToolChoice: "python"}, `tool choice "python" names no offered tool`},
		{"tool without name", providertest.History(), model.Settings{Tools: []model.Tool{{Description: "x"}}}, "tool 0 without name"},
		{"parameters not an object", providertest.History(), model.Settings{Tools: []model.Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, `tool "x": parameters must be a JSON object schema`},
		{"negative max tokens", providertest.History(), model.Settings{MaxTokens: -1}, "negative max tokens -1"},
		{"unconvertible history", []processor.Message{{Kind: 9}}, model.Settings{}, "message 0: unknown message kind kind(9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewServer(t, providertest.ReplyJSON(200, completion(`{"content":"hi"}`, "")))
			_, err := chatModel(f).Request(context.Background(), tt.history, tt.settings)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if n := len(f.Requests()); n != 0 {
				t.Errorf("server received %d requests, want none", n)
			}
		})
	}
}

func TestOpenAIOptions(t *testing.T) {
	if got := New().Name(); got != DefaultModel {
		t.Errorf("default Name() = %q, want %q", got, DefaultModel)
	}
	if got := New(WithModel("gpt-x")).Name(); got != "gpt-x" {
		t.Errorf("Name() = %q, want gpt-x", got)
	}

	// Options win over the environment.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/unused")
	var header string
	f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get("X-Test")
		providertest.ReplyJSON(200, completion(`{"content":"hi"}`, ""))(w, r)
	})
	var trips countingTransport
	client := &http.Client{Timeout: time.Minute, Transport: &trips}
	m := chatModel(f, WithHTTPClient(client), WithRequestOptions(option.WithHeader("X-Test", "yes")), WithLogger(nil))
	if _, err := m.Request(context.Background(), providertest.History(), model.Settings{}); err != nil {
		t.Fatal(err)
	}
	if trips.n.Load() != 1 {
		t.Errorf("the HTTP client given as an option made %d round trips, want 1", trips.n.Load())
	}
	if got := f.Only(t).Auth; got != "Bearer "+providertest.Key {
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
	f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			providertest.ReplyJSON(503, `{"error":{"message":"busy","type":"server_error","code":null}}`)(w, r)
			return
		}
		providertest.ReplyJSON(200, completion(`{"content":"hi"}`, ""))(w, r)
	})
	got, err := chatModel(f, WithMaxRetries(1)).Request(context.Background(), providertest.History(), model.Settings{})
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
	f := providertest.NewServer(t, providertest.ReplyJSON(200, completion(`{"content":"hi"}`, `{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}`)))
	m := chatModel(f, WithLogger(zap.New(core)))
	if _, err := m.Request(context.Background(), providertest.History(), model.Settings{}); err != nil {
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
		if strings.Contains(fmt.Sprint(e.ContextMap()), providertest.Key) || strings.Contains(e.Message, providertest.Key) {
			t.Errorf("log line %q contains the API key", e.Message)
		}
	}

	// Failures are returned, not logged.
	logs.TakeAll()
	bad := providertest.NewServer(t, providertest.ReplyJSON(500, `{"error":{"message":"boom","type":"server_error","code":null}}`))
	if _, err := chatModel(bad, WithLogger(zap.New(core))).Request(context.Background(), providertest.History(), model.Settings{}); err == nil {
		t.Fatal("Request succeeded against a failing server")
	}
	if n := logs.Len(); n != 0 {
		t.Errorf("a failed request logged %d lines, want 0", n)
	}
}
