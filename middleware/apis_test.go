package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
)

// recorder is an upstream that records each request and answers with
// the next of its answers (the last one again when they run out).
type recorder struct {
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	answers []answer
}

type answer struct {
	status int
	body   string
}

func (u *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	u.headers = append(u.headers, r.Header.Clone())
	a := u.answers[min(len(u.bodies), len(u.answers))-1]
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// topLevel returns the raw bytes of each top-level field of a body.
func topLevel(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	out := map[string]string{}
	for k, v := range fields {
		out[k] = string(v)
	}
	return out
}

// opaqueRaws returns the raw bytes of every unmodelled item and of every
// thinking kept whole in a history.
func opaqueRaws(h []processor.Message) []string {
	var out []string
	for _, m := range h {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.Opaque:
				out = append(out, p.Raw)
			case processor.Thinking:
				out = append(out, p.Raw)
			}
		}
	}
	return out
}

// checkForwarded checks what the upstream received for sent: a body
// that codec reads into a valid history, smaller than sent, every field
// but history's byte-identical, and the given raw items in it unchanged.
func checkForwarded(t *testing.T, codec wire.Codec, sent, got []byte, history, kept []string) {
	t.Helper()
	b, err := codec.Parse(got, nil)
	if err != nil {
		t.Fatalf("upstream received a body %s cannot read: %v", codec.API(), err)
	}
	if err := processor.Validate(b.Messages); err != nil {
		t.Fatalf("upstream received an invalid history: %v", err)
	}
	if err := codec.Validate(b.Messages, b.Messages); err != nil {
		t.Fatalf("upstream received a history the %s API refuses: %v", codec.API(), err)
	}
	if len(got) >= len(sent) {
		t.Errorf("upstream received %d bytes, the client sent %d: not compacted", len(got), len(sent))
	}
	want, have := topLevel(t, sent), topLevel(t, got)
	for _, k := range history {
		delete(want, k)
		delete(have, k)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("fields outside the history changed (-sent +received):\n%s", diff)
	}
	for _, raw := range kept {
		if !bytes.Contains(got, []byte(raw)) {
			t.Errorf("upstream did not receive, byte for byte: %s", raw)
		}
	}
}

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// chainFor returns a trimmer and a window small enough to compact the
// fixtures.
func chainFor() (processor.Processor, *window.Window) {
	win := window.New(window.Options{MaxMessages: 6, KeepMessages: 3})
	return processor.Chain(trimtools.New(trimtools.Options{MaxChars: 400}), win), win
}

