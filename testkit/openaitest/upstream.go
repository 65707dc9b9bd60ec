// Package openaitest is a fake model API server for the tests and the load
// command of the middleware and the proxy: it speaks the real wire format
// of OpenAI Chat Completions, of the OpenAI Responses API and of Anthropic
// Messages (JSON answers, SSE streams with usage, each API's errors),
// records every request as it arrived, tells the summarizer's requests from
// the client's, and can answer a context overflow. It also holds the
// checks those tests share: a body's "messages" split from the rest, and a
// forwarded request compared with the one the client sent.
package openaitest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/summarizer/llm"
)

// Request is one request the Upstream received.
type Request struct {
	// Method and Path are the request's.
	Method, Path string
	// Header is the request's header.
	Header http.Header
	// Body is the request's body as it arrived.
	Body []byte
	// Summary is set for a summarizer's request (its system message is
	// llm.Instructions).
	Summary bool
	// Stream is set when the body asked for a stream.
	Stream bool
}

// Upstream is the fake server. Set its fields before serving; it is safe
// for concurrent use.
type Upstream struct {
	// Reply is the text of every answer to a client; "" means "ok".
	Reply string
	// Summary is the text of every answer to a summarizer; "" means a
	// short summary naming a hash of the request's body (the same prompt
	// gets the same summary).
	Summary string
	// MaxPromptChars, when positive, answers 400 context_length_exceeded
	// to a client request whose messages' JSON is longer than this.
	MaxPromptChars int
	// Latency is how long each answer to a client waits before it is
	// written.
	Latency time.Duration
	// SummaryLatency is how long each answer to a summarizer waits; 0
	// means Latency.
	SummaryLatency time.Duration
	// Hook, when set, is called with each chat completions request before
	// it is answered; when it returns true it has answered the request
	// itself.
	Hook func(w http.ResponseWriter, r *http.Request, req Request) bool
	// Discard, when set, keeps no request bodies or headers (for long
	// load runs): only the requests' paths and kinds are kept.
	Discard bool

	mu        sync.Mutex
	requests  []Request
	summaries int
	chats     int
}

// Requests returns the requests received so far, in order.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.requests...)
}

// Chats returns the client requests received so far (chat completions
// requests that are not a summarizer's), in order.
func (u *Upstream) Chats() []Request {
	var out []Request
	for _, r := range u.Requests() {
		if r.Path != "" && strings.HasSuffix(r.Path, "/chat/completions") && !r.Summary {
			out = append(out, r)
		}
	}
	return out
}

// Counts returns how many requests (Chat Completions, Responses or
// Messages) came from clients and how many from summarizers.
func (u *Upstream) Counts() (chats, summaries int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.chats, u.summaries
}

// DurationHeader is the response header in which the Upstream says how
// long it took over a request, in nanoseconds.
const DurationHeader = "Abridge-Test-Upstream-Ns"

// chatBody is what the Upstream reads of a chat completions body.
type chatBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		Usage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []jsontext.Value `json:"messages"`
	// Input is a Responses body's history.
	Input jsontext.Value `json:"input"`
}

// readChatBody decodes data in one pass, as leniently as encoding/json
// (names matched regardless of case, a name given twice, invalid UTF-8),
// and so spends less of the machine's cores than encoding/json, which
// scans a body twice, under load: a provider's decoding does not run on
// the proxy's machine, the fake's does.
func readChatBody(data []byte, body *chatBody) error {
	return jsonv2.Unmarshal(data, body, jsonv2.MatchCaseInsensitiveNames(true),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// apiOf names the API of a POST to path: "chat", "responses" or
// "messages"; "" for none of them.
func apiOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return "chat"
	case strings.HasSuffix(path, "/responses"):
		return "responses"
	case strings.HasSuffix(path, "/messages"):
		return "messages"
	}
	return ""
}

