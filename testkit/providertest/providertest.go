// Package providertest is what the tests of the model providers (package
// model/openai's Chat Completions and Responses models, package
// model/anthropic's Messages model) share: a fake server that records
// every request it receives and answers with a handler, the handlers that
// answer with JSON, an event stream or nothing, a small history and tool,
// and the check of an error a model returned.
package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Key is the API key the tests give their models: long enough to be a
// secret, so that no error may show it.
const Key = "sk-test-secret-key-0123456789"

// Server is an httptest server for the model APIs (Chat Completions,
// Responses, Messages): it records every request it receives and answers
// with its handler. Its URL is the base URL to give a model.
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	requests []Request
}

// Request is one request a [Server] received.
type Request struct {
	// Path, Auth (the Authorization header) and ContentType are the
	// request's.
	Path, Auth, ContentType string
	// Header is the request's whole header.
	Header http.Header
	// Body is the request's JSON body.
	Body map[string]any
	// Err is the error reading or decoding the body, if any.
	Err error
}

// NewServer starts a Server answering with handler, closed when the test
// ends. A request whose body is not a JSON object fails the test.
func NewServer(t *testing.T, handler http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := Request{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Header: r.Header.Clone()}
		data, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(data, &rec.Body)
		}
		if err != nil {
			t.Errorf("request body %q: %v", data, err)
		}
		rec.Err = err
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Only returns the single request the server received, and fails the
// test when it received another number or could not read its body.
func (s *Server) Only(t *testing.T) Request {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server received %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Err != nil {
		t.Fatalf("request body: %v", r.Err)
	}
	return r
}

// ReplyJSON answers with status and a JSON body.
func ReplyJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// ReplySSE answers with a server-sent event stream of the given data
// lines, as Chat Completions streams.
func ReplySSE(events ...string) http.HandlerFunc {
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

// ReplyEvents answers with a server-sent event stream of named events, as
// the Responses and Messages APIs stream: each pair is an event's name and
// its data.
func ReplyEvents(pairs ...string) http.HandlerFunc {
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

// BlockUntilDone answers nothing until the client gives up.
func BlockUntilDone(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// History is a small valid history ending with a tool return.
func History() []processor.Message {
	return []processor.Message{
		processor.SystemMessage("You are terse."),
		processor.UserMessage("List the files."),
		processor.NewResponse(processor.Text{Content: ""}, processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "call_1", Content: "a.go\nb.go"}),
	}
}

// ThinkingHistory is [History] with the assistant's reasoning, as an API
// reported it.
func ThinkingHistory(th processor.Thinking) []processor.Message {
	h := History()
	h[2].Parts = append([]processor.Part{th}, h[2].Parts...)
	return h
}

// BashTool is a tool with a description and a parameters schema.
func BashTool() model.Tool {
	return model.Tool{
		Name:        "bash",
		Description: "Run a shell command.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
	}
}

// ErrorCase describes an expected failure.
type ErrorCase struct {
	// Want is the error's fields, compared without Err.
	Want model.Error
	// Is are the errors the error must match with errors.Is; it must
	// match model.ErrContextOverflow exactly when Is holds it.
	Is []error
	// Contains is text the error's must hold.
	Contains string
}

// CheckError checks that err is a [*model.Error] as want describes, and
// that neither its text nor its %+v holds [Key].
func CheckError(t *testing.T, err error, want ErrorCase) {
	t.Helper()
	if err == nil {
		t.Fatal("Request succeeded, want an error")
	}
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %q (%T) is not a *model.Error", err, err)
	}
	if diff := cmp.Diff(want.Want, *me, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
		t.Errorf("error fields (-want +got):\n%s", diff)
	}
	for _, target := range want.Is {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(%q, %v) = false", err, target)
		}
	}
	overflow := slices.Contains(want.Is, model.ErrContextOverflow)
	if errors.Is(err, model.ErrContextOverflow) != overflow {
		t.Errorf("errors.Is(%q, ErrContextOverflow) = %v, want %v", err, errors.Is(err, model.ErrContextOverflow), overflow)
	}
	if !strings.Contains(err.Error(), want.Contains) {
		t.Errorf("error %q does not contain %q", err, want.Contains)
	}
	if strings.Contains(err.Error(), Key) || strings.Contains(fmt.Sprintf("%+v", err), Key) {
		t.Errorf("error %q contains the API key", err)
	}
}
