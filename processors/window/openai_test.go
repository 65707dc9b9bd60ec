package window

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/summary"
)

// fakeOpenAI is an httptest server speaking the Chat Completions wire
// format; handle answers each request and bodies records what was sent.
type fakeOpenAI struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newFakeOpenAI(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) model() model.Model {
	return openai.New(openai.WithBaseURL(f.srv.URL), openai.WithAPIKey("test"), openai.WithMaxRetries(0), openai.WithModel("summary-model"))
}

func (f *fakeOpenAI) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...)
}

// completion writes a successful completion with content.
func completion(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "summary-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
	w.Write(b)
}

func apiError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "fake " + code, "type": "server_error", "code": code}})
	w.Write(b)
}

func TestOpenAISummaryRequest(t *testing.T) {
	f := newFakeOpenAI(t, func(w http.ResponseWriter, _ *http.Request) {
		completion(w, "Goal: fix pkg/x. Next step: run the tests.")
	})
	var ev events
	store := trustedStore("Earlier: the user wants pkg/x fixed.")
	w := New(Options{Ahead: -1, MaxMessages: 12, Summarizer: llm.New(f.model(), llm.Options{}), OnEvent: ev.on, Store: store})
	h := conversation(10, 100)
	// A previous marker in the middle is merged, not summarized as text.
	h = append(h[:4], append([]processor.Message{summary.Marker("Earlier: the user wants pkg/x fixed.")}, h[4:]...)...)
	out, err := w.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := markerOf(out); s != "Goal: fix pkg/x. Next step: run the tests." {
		t.Errorf("marker summary %q", s)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	body := reqs[0]
	if _, ok := body["tools"]; ok {
		t.Errorf("summary request offers tools: %v", body["tools"])
	}
	if body["tool_choice"] != "none" {
		t.Errorf("tool_choice = %v, want none", body["tool_choice"])
	}
	if temp, ok := body["temperature"].(float64); !ok || temp != 0 {
		t.Errorf("temperature = %v, want an explicit 0", body["temperature"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("%d messages sent, want 2 (system, user)", len(msgs))
	}
	var roles []string
	for _, m := range msgs {
		m := m.(map[string]any)
		roles = append(roles, m["role"].(string))
		if _, ok := m["tool_calls"]; ok {
			t.Errorf("summary request carries tool calls")
		}
	}
	if strings.Join(roles, ",") != "system,user" {
		t.Errorf("roles %v", roles)
	}
	prompt, _ := msgs[1].(map[string]any)["content"].(string)
	for _, want := range []string{"Earlier: the user wants pkg/x fixed.", "Go ahead.", "cat file0.go", "output 0:"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("summary prompt lacks %q", want)
		}
	}
	if strings.Contains(prompt, summary.Prefix) {
		t.Errorf("the previous marker was sent as conversation text")
	}
	if fin := ev.last(EventFinished); fin.Fallback || fin.Summarized != 15 {
		t.Errorf("finished event: fallback %v, summarized %d, want false, 15", fin.Fallback, fin.Summarized)
	}
}

func TestOpenAIFaultsFallBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request)
		reason string
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) { apiError(w, 500, "server_error") }, "summarizer error"},
		{"429", func(w http.ResponseWriter, _ *http.Request) { apiError(w, 429, "rate_limit_exceeded") }, "summarizer error"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, "timeout"},
		{"empty body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
		}, "summarizer error"},
		{"garbage JSON", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices": [ {"message": nonsense`)
		}, "summarizer error"},
		{"empty summary", func(w http.ResponseWriter, _ *http.Request) { completion(w, "") }, "empty summary"},
		{"oversize summary", func(w http.ResponseWriter, _ *http.Request) {
			completion(w, strings.Repeat("far too long ", 5000))
		}, "summary too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOpenAI(t, tc.handle)
			var ev events
			w := New(Options{Ahead: -1,
				MaxMessages: 12,
				Summarizer:  llm.New(f.model(), llm.Options{}),
				Timeout:     100 * time.Millisecond,
				OnEvent:     ev.on,
			})
			h := conversation(10, 100)
			out, err := w.Process(context.Background(), h)
			if err != nil {
				t.Fatalf("the user's request failed: %v", err)
			}
			if err := processor.Validate(out); err != nil {
				t.Fatal(err)
			}
			if !processor.Equal(out[len(out)-1], h[len(h)-1]) {
				t.Error("last request altered")
			}
			s, ok := markerOf(out)
			if !ok || !strings.HasPrefix(s, summarizer.DigestHeader) {
				t.Errorf("marker %q, want the digest fallback", s)
			}
			fail := ev.last(EventFailed)
			if fail.Type != EventFailed || !fail.Fallback || fail.Reason != tc.reason || fail.Err == nil {
				t.Errorf("failed event %+v, want reason %q with the fallback", fail, tc.reason)
			}
			if len(f.requests()) != 1 {
				t.Errorf("%d requests, want 1", len(f.requests()))
			}
		})
	}
}