// ServeHTTP answers POST …/chat/completions and GET …/models; anything
// else is a 404 in OpenAI's shape.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error(), "")
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: data}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		u.record(req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model","created":1700000000,"owned_by":"openaitest"}]}`)
		return
	case r.Method != http.MethodPost || apiOf(r.URL.Path) == "":
		u.record(req)
		WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.URL.Path, "unknown_url")
		return
	}
	var body chatBody
	if err := readChatBody(data, &body); err != nil {
		u.record(req)
		WriteError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error(), "")
		return
	}
	api := apiOf(r.URL.Path)
	req.Stream = body.Stream
	req.Summary = isSummary(body.Messages) || (api != "chat" && IsSummaryBody(data))
	u.record(req)
	if u.Hook != nil && u.Hook(w, r, req) {
		return
	}
	latency := u.Latency
	if req.Summary && u.SummaryLatency > 0 {
		latency = u.SummaryLatency
	}
	if latency > 0 {
		time.Sleep(latency)
	}
	text := u.Reply
	if text == "" {
		text = "ok"
	}
	if req.Summary {
		text = u.Summary
		if text == "" {
			// A summary of its own for every prompt, the same for the
			// same prompt.
			h := fnv.New64a()
			h.Write(data)
			text = fmt.Sprintf("Goal: the user's task. Status: in progress (summary %016x). Next step: carry on.", h.Sum64())
		}
	}
	chars := len(body.Input)
	for _, m := range body.Messages {
		chars += len(m)
	}
	if !req.Summary && u.MaxPromptChars > 0 && chars > u.MaxPromptChars {
		if api == "messages" {
			WriteAnthropicError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("prompt is too long: %d tokens > %d maximum", chars/4, u.MaxPromptChars/4))
			return
		}
		WriteError(w, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("This model's maximum context length is exceeded: %d characters of messages, at most %d.", chars, u.MaxPromptChars),
			"context_length_exceeded")
		return
	}
	prompt := chars / 4
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, len(text)/4+1, prompt+len(text)/4+1)
	model := body.Model
	if model == "" {
		model = "gpt-test"
	}
	w.Header().Set(DurationHeader, strconv.FormatInt(int64(time.Since(start)), 10))
	out := len(text)/4 + 1
	switch api {
	case "responses":
		WriteResponse(w, map[string]any{
			"id": "resp-test", "object": "response", "created_at": 1700000000, "status": "completed", "model": model,
			"output": []map[string]any{{"type": "message", "id": "msg-test", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
			"usage": map[string]any{"input_tokens": prompt, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": prompt + out},
		}, body.Stream)
		return
	case "messages":
		WriteMessage(w, map[string]any{
			"id": "msg-test", "type": "message", "role": "assistant", "model": model,
			"content":     []map[string]any{{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": prompt, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out},
		}, body.Stream)
		return
	}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":%s}`,
			model, quote(text), usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	chunk := func(delta, finish, usage string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-test\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[", model)
		if delta != "" {
			fmt.Fprintf(w, `{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}`, delta, finish)
		}
		io.WriteString(w, "]")
		if usage != "" {
			io.WriteString(w, `,"usage":`+usage)
		}
		io.WriteString(w, "}\n\n")
		http.NewResponseController(w).Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "null", "")
	for _, piece := range pieces(text, 3) {
		chunk(`{"content":`+quote(piece)+`}`, "null", "")
	}
	chunk(`{}`, `"stop"`, "")
	if body.StreamOptions != nil && body.StreamOptions.Usage {
		chunk("", "", usage)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func (u *Upstream) record(req Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if apiOf(req.Path) != "" {
		if req.Summary {
			u.summaries++
		} else {
			u.chats++
		}
	}
	if u.Discard {
		req.Body, req.Header = nil, nil
	}
	u.requests = append(u.requests, req)
}

// isSummary reports whether messages are a summarizer's: the first is the
// system message llm.Instructions.
func isSummary(messages []jsontext.Value) bool {
	if len(messages) == 0 {
		return false
	}
	var m struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	if json.Unmarshal(messages[0], &m) != nil {
		return false
	}
	s, _ := m.Content.(string)
	return (m.Role == "system" || m.Role == "developer") && s == llm.Instructions
}

// pieces cuts s into at most n pieces of about equal length (at rune
// boundaries).
func pieces(s string, n int) []string {
	rs := []rune(s)
	size := (len(rs) + n - 1) / n
	if size == 0 {
		return []string{s}
	}
	var out []string
	for i := 0; i < len(rs); i += size {
		out = append(out, string(rs[i:min(i+size, len(rs))]))
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeError answers an error in OpenAI's shape.
func WriteError(w http.ResponseWriter, status int, typ, msg, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	c := "null"
	if code != "" {
		c = quote(code)
	}
	fmt.Fprintf(w, `{"error":{"message":%s,"type":%q,"param":null,"code":%s}}`, quote(msg), typ, c)
}
