package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// TestOpenAIStreamCutOff has streams end, or stop sending, before the
// response is complete: the request fails with model.ErrIncompleteResponse and
// nothing of the partial response is returned. A stream none of whose
// text was shown is tried again; one whose text was shown is not.
func TestOpenAIStreamCutOff(t *testing.T) {
	text := []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"The answer is "}`, ""),
	}
	call := []string{
		chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"n"}}]}`, ""),
	}
	whole := append(append([]string(nil), call...),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\":1}"}}]}`, ""),
		chunk(`{}`, "tool_calls"), "[DONE]")
	tests := []struct {
		name     string
		attempts [][]string // the events of each attempt; the last repeats
		stall    bool       // hold each attempt open after its events
		status   int        // the error's status: 0 when no headers came
		retries  int
		want     string // the error's message, "" for success
		calls    int    // requests the server receives
		deltas   []string
		text     string // the response's text on success
		args     string // its tool call's arguments on success
	}{
		{name: "text cut off", attempts: [][]string{text}, retries: 2,
			want: "response cut off: the stream ended after 2 chunks without a finish_reason or [DONE]", calls: 1,
			deltas: []string{"The answer is "}},
		{name: "tool call cut off", attempts: [][]string{call}, retries: 0,
			want: "response cut off: the stream ended after 2 chunks without a finish_reason or [DONE]", calls: 1},
		{name: "tool call cut off, retried", attempts: [][]string{call}, retries: 1,
			want: "response cut off: the stream ended after 2 chunks without a finish_reason or [DONE]", calls: 2},
		{name: "tool call cut off, whole on retry", attempts: [][]string{call, whole}, retries: 1,
			calls: 2, args: `{"n":1}`},
		{name: "text stalled", attempts: [][]string{text}, stall: true, retries: 2,
			want: "response cut off: the stream sent nothing for 300ms (after 2 chunks)", calls: 1,
			deltas: []string{"The answer is "}},
		{name: "tool call stalled, retried", attempts: [][]string{call}, stall: true, retries: 1,
			want: "response cut off: the stream sent nothing for 300ms (after 2 chunks)", calls: 2},
		{name: "nothing sent, stalled", attempts: [][]string{nil}, stall: true, retries: 0, status: -1,
			want: "response cut off: the stream sent nothing for 300ms (after 0 chunks)", calls: 1},
		{name: "finish_reason without [DONE]", attempts: [][]string{append(text[:2:2], chunk(`{}`, "stop"))},
			calls: 1, deltas: []string{"The answer is "}, text: "The answer is "},
		{name: "[DONE] without finish_reason", attempts: [][]string{append(text[:2:2], "[DONE]")},
			calls: 1, deltas: []string{"The answer is "}, text: "The answer is "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				events := tt.attempts[min(n, len(tt.attempts)-1)]
				n++
				mu.Unlock()
				providertest.ReplySSE(events...)(w, r)
				if tt.stall {
					providertest.BlockUntilDone(w, r)
				}
			})
			var deltas []string
			m := chatModel(f, WithMaxRetries(tt.retries), WithStreamIdleTimeout(300*time.Millisecond))
			got, err := m.Request(context.Background(), providertest.History(), model.Settings{OnText: func(d string) { deltas = append(deltas, d) }})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				var args string
				if calls := got.ToolCalls(); len(calls) > 0 {
					args = calls[0].Args
				}
				if got.Text() != tt.text || args != tt.args {
					t.Errorf("response text %q, arguments %q; want %q, %q", got.Text(), args, tt.text, tt.args)
				}
			} else {
				want := model.Error{StatusCode: 200, Message: tt.want}
				if tt.status < 0 {
					want.StatusCode = 0
				}
				is := []error{model.ErrIncompleteResponse}
				if tt.stall {
					is = append(is, context.DeadlineExceeded)
				}
				providertest.CheckError(t, err, providertest.ErrorCase{Want: want, Is: is, Contains: tt.want})
				if got.Kind != 0 || got.Parts != nil {
					t.Errorf("a cut-off stream returned a response: %+v", got)
				}
			}
			mu.Lock()
			calls := n
			mu.Unlock()
			if calls != tt.calls {
				t.Errorf("the server received %d requests, want %d", calls, tt.calls)
			}
			if diff := cmp.Diff(tt.deltas, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenAIStreamKeepAlive has a server send nothing but keep-alive
// comments for longer than the idle timeout before it answers: a stream
// that keeps sending is not stalled.
func TestOpenAIStreamKeepAlive(t *testing.T) {
	const idle = 2 * time.Second
	f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for end := time.Now().Add(idle + idle/2); time.Now().Before(end); {
			io.WriteString(w, ": keep-alive\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(idle / 20)
		}
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk(`{"role":"assistant","content":"hi"}`, "stop"))
	})
	got, err := chatModel(f, WithStreamIdleTimeout(idle)).Request(context.Background(), providertest.History(), model.Settings{OnText: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text() != "hi" {
		t.Errorf("text %q, want hi", got.Text())
	}
}

// TestOpenAIStreamMalformed answers a streaming request with a 200 whose
// body is no event stream: the error says the response is malformed and
// what it held.
func TestOpenAIStreamMalformed(t *testing.T) {
	tests := []struct {
		name    string
		ctype   string
		body    string
		message string
	}{
		{"empty body", "text/event-stream", "", "malformed response: the body of the stream is empty"},
		{"garbage", "text/event-stream", "hello\nworld\n",
			`malformed response: not an event stream (Content-Type "text/event-stream"), it begins "hello world"`},
		{"a whole completion instead of a stream", "application/json", completion(`{"content":"hi"}`, ""),
			`malformed response: not an event stream (Content-Type "application/json"), it begins "{\"id\":\"chatcmpl-1\",`},
		{"only [DONE]", "text/event-stream", "data: [DONE]\n\n", "response has no choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				io.WriteString(w, tt.body)
			})
			_, err := chatModel(f).Request(context.Background(), providertest.History(), model.Settings{OnText: func(string) {}})
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T), want a *model.Error", err, err)
			}
			if !strings.HasPrefix(me.Message, tt.message) {
				t.Errorf("message %q, want one starting %q", me.Message, tt.message)
			}
			if !errors.Is(err, model.ErrMalformedResponse) || errors.Is(err, model.ErrIncompleteResponse) {
				t.Errorf("errors.Is(%q): model.ErrMalformedResponse %v, model.ErrIncompleteResponse %v; want true, false",
					err, errors.Is(err, model.ErrMalformedResponse), errors.Is(err, model.ErrIncompleteResponse))
			}
			if me.StatusCode != 200 {
				t.Errorf("status %d, want 200", me.StatusCode)
			}
		})
	}
}

// TestOpenAIStreamIdleDefault checks the idle timeout's default and that
// a negative one turns it off.
func TestOpenAIStreamIdleDefault(t *testing.T) {
	tests := []struct {
		opts []Option
		want time.Duration
	}{
		{nil, DefaultStreamIdleTimeout},
		{[]Option{WithStreamIdleTimeout(time.Second)}, time.Second},
		{[]Option{WithStreamIdleTimeout(-1)}, 0},
	}
	for _, tt := range tests {
		if got := New(tt.opts...).idle; got != tt.want {
			t.Errorf("idle timeout %s, want %s", got, tt.want)
		}
	}
}
