package config

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// seen is one request the fake OpenAI server received.
type seen struct {
	Model         string
	Authorization string
	Messages      int
}

// fakeOpenAI is a loopback Chat Completions server. It answers every
// request with a short text, or with status when status is not 0.
type fakeOpenAI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	status   int
	// toolCalls makes every answer a call of the tool "lookup".
	toolCalls bool
}

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	err := json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.requests = append(f.requests, seen{Model: body.Model, Authorization: r.Header.Get("Authorization"), Messages: len(body.Messages)})
	status, toolCalls := f.status, f.toolCalls
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case err != nil || r.URL.Path != "/chat/completions":
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"bad request to %s","type":"invalid_request_error","code":null}}`, r.URL.Path)
	case status != 0:
		w.WriteHeader(status)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	case toolCalls:
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,`+
			`"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,`+
			`"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"lookup","arguments":"{}"}}]}}],`+
			`"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`, body.Model, len(f.seen()))
	default:
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"`+body.Model+`",`+
			`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"The user asked for a report; step 3 is next."}}],`+
			`"usage":{"prompt_tokens":50,"completion_tokens":10,"total_tokens":60}}`)
	}
}

func (f *fakeOpenAI) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.requests...)
}

func (f *fakeOpenAI) fail(status int) {
	f.mu.Lock()
	f.status = status
	f.mu.Unlock()
}

// conversation returns a valid history of about n messages: a first run
// (user prompt, text answer), then tool-calling steps whose returns are
// long, then turns of plain text, ending with a user prompt.
func conversation(n int) []processor.Message {
	h := []processor.Message{
		processor.UserMessage("Write the quarterly report from data/q3.csv."),
		processor.TextMessage("I will read the data first."),
	}
	for i := 0; len(h) < n-1; i++ {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			processor.UserMessage(fmt.Sprintf("Step %d, please.", i)),
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "read_file", Args: `{"path":"data/q3.csv"}`}),
			processor.NewRequest(processor.ToolReturn{ToolName: "read_file", ToolCallID: id, Content: strings.Repeat("row,1,2,3\n", 60)}),
			processor.TextMessage(fmt.Sprintf("Step %d done.", i)),
		)
	}
	return append(h, processor.UserMessage("Go on."))
}