// TestResponsesNew sends a Codex-shaped Responses request through
// openai-go's client.Responses.New with the middleware: the upstream
// receives it compacted and valid, with instructions, tools, reasoning
// settings and every other field byte-identical, the encrypted reasoning
// of the turn in progress and the items abridge does not model unchanged.
func TestResponsesNew(t *testing.T) {
	sent := readFixture(t, "../internal/wire/testdata/responses/codex-tool-loop.json")
	up := &recorder{answers: []answer{{200, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5-codex","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Linted.","annotations":[]}]}],"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":512},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":903}}`}}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	chain, win := chainFor()
	ev := &events{}
	mw := middleware.New(chain, middleware.Options{Compactor: win, OnEvent: ev.onMiddleware})
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(secret), option.WithMiddleware(mw), option.WithMaxRetries(0))
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent))
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Linted." {
		t.Errorf("output %q", resp.OutputText())
	}
	if len(up.bodies) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(up.bodies))
	}
	in, err := wire.Responses.Parse(sent, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The reasoning of the last response and the items of the tail.
	kept := opaqueRaws(in.Messages[len(in.Messages)-3:])
	checkForwarded(t, wire.Responses, sent, up.bodies[0], []string{"input"}, kept)
	if ev.count(middleware.EventProcessed) != 1 {
		t.Errorf("events %+v", ev.mw)
	}
	checkUsage(t, ev, processor.Usage{InputTokens: 900, CachedInputTokens: 512, OutputTokens: 3})
}

// checkUsage checks the one usage the middleware reported.
func checkUsage(t *testing.T, ev *events, want processor.Usage) {
	t.Helper()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var got []processor.Usage
	for _, e := range ev.mw {
		if e.Type == middleware.EventUsage {
			got = append(got, e.Usage)
		}
	}
	if diff := cmp.Diff([]processor.Usage{want}, got); diff != "" {
		t.Errorf("usage reported (-want +got):\n%s", diff)
	}
}

// TestResponsesStored: a request naming previous_response_id passes
// untouched, and is counted.
func TestResponsesStored(t *testing.T) {
	sent := []byte(`{"model":"gpt-5","previous_response_id":"resp_0","input":[{"type":"function_call_output","call_id":"c1","output":"` + string(bytes.Repeat([]byte("x"), 2000)) + `"}]}`)
	up := &recorder{answers: []answer{{200, `{"id":"resp_1","object":"response","status":"completed","output":[]}`}}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	chain, _ := chainFor()
	ev := &events{}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(secret),
		option.WithMiddleware(middleware.New(chain, middleware.Options{OnEvent: ev.onMiddleware})), option.WithMaxRetries(0))
	if _, err := client.Responses.New(context.Background(), responses.ResponseNewParams{}, option.WithRequestBody("application/json", sent)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(up.bodies[0], sent) {
		t.Errorf("upstream received %s", up.bodies[0])
	}
	if ev.count(middleware.EventStored) != 1 || ev.count(middleware.EventProcessed) != 0 {
		t.Errorf("events %+v", ev.mw)
	}
}

const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Fixed."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":800,"cache_creation_input_tokens":40,"output_tokens":2}}`

// TestAnthropicMessages sends a Claude Code-shaped request through
// anthropic-sdk-go's client.Messages.New with the middleware (its
// option.WithMiddleware takes the same value): the upstream receives it
// compacted and valid, system, tools, thinking settings and metadata
// byte-identical, the API key and version headers as sent, and the signed
// thinking of the turn in its tool loop unchanged. A first answer that
// the prompt is too long makes the middleware compact once more and
// retry once.
func TestAnthropicMessages(t *testing.T) {
	sent := readFixture(t, "../internal/wire/testdata/messages/claude-code-tool-loop.json")
	for _, tc := range []struct {
		name    string
		answers []answer
		want    int
	}{
		{"answered", []answer{{200, anthropicAnswer}}, 1},
		{"overflow then answered", []answer{{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`}, {200, anthropicAnswer}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &recorder{answers: tc.answers}
			srv := httptest.NewServer(up)
			defer srv.Close()
			chain, win := chainFor()
			ev := &events{}
			mw := middleware.New(chain, middleware.Options{Compactor: win, OnEvent: ev.onMiddleware})
			client := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey(secret), aoption.WithMiddleware(mw), aoption.WithMaxRetries(0))
			msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{}, aoption.WithRequestBody("application/json", sent))
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Text != "Fixed." {
				t.Errorf("answer %+v", msg.Content)
			}
			if len(up.bodies) != tc.want {
				t.Fatalf("upstream got %d requests, want %d", len(up.bodies), tc.want)
			}
			in, err := wire.Messages.Parse(sent, nil)
			if err != nil {
				t.Fatal(err)
			}
			last := in.Messages[len(in.Messages)-2] // the turn in its tool loop
			for i, got := range up.bodies {
				checkForwarded(t, wire.Messages, sent, got, []string{"messages"}, opaqueRaws([]processor.Message{last}))
				if i > 0 && len(got) >= len(up.bodies[i-1]) {
					t.Errorf("retry sent %d bytes, the first request %d", len(got), len(up.bodies[i-1]))
				}
				h := up.headers[i]
				if h.Get("X-Api-Key") != secret || h.Get("Anthropic-Version") == "" {
					t.Errorf("request %d: x-api-key %q, anthropic-version %q", i, h.Get("X-Api-Key"), h.Get("Anthropic-Version"))
				}
			}
			if tc.want == 2 && ev.count(middleware.EventOverflow) != 1 {
				t.Errorf("events %+v", ev.mw)
			}
			// Anthropic's input_tokens leaves out the cache's reads and
			// writes: the input is the three summed, the writes counted apart too.
			checkUsage(t, ev, processor.Usage{InputTokens: 12 + 800 + 40, CachedInputTokens: 800, CacheWriteInputTokens: 40, OutputTokens: 2})
		})
	}
}

// TestTransport: a plain http.Client whose Transport wraps the middleware
// sends its Messages request compacted, as an SDK's middleware does.
func TestTransport(t *testing.T) {
	sent := readFixture(t, "../internal/wire/testdata/messages/claude-code-tool-loop.json")
	up := &recorder{answers: []answer{{200, anthropicAnswer}}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	chain, win := chainFor()
	client := &http.Client{Transport: middleware.Transport(middleware.New(chain, middleware.Options{Compactor: win}), nil)}
	resp, err := client.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(sent))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(up.bodies) != 1 {
		t.Fatalf("status %d, %d requests upstream", resp.StatusCode, len(up.bodies))
	}
	checkForwarded(t, wire.Messages, sent, up.bodies[0], []string{"messages"}, nil)
}

// TestUnwritableSentAsWritten: a chain whose result the request's codec
// cannot write (here a part of another API) fails no request: it goes as
// the app wrote it, and the failure is reported.
func TestUnwritableSentAsWritten(t *testing.T) {
	sent := readFixture(t, "../internal/wire/testdata/messages/sdk-simple.json")
	up := &recorder{answers: []answer{{200, anthropicAnswer}}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	foreign := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		out := append([]processor.Message(nil), h...)
		last := out[len(out)-1]
		out[len(out)-1] = processor.NewRequest(append(append([]processor.Part(nil), last.Parts...),
			processor.Opaque{API: "responses", Type: "item_reference", Raw: `{"type":"item_reference","id":"x"}`})...)
		return out, nil
	})
	ev := &events{}
	client := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey(secret), aoption.WithMaxRetries(0),
		aoption.WithMiddleware(middleware.New(foreign, middleware.Options{OnEvent: ev.onMiddleware})))
	if _, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{}, aoption.WithRequestBody("application/json", sent)); err != nil {
		t.Fatal(err)
	}
	if len(up.bodies) != 1 || !bytes.Equal(up.bodies[0], sent) {
		t.Errorf("upstream got %q, want the body as sent", up.bodies)
	}
	if ev.count(middleware.EventChainFailed) != 1 {
		t.Errorf("events %+v", ev.mw)
	}
}
