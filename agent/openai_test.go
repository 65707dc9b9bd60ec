package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

type wireRequest struct {
	Messages []openaitest.ChatMessage `json:"messages"`
	Stream   bool                     `json:"stream"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// fakeOpenAI is an OpenAI Chat Completions server speaking the wire format.
// It answers like the conversational recorder reply: a user message gets a
// call of echo carrying the user's text, a tool message gets the text
// "echoed " + its content. Streamed answers come in pieces of 4 bytes.
type fakeOpenAI struct {
	refuse atomic.Int32 // refuse this many more requests as context overflows
	next   atomic.Int64 // call IDs
	mu     sync.Mutex
	got    []wireRequest
}

func (f *fakeOpenAI) requests() []wireRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wireRequest(nil), f.got...)
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/chat/completions" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", fmt.Sprintf("bad body: %v", err))
		return
	}
	f.mu.Lock()
	f.got = append(f.got, req)
	f.mu.Unlock()
	if f.refuse.Add(-1) >= 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"This model's maximum context length is 128000 tokens.")
		return
	}
	last := req.Messages[len(req.Messages)-1]
	var text, callID, args string
	switch last.Role {
	case "user":
		callID = fmt.Sprintf("call_%d", f.next.Add(1))
		b, _ := json.Marshal(map[string]string{"text": last.Text()})
		args = string(b)
	case "tool":
		text = "echoed " + last.Text()
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", "last message is "+last.Role)
		return
	}
	usage := map[string]any{"prompt_tokens": 10 * len(req.Messages), "completion_tokens": 5, "total_tokens": 10*len(req.Messages) + 5}
	if req.Stream {
		streamAnswer(w, text, callID, args, usage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if callID != "" {
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": callID, "type": "function", "function": map[string]any{"name": "echo", "arguments": args}}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage,
	})
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}

// streamAnswer writes a server-sent-events answer: the text or the call's
// arguments in pieces, a finish chunk, a usage chunk and [DONE].
func streamAnswer(w http.ResponseWriter, text, callID, args string, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices []any, u any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
			"model": "fake-model", "choices": choices, "usage": u})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	pieces := func(s string) []string {
		var out []string
		for len(s) > 4 {
			out = append(out, s[:4])
			s = s[4:]
		}
		return append(out, s)
	}
	finish := "stop"
	if callID != "" {
		finish = "tool_calls"
		chunk(delta(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": "echo", "arguments": ""}}}}, nil), nil)
		for _, p := range pieces(args) {
			chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": p}}}}, nil), nil)
		}
	} else {
		chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
		for _, p := range pieces(text) {
			chunk(delta(map[string]any{"content": p}, nil), nil)
		}
	}
	chunk(delta(map[string]any{}, finish), nil)
	chunk([]any{}, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// ignoreWire ignores the metadata the OpenAI model fills in on responses.
var ignoreWire = metaIgnoring(func(m *processor.Meta) {
	m.Usage, m.ModelName, m.FinishReason, m.Time = processor.Usage{}, "", "", time.Time{}
})

func isOverflow(err error) bool { return errors.Is(err, model.ErrContextOverflow) }

func newFakeOpenAI(t *testing.T) (*fakeOpenAI, *openai.Chat) {
	t.Helper()
	f := &fakeOpenAI{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"), openai.WithMaxRetries(0))
}

func TestOpenAIToolLoop(t *testing.T) {
	f, m := newFakeOpenAI(t)
	a := agent.New(m, agent.WithTools(echoTool), agent.WithSystemPrompt("be brief"))
	res, err := a.Run(context.Background(), nil, "hi")
	if err != nil {
		t.Fatal(err)
	}
	want := []processor.Message{
		processor.NewRequest(processor.SystemPrompt{Content: "be brief"}, processor.UserPrompt{Content: "hi"}),
		callsResponse(call("call_1", "echo", `{"text":"hi"}`)),
		processor.NewRequest(processor.ToolReturn{ToolName: "echo", ToolCallID: "call_1", Content: `{"text":"hi"}`}),
		processor.TextMessage(`echoed {"text":"hi"}`),
	}
	if diff := cmp.Diff(want, res.History, ignoreWire); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if res.Usage.InputTokens != 20+40 || res.Usage.OutputTokens != 10 {
		t.Errorf("usage %+v, want 60 input and 10 output tokens", res.Usage)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	type sent struct{ Role, Text, ToolCallID string }
	var got []sent
	for _, m := range reqs[1].Messages {
		got = append(got, sent{m.Role, m.Text(), m.ToolCallID})
	}
	wantSent := []sent{{"system", "be brief", ""}, {"user", "hi", ""}, {"assistant", "", ""}, {"tool", `{"text":"hi"}`, "call_1"}}
	if diff := cmp.Diff(wantSent, got); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
	if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Function.Name != "echo" {
		t.Errorf("tools offered: %+v", reqs[0].Tools)
	}
}

func TestOpenAIStreaming(t *testing.T) {
	f, m := newFakeOpenAI(t)
	shared := agent.New(m, agent.WithTools(echoTool))
	var pieces []string
	res, err := shared.With(agent.WithOnText(func(d string) { pieces = append(pieces, d) })).Run(context.Background(), nil, "stream me")
	if err != nil {
		t.Fatal(err)
	}
	want := `echoed {"text":"stream me"}`
	if res.Text != want || strings.Join(pieces, "") != want {
		t.Fatalf("text %q, streamed %q; want %q", res.Text, strings.Join(pieces, ""), want)
	}
	if len(pieces) < 2 {
		t.Errorf("text arrived in %d piece(s), want it streamed in several", len(pieces))
	}
	for i, r := range f.requests() {
		if !r.Stream {
			t.Errorf("request %d was not streamed", i)
		}
	}
	// The streamed tool call was reassembled and run.
	if got := res.History[1].ToolCalls(); len(got) != 1 || got[0].Args != `{"text":"stream me"}` {
		t.Errorf("streamed tool call %+v", got)
	}
}

func TestOpenAIOverflow(t *testing.T) {
	tests := []struct {
		name     string
		refuse   int32
		wantErr  bool
		wantReqs int
	}{
		{"compacted and retried", 1, false, 3},
		{"second overflow returned", 2, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, m := newFakeOpenAI(t)
			f.refuse.Store(tt.refuse)
			k := &keepLast{}
			old := []processor.Message{processor.UserMessage("old"), processor.TextMessage("answer")}
			res, err := agent.New(m, agent.WithTools(echoTool), agent.WithCompactor(k)).Run(context.Background(), old, "new")
			if tt.wantErr != (err != nil) {
				t.Fatalf("error %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantErr && !isOverflow(err) {
				t.Errorf("error %v is not a context overflow", err)
			}
			reqs := f.requests()
			if len(reqs) != tt.wantReqs || k.calls != 1 {
				t.Fatalf("%d requests, %d compactions; want %d, 1", len(reqs), k.calls, tt.wantReqs)
			}
			if len(reqs[0].Messages) != 3 || len(reqs[1].Messages) != 1 {
				t.Errorf("sent %d then %d messages, want 3 then 1", len(reqs[0].Messages), len(reqs[1].Messages))
			}
			if !tt.wantErr && len(res.History) != 4 {
				t.Errorf("history of %d messages, want 4 (compacted prompt, call, return, answer)", len(res.History))
			}
		})
	}
}

func TestOpenAIConcurrent(t *testing.T) {
	const n = 200
	f, m := newFakeOpenAI(t)
	a := agent.New(m, agent.WithTools(echoTool), agent.WithProcessors(&trimOld{}), agent.WithSystemPrompt("sys"))
	results := make([]*agent.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Every other conversation streams its text.
			run := a
			var sb strings.Builder
			if i%2 == 1 {
				run = a.With(agent.WithOnText(func(d string) { sb.WriteString(d) }))
			}
			results[i], errs[i] = run.Run(context.Background(), nil, fmt.Sprintf("prompt %d", i))
			if i%2 == 1 && errs[i] == nil && sb.String() != results[i].Text {
				errs[i] = fmt.Errorf("streamed %q, text %q", sb.String(), results[i].Text)
			}
		})
	}
	wg.Wait()
	checkEchoTurns(t, results, errs)
	if got := len(f.requests()); got != 2*n {
		t.Errorf("%d requests, want %d", got, 2*n)
	}
}
