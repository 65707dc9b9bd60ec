package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
)

// hangingServer accepts requests and answers them with the given stream
// events (none: not even the headers), then says nothing more until the
// client gives up.
func hangingServer(t *testing.T, events ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A server notices a client leaving only once it has read the
		// request.
		io.Copy(io.Discard, r.Body)
		if len(events) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				fmt.Fprintf(w, "data: %s\n\n", e)
			}
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const partialCall = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,` +
	`"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"echo","arguments":"{\"te"}}]},"finish_reason":null}]}`

// TestRunRequestTimeout runs turns against servers that stop answering:
// the agent's request timeout, or the model's stream idle timeout, ends
// the turn long before the caller's deadline, with an error saying so,
// and nothing the server sent is taken for a response.
func TestRunRequestTimeout(t *testing.T) {
	tests := []struct {
		name   string
		events []string // what the server sends before it stops
		stream bool
		opts   []openai.Option
		agent  []agent.Option
		want   string
		is     []error
	}{
		{name: "no answer", agent: []agent.Option{agent.WithRequestTimeout(200 * time.Millisecond)},
			want: "model request 1: model provider: request timed out after 200ms", is: []error{context.DeadlineExceeded}},
		{name: "no answer, streaming", stream: true, agent: []agent.Option{agent.WithRequestTimeout(200 * time.Millisecond)},
			want: "model request 1: model provider: request timed out after 200ms", is: []error{context.DeadlineExceeded}},
		{name: "stream stops sending", stream: true, events: []string{partialCall},
			opts: []openai.Option{openai.WithStreamIdleTimeout(200 * time.Millisecond)},
			want: "model request 1: model provider status 200: response cut off: the stream sent nothing for 200ms (after 1 chunks)",
			is:   []error{context.DeadlineExceeded, model.ErrIncompleteResponse}},
		{name: "stream stops sending, request timeout first", stream: true, events: []string{partialCall},
			opts:  []openai.Option{openai.WithStreamIdleTimeout(time.Minute)},
			agent: []agent.Option{agent.WithRequestTimeout(200 * time.Millisecond)},
			want:  "model request 1: model provider status 200: request timed out after 200ms", is: []error{context.DeadlineExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := openai.New(append([]openai.Option{openai.WithBaseURL(hangingServer(t, tt.events...)),
				openai.WithAPIKey("test"), openai.WithMaxRetries(0)}, tt.opts...)...)
			opts := append([]agent.Option{agent.WithTools(echoTool)}, tt.agent...)
			if tt.stream {
				opts = append(opts, agent.WithOnText(func(string) {}))
			}
			st := &memStore{}
			opts = append(opts, agent.WithStore(st))
			// The caller's own deadline is far away: the error must come
			// from the agent's or the model's timeout.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := agent.New(m, opts...).Run(ctx, nil, "hi")
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%q, %v) = false", err, target)
				}
			}
			if ctx.Err() != nil {
				t.Errorf("the caller's deadline passed")
			}
			want := []processor.Message{processor.UserMessage("hi")}
			if diff := cmp.Diff(want, res.History); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, st.appended); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunStreamCutOff has the server end a stream in the middle of a tool
// call: the turn fails, and the truncated call is neither run nor stored.
func TestRunStreamCutOff(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", partialCall)
	}))
	defer srv.Close()
	m := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"), openai.WithMaxRetries(1))
	ran := 0
	tool := echoTool
	tool.Func = func(context.Context, json.RawMessage) (string, error) { ran++; return "", nil }
	st := &memStore{}
	res, err := agent.New(m, agent.WithTools(tool), agent.WithStore(st), agent.WithOnText(func(string) {})).Run(context.Background(), nil, "hi")
	if !errors.Is(err, model.ErrIncompleteResponse) || !strings.Contains(err.Error(), "response cut off") {
		t.Fatalf("error %v, want a cut-off response", err)
	}
	want := []processor.Message{processor.UserMessage("hi")}
	if diff := cmp.Diff(want, res.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, st.appended); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if ran != 0 {
		t.Errorf("the truncated call ran %d times", ran)
	}
}

// TestRunRequestTimeoutSetting checks that WithRequestTimeout reaches the
// model's settings, over the timeout of WithSettings.
func TestRunRequestTimeoutSetting(t *testing.T) {
	tests := []struct {
		name string
		opts []agent.Option
		want time.Duration
	}{
		{"none", nil, 0},
		{"option", []agent.Option{agent.WithRequestTimeout(time.Second)}, time.Second},
		{"over WithSettings", []agent.Option{agent.WithRequestTimeout(time.Second), agent.WithSettings(model.Settings{Timeout: time.Hour})}, time.Second},
		{"WithSettings alone", []agent.Option{agent.WithSettings(model.Settings{Timeout: time.Hour})}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := model.NewRecorder(model.RespondText("ok"))
			if _, err := agent.New(rec, tt.opts...).Run(context.Background(), nil, "hi"); err != nil {
				t.Fatal(err)
			}
			if got := rec.Calls()[0].Settings.Timeout; got != tt.want {
				t.Errorf("timeout %s, want %s", got, tt.want)
			}
		})
	}
}
