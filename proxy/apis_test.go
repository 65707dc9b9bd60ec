package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
)

// sseUpstream answers every request with a stream of server-sent events,
// recording the path, the headers and the body of each request.
type sseUpstream struct {
	events  []string // data of each event, with its event name before a newline
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	bodies  [][]byte
}

func (u *sseUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.paths = append(u.paths, r.URL.Path)
	u.headers = append(u.headers, r.Header.Clone())
	u.bodies = append(u.bodies, body)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range u.events {
		name, data, _ := strings.Cut(e, "\n")
		_, _ = io.WriteString(w, "event: "+name+"\ndata: "+data+"\n\n")
		w.(http.Flusher).Flush()
	}
}

var responsesStream = []string{
	"response.created\n" + `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-5-codex","output":[]}}`,
	"response.output_text.delta\n" + `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Linted."}`,
	"response.completed\n" + `{"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5-codex","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Linted.","annotations":[]}]}],"usage":{"input_tokens":900,"input_tokens_details":{"cached_tokens":512},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":903}}}`,
}

var messagesStream = []string{
	"message_start\n" + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_read_input_tokens":800,"cache_creation_input_tokens":40,"output_tokens":1}}}`,
	"content_block_start\n" + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	"content_block_delta\n" + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Fixed."}}`,
	"content_block_stop\n" + `{"type":"content_block_stop","index":0}`,
	"message_delta\n" + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
	"message_stop\n" + `{"type":"message_stop"}`,
}

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestResponsesAndMessages serves Codex- and Claude Code-shaped requests,
// streamed, through the proxy, with an OpenAI upstream and an Anthropic
// one: each reaches its own upstream compacted and valid, every field
// outside its history byte-identical, the raw reasoning and thinking of
// the turn in progress unchanged, the API key headers as sent (and never
// logged); each SSE dialect reaches the client's SDK, which reads it
// whole.
func TestResponsesAndMessages(t *testing.T) {
	openaiUp := &sseUpstream{events: responsesStream}
	anthropicUp := &sseUpstream{events: messagesStream}
	oSrv, aSrv := httptest.NewServer(openaiUp), httptest.NewServer(anthropicUp)
	defer oSrv.Close()
	defer aSrv.Close()
	oURL, _ := url.Parse(oSrv.URL + "/v1")
	aURL, _ := url.Parse(aSrv.URL + "/v1")
	win := window.New(window.Options{MaxMessages: 6, KeepMessages: 3})
	core, logs := observer.New(zapcore.DebugLevel)
	var mu sync.Mutex
	usage := map[string]processor.Usage{}
	p := proxy.New(proxy.Options{
		OnEvent: func(_ context.Context, e middleware.Event) {
			if e.Type == middleware.EventUsage {
				mu.Lock()
				usage[e.API] = e.Usage
				mu.Unlock()
			}
		},
		Upstream:  oURL,
		Upstreams: map[string]*url.URL{"messages": aURL},
		Chain:     processor.Chain(trimtools.New(trimtools.Options{MaxChars: 400}), win),
		Logger:    zap.New(core),
	})
	srv := httptest.NewServer(p)
	defer srv.Close()
	ctx := context.Background()

	codex := readTestdata(t, "../internal/wire/testdata/responses/codex-tool-loop.json")
	oc := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	stream := oc.Responses.NewStreaming(ctx, responses.ResponseNewParams{}, option.WithRequestBody("application/json", codex))
	var text string
	for stream.Next() {
		if e := stream.Current(); e.Type == "response.completed" {
			text = e.Response.OutputText()
		}
	}
	if err := stream.Err(); err != nil || text != "Linted." {
		t.Fatalf("responses stream: %q, %v", text, err)
	}

	claude := readTestdata(t, "../internal/wire/testdata/messages/claude-code-tool-loop.json")
	ac := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey(secret), aoption.WithMaxRetries(0))
	ms := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{}, aoption.WithRequestBody("application/json", claude))
	var msg anthropic.Message
	for ms.Next() {
		if err := msg.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Err(); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != "Fixed." {
		t.Fatalf("messages stream: %+v, %v", msg.Content, err)
	}

	for _, tc := range []struct {
		codec   wire.Codec
		up      *sseUpstream
		path    string
		sent    []byte
		history string
		header  string
	}{
		{wire.Responses, openaiUp, "/v1/responses", codex, "input", "Authorization"},
		{wire.Messages, anthropicUp, "/v1/messages", claude, "messages", "X-Api-Key"},
	} {
		if len(tc.up.bodies) != 1 || tc.up.paths[0] != tc.path {
			t.Fatalf("%s upstream got %q", tc.codec.API(), tc.up.paths)
		}
		got := tc.up.bodies[0]
		in, err := tc.codec.Parse(tc.sent, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tc.codec.Parse(got, nil)
		if err != nil {
			t.Fatalf("%s upstream got a body it cannot read: %v", tc.codec.API(), err)
		}
		if err := processor.Validate(b.Messages); err != nil {
			t.Errorf("%s upstream got an invalid history: %v", tc.codec.API(), err)
		}
		if err := tc.codec.Validate(in.Messages, b.Messages); err != nil {
			t.Errorf("%s upstream got a history its API refuses: %v", tc.codec.API(), err)
		}
		if len(got) >= len(tc.sent) {
			t.Errorf("%s: not compacted (%d bytes, %d sent)", tc.codec.API(), len(got), len(tc.sent))
		}
		if a, b := outside(t, tc.sent, tc.history), outside(t, got, tc.history); a != b {
			t.Errorf("%s: fields outside the history changed:\n sent %s\n  got %s", tc.codec.API(), a, b)
		}
		for _, m := range in.Messages[len(in.Messages)-2:] {
			for _, part := range m.Parts {
				if th, ok := part.(processor.Thinking); ok && !bytes.Contains(got, []byte(th.Raw)) {
					t.Errorf("%s: the thinking of the turn in progress changed: %s", tc.codec.API(), th.Raw)
				}
			}
		}
		if h := tc.up.headers[0].Get(tc.header); !strings.Contains(h, secret) {
			t.Errorf("%s: %s %q", tc.codec.API(), tc.header, h)
		}
	}
	// The usage each stream reported, read as it passed.
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]processor.Usage{
		"responses": {InputTokens: 900, CachedInputTokens: 512, OutputTokens: 3},
		"messages":  {InputTokens: 852, CachedInputTokens: 800, CacheWriteInputTokens: 40, OutputTokens: 2},
	}, usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if v := anthropicUp.headers[0].Get("Anthropic-Version"); v == "" {
		t.Error("anthropic-version not forwarded")
	}
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, secret) {
				t.Errorf("log %q field %s holds the key", e.Message, k)
			}
		}
	}
}

// outside returns a body with its history field removed: the fields the
// proxy must forward byte for byte, as raw JSON, in their order.
func outside(t *testing.T, body []byte, history string) string {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, history)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		b.WriteString(k + "=" + string(fields[k]) + ";")
	}
	return b.String()
}
