// Package openaitest is a fake OpenAI Chat Completions server for the tests
// and the load command of the middleware and the proxy: it speaks the real
// wire format (JSON answers, SSE streams with usage, OpenAI-shaped errors),
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

	"github.com/abridge-go/abridge/summarizer"
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
	// summarizer.Instructions).
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
	// Latency is how long each chat completions answer waits before it is
	// written.
	Latency time.Duration
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

// Counts returns how many chat completions requests came from clients and
// how many from summarizers.
func (u *Upstream) Counts() (chats, summaries int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.chats, u.summaries
}

// DurationHeader is the response header in which the Upstream says how
// long it took over a chat completions request, in nanoseconds.
const DurationHeader = "Abridge-Test-Upstream-Ns"

// chatBody is what the Upstream reads of a chat completions body.
type chatBody struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		Usage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []json.RawMessage `json:"messages"`
}

// ServeHTTP answers POST …/chat/completions and GET …/models; anything
// else is a 404 in OpenAI's shape.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error(), "")
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: data}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		u.record(req)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test","object":"model","created":1700000000,"owned_by":"openaitest"}]}`)
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions"):
		u.record(req)
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.URL.Path, "unknown_url")
		return
	}
	var body chatBody
	if err := json.Unmarshal(data, &body); err != nil {
		u.record(req)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error(), "")
		return
	}
	req.Stream = body.Stream
	req.Summary = isSummary(body.Messages)
	u.record(req)
	if u.Hook != nil && u.Hook(w, r, req) {
		return
	}
	if u.Latency > 0 {
		time.Sleep(u.Latency)
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
	} else if u.MaxPromptChars > 0 {
		n := 0
		for _, m := range body.Messages {
			n += len(m)
		}
		if n > u.MaxPromptChars {
			writeError(w, http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("This model's maximum context length is exceeded: %d characters of messages, at most %d.", n, u.MaxPromptChars),
				"context_length_exceeded")
			return
		}
	}
	prompt := 0
	for _, m := range body.Messages {
		prompt += len(m) / 4
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, len(text)/4+1, prompt+len(text)/4+1)
	model := body.Model
	if model == "" {
		model = "gpt-test"
	}
	w.Header().Set(DurationHeader, strconv.FormatInt(int64(time.Since(start)), 10))
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
	if strings.HasSuffix(req.Path, "/chat/completions") {
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
// system message summarizer.Instructions.
func isSummary(messages []json.RawMessage) bool {
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
	return (m.Role == "system" || m.Role == "developer") && s == summarizer.Instructions
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
func writeError(w http.ResponseWriter, status int, typ, msg, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	c := "null"
	if code != "" {
		c = quote(code)
	}
	fmt.Fprintf(w, `{"error":{"message":%s,"type":%q,"param":null,"code":%s}}`, quote(msg), typ, c)
}
