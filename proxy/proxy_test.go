package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/model"
	openaimodel "github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/processors/window/windowlog"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/openaitest"
	"github.com/abridge-go/abridge/transcript"
)

const secret = "sk-client-secret-0123456789"

// fixture is a proxy in front of a fake upstream, with the chain abridge
// serve builds: the trimmer, then a window whose LLM summarizer calls the
// same upstream with the client's Authorization.
type fixture struct {
	up     *openaitest.Upstream
	upSrv  *httptest.Server
	srv    *httptest.Server
	reg    *prometheus.Registry
	logs   *observer.ObservedLogs
	trim   processor.Processor
	mu     sync.Mutex
	bodies [][]byte // chat completions bodies as clients sent them
}

func newFixture(t *testing.T, up *openaitest.Upstream, change func(*proxy.Options)) *fixture {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	f := &fixture{up: up, reg: prometheus.NewRegistry(), trim: trimtools.New(trimtools.Options{})}
	f.upSrv = httptest.NewServer(up)
	t.Cleanup(f.upSrv.Close)
	metrics, err := proxy.NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	f.logs = logs
	logger := zap.New(core)
	sm := openaimodel.New(openaimodel.WithBaseURL(f.upSrv.URL), openaimodel.WithMaxRetries(0),
		openaimodel.WithHTTPClient(&http.Client{Transport: proxy.ForwardAuthorization(mustURL(t, f.upSrv.URL), nil)}))
	win := window.New(window.Options{
		Summarizer: metrics.Summarizer(llm.New(model.Observe(sm, metrics.SummarizerRequest), llm.Options{})),
		OnEvent:    windowlog.Events(logger, metrics.WindowEvent),
		Ahead:      -1, // summaries written when due: TestAheadThroughProxy has them written ahead
	})
	upstream, _ := url.Parse(f.upSrv.URL + "/v1")
	opts := proxy.Options{
		Upstream: upstream,
		Chain:    processor.Chain(f.trim, win),
		Logger:   logger,
		Metrics:  metrics,
	}
	if change != nil {
		change(&opts)
	}
	p := proxy.New(opts)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			data, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(data))
			f.mu.Lock()
			f.bodies = append(f.bodies, data)
			f.mu.Unlock()
		}
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// sent returns the chat completions bodies clients sent so far.
func (f *fixture) sent() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

func (f *fixture) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(f.srv.URL + "/v1"),
		option.WithAPIKey(secret), option.WithMaxRetries(0)}, opts...)...)
}

func (f *fixture) post(t *testing.T, path, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	data := openaitest.ReadAll(t, resp, err)
	return resp, data
}

// noSecrets fails the test if any log line shows the client's key.
func (f *fixture) noSecrets(t *testing.T) {
	t.Helper()
	for _, e := range f.logs.All() {
		line := e.Message
		for _, fld := range e.Context {
			line += " " + fld.String
			if fld.Interface != nil {
				line += fmt.Sprint(fld.Interface)
			}
		}
		if strings.Contains(line, secret) || strings.Contains(line, "Bearer") {
			t.Errorf("log line shows the Authorization header: %s", line)
		}
	}
}

// TestTranscript replays a 120-message tool-using conversation from a
// shared transcript through openai-go and the proxy, the client keeping
// its full history, alternately streamed and not: every request reaches
// the upstream valid, byte-identical outside "messages", with the client's
// Authorization, and compacted (the client's head, one marker, the client's
// tail) once past the window's trigger. The summarizer, with no key of its
// own, pays with the client's Authorization.
func TestTranscript(t *testing.T) {
	_, msgs := openaitest.SharedConversation(t, 120)
	f := newFixture(t, &openaitest.Upstream{}, nil)
	client := f.client()
	ctx := context.Background()
	lengths := openaitest.RequestLengths(msgs)
	for i, n := range lengths {
		streamed := i%2 == 0
		answer, usage, err := openaitest.Ask(ctx, client, requestParams(t, msgs[:n]), streamed)
		if err != nil {
			t.Fatalf("request %d (%d messages, streamed %v): %v", i, n, streamed, err)
		}
		if answer != "ok" || (streamed && usage.TotalTokens == 0) {
			t.Fatalf("request %d: answer %q, usage %+v", i, answer, usage)
		}
	}
	chats, sent := f.up.Chats(), f.sent()
	if len(chats) != len(lengths) || len(sent) != len(lengths) {
		t.Fatalf("upstream got %d requests, the proxy %d, want %d", len(chats), len(sent), len(lengths))
	}
	compacted := 0
	for i, got := range chats {
		fw, err := openaitest.CheckForwarded(sent[i], got.Body, f.trim)
		if err != nil {
			t.Errorf("request %d (%d messages): %v", i, lengths[i], err)
		}
		if fw.Compacted {
			compacted++
		} else if fw.Sent > 41 {
			t.Errorf("request %d: %d messages sent uncompacted", i, fw.Sent)
		}
		if auth := got.Header.Get("Authorization"); auth != "Bearer "+secret {
			t.Errorf("request %d: Authorization %q, want the client's", i, auth)
		}
	}
	summaries := 0
	for _, r := range f.up.Requests() {
		if r.Summary {
			summaries++
			if auth := r.Header.Get("Authorization"); auth != "Bearer "+secret {
				t.Errorf("summarizer request with Authorization %q, want the client's", auth)
			}
		}
	}
	t.Logf("%d requests, %d compacted, %d summarizer calls", len(chats), compacted, summaries)
	if compacted == 0 || summaries == 0 {
		t.Errorf("%d compacted requests, %d summarizer calls: want some of each", compacted, summaries)
	}
	f.noSecrets(t)
}

func requestParams(t *testing.T, msgs []json.RawMessage) openai.ChatCompletionNewParams {
	t.Helper()
	params := openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       "bash",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}},
		})},
		ToolChoice:     openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}},
		Seed:           openai.Int(7),
	}
	params.SetExtraFields(map[string]any{"x_vendor": map[string]any{"cache": true}})
	var err error
	if params.Messages, err = openaitest.Messages(msgs); err != nil {
		t.Fatal(err)
	}
	return params
}

// TestRejected checks that a request abridge cannot process is answered
// with an OpenAI-shaped error naming what is wrong, and forwarded nowhere.
func TestRejected(t *testing.T) {
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 2000) + `"}]}`
	tests := []struct {
		name, body string
		chunked    bool
		status     int
		code, says string
	}{
		{"not JSON", "model=m", false, 400, middleware.CodeInvalidJSON, "not a valid JSON object"},
		{"no messages", `{"model":"m","prompt":"hi"}`, false, 400, middleware.CodeMissingMessages, `no "messages"`},
		{"messages not an array", `{"model":"m","messages":{"role":"user"}}`, false, 400, middleware.CodeMissingMessages, "not an array"},
		{"message without role", `{"model":"m","messages":[{"content":"hi"}]}`, false, 400, middleware.CodeInvalidMessage, "message 0"},
		{"bytes after the object", `{"model":"m","messages":[{"role":"user","content":"hi"}]}}`, false, 400, middleware.CodeInvalidJSON, "after the object"},
		{"empty messages", `{"model":"m","messages":[]}`, false, 400, middleware.CodeMissingMessages, `"messages" is empty`},
		{"ends with two answers", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yes"},{"role":"assistant","content":"no"}]}`, false, 400,
			middleware.CodeInvalidHistory, "does not end with a request"},
		{"too large", big, false, 413, "request_too_large", "1024 bytes, the proxy's limit: raise ABRIDGE_SERVE_MAX_BODY_MB"},
		{"too large, chunked", big, true, 413, "request_too_large", "1024 bytes, the proxy's limit: raise ABRIDGE_SERVE_MAX_BODY_MB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &openaitest.Upstream{}, func(o *proxy.Options) { o.MaxBodyBytes = 1024 })
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(tt.body))
			if tt.chunked {
				req.Body = io.NopCloser(strings.NewReader(tt.body)) // length unknown: sent chunked
				req.ContentLength = -1
			}
			req.Header.Set("Authorization", "Bearer "+secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, type %q (%s), want %d, JSON", resp.StatusCode, resp.Header.Get("Content-Type"), data, tt.status)
			}
			var got struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("answer %s: %v", data, err)
			}
			if got.Error.Code != tt.code || got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, tt.says) {
				t.Errorf("error %+v: want code %s, saying %q", got.Error, tt.code, tt.says)
			}
			if n := len(f.up.Requests()); n != 0 {
				t.Errorf("upstream got %d requests, want none", n)
			}
			if n := counter(t, f.reg, "abridge_requests_total", "code", fmt.Sprint(tt.status)); n != 1 {
				t.Errorf("abridge_requests_total{code=%d} = %v, want 1", tt.status, n)
			}
			if n := counter(t, f.reg, "abridge_rejected_requests_total", "error", tt.code); n != 1 {
				t.Errorf("abridge_rejected_requests_total{error=%s} = %v, want 1", tt.code, n)
			}
			f.noSecrets(t)
		})
	}
}

// TestRoutes checks that requests other than chat completions go to the
// upstream unchanged: the path under the upstream's base (which may have a
// path of its own), the query, the body, the headers (but abridge's
// conversation header); and that a path outside /v1 is answered 404
// without reaching the upstream.
func TestRoutes(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantPath                 string
		wantStatus               int
	}{
		{"models", http.MethodGet, "/v1/models?limit=2", "", "/api/v1/models", 200},
		{"embeddings", http.MethodPost, "/v1/embeddings", `{"input":"x","model":"e","messages":"not processed"}`, "/api/v1/embeddings", 404},
		{"outside /v1", http.MethodGet, "/admin", "", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &openaitest.Upstream{}, func(o *proxy.Options) {
				o.Upstream, _ = url.Parse(o.Upstream.String()[:len(o.Upstream.String())-len("/v1")] + "/api/v1")
			})
			req, _ := http.NewRequest(tt.method, f.srv.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("OpenAI-Organization", "org-1")
			req.Header.Set(middleware.ConversationHeader, "conv-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			reqs := f.up.Requests()
			if tt.wantPath == "" {
				if len(reqs) != 0 {
					t.Errorf("upstream got %d requests, want none", len(reqs))
				}
				return
			}
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if v := got.Header.Get(middleware.ConversationHeader); v != "" {
				t.Errorf("conversation header %q forwarded", v)
			}
			if got.Path != tt.wantPath || string(got.Body) != tt.body ||
				got.Header.Get("Authorization") != "Bearer "+secret || got.Header.Get("OpenAI-Organization") != "org-1" {
				t.Errorf("upstream got %s %q with Authorization %q, organization %q; want %s %q, the client's headers",
					got.Path, got.Body, got.Header.Get("Authorization"), got.Header.Get("OpenAI-Organization"), tt.wantPath, tt.body)
			}
		})
	}
}

// TestUnsafePaths checks that a path an upstream or a front server would
// resolve elsewhere once decoded (dot segments, encoded slashes,
// backslashes) is answered 400 and forwarded nowhere, and that plain
// escapes pass.
func TestUnsafePaths(t *testing.T) {
	tests := []struct {
		path   string
		status int
	}{
		{"/v1/%2e%2e/%2e%2e/metrics", 400},
		{"/v1/%2E%2E/admin", 400},
		{"/v1/models/%2e", 400},
		{"/v1/files/a%2Fb", 400},
		{"/v1/files/a%2f..%2fb", 400},
		{"/v1/files/a%5Cb", 400},
		{"/v1/models/my%20model", 200},
		{"/v1/models", 200},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			f := newFixture(t, &openaitest.Upstream{}, nil)
			req, err := http.NewRequest(http.MethodGet, f.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.status == 400 {
				if resp.StatusCode != 400 || !strings.Contains(string(data), `"invalid_path"`) {
					t.Errorf("status %d (%s), want 400 invalid_path", resp.StatusCode, data)
				}
				if n := len(f.up.Requests()); n != 0 {
					t.Errorf("upstream got %d requests, want none", n)
				}
				return
			}
			if n := len(f.up.Requests()); n != 1 {
				t.Errorf("upstream got %d requests, want 1 (status %d: %s)", n, resp.StatusCode, data)
			}
		})
	}
}

// TestStreamPassesThrough checks that a stream reaches the client chunk by
// chunk as the upstream writes it: the client reads the first chunk while
// the upstream still holds back the rest.
func TestStreamPassesThrough(t *testing.T) {
	release := make(chan struct{})
	up := &openaitest.Upstream{Hook: func(w http.ResponseWriter, _ *http.Request, req openaitest.Request) bool {
		if req.Summary {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"first"},"finish_reason":null}]}`+"\n\n")
		http.NewResponseController(w).Flush()
		<-release
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" second"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		return true
	}}
	f := newFixture(t, up, nil)
	client := f.client()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	defer stream.Close()
	got := make(chan string, 1)
	go func() {
		if stream.Next() {
			got <- stream.Current().Choices[0].Delta.Content
		}
		close(got)
	}()
	select {
	case s := <-got:
		if s != "first" {
			t.Errorf("first chunk %q, want first", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first chunk did not reach the client while the upstream held back the rest: the stream is buffered")
	}
	close(release)
	var rest []string
	for stream.Next() {
		rest = append(rest, stream.Current().Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{" second"}, rest); diff != "" {
		t.Errorf("rest of the stream (-want +got):\n%s", diff)
	}
}

// TestSummarizerFailure checks that a summarizer that fails does not fail
// the client's request: the window's digest stands in, and the failure is
// counted.
func TestSummarizerFailure(t *testing.T) {
	up := &openaitest.Upstream{Hook: func(w http.ResponseWriter, _ *http.Request, req openaitest.Request) bool {
		if !req.Summary {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"summarizer down","type":"server_error","code":null}}`)
		return true
	}}
	f := newFixture(t, up, nil)
	body := longConversation(50)
	resp, data := f.post(t, "/v1/chat/completions", body, http.Header{"Authorization": {"Bearer " + secret}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	chats := f.up.Chats()
	if len(chats) != 1 {
		t.Fatalf("%d client requests upstream, want 1", len(chats))
	}
	fw, err := openaitest.CheckForwarded([]byte(body), chats[0].Body, f.trim)
	if err != nil || !fw.Compacted {
		t.Fatalf("forwarded %+v, %v: want compacted by the digest", fw, err)
	}
	if n := counter(t, f.reg, "abridge_summarizer_calls_total", "result", "error"); n != 1 {
		t.Errorf("summarizer errors counted: %v, want 1", n)
	}
	if n := counter(t, f.reg, "abridge_compactions_total", "result", "fallback"); n != 1 {
		t.Errorf("fallback compactions counted: %v, want 1", n)
	}
}

// longConversation is a chat completions body of about n messages: a
// tool-using conversation.
func longConversation(n int) string {
	msgs := []string{`{"role":"system","content":"You are a coding agent."}`, `{"role":"user","content":"Fix the build."}`}
	for i := 0; len(msgs) < n-1; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"bash","arguments":"{\"command\":\"make test\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"`+strings.Repeat(fmt.Sprintf("line %d of the output ", i), 20)+`"}`)
	}
	msgs = append(msgs, `{"role":"user","content":"Is it fixed?"}`)
	return `{"model":"gpt-test","messages":[` + strings.Join(msgs, ",") + `],"temperature":0}`
}

// TestUpstreamFailures checks the answers when the upstream cannot be
// reached or is too slow: OpenAI-shaped 502 and 504, counted.
func TestUpstreamFailures(t *testing.T) {
	tests := []struct {
		name   string
		change func(*proxy.Options)
		status int
		code   string
		reason string
	}{
		{"unreachable", func(o *proxy.Options) { o.Upstream, _ = url.Parse("http://127.0.0.1:1/v1") }, 502, "upstream_unreachable", "connection"},
		{"timeout", func(o *proxy.Options) { o.Timeout = 50 * time.Millisecond }, 504, "upstream_timeout", "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &openaitest.Upstream{Latency: 500 * time.Millisecond}, tt.change)
			resp, data := f.post(t, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
			var got struct{ Error struct{ Code string } }
			_ = json.Unmarshal(data, &got)
			if resp.StatusCode != tt.status || got.Error.Code != tt.code {
				t.Errorf("status %d, code %q (%s): want %d, %s", resp.StatusCode, got.Error.Code, data, tt.status, tt.code)
			}
			if n := counter(t, f.reg, "abridge_upstream_errors_total", "reason", tt.reason); n != 1 {
				t.Errorf("abridge_upstream_errors_total{reason=%s} = %v, want 1", tt.reason, n)
			}
		})
	}
}

// TestMetrics checks the request, token and compaction metrics after one
// compacted request and one passed through, and the event the host's
// OnEvent receives.
func TestMetrics(t *testing.T) {
	var mu sync.Mutex
	var events []middleware.Event
	f := newFixture(t, &openaitest.Upstream{}, func(o *proxy.Options) {
		o.OnEvent = func(_ context.Context, e middleware.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, e)
		}
	})
	if resp, data := f.post(t, "/v1/chat/completions", longConversation(50), nil); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	resp, err := http.Get(f.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := map[string]float64{
		"chat 200":    counter(t, f.reg, "abridge_requests_total", "route", "chat", "code", "200"),
		"other 200":   counter(t, f.reg, "abridge_requests_total", "route", "other", "code", "200"),
		"summarized":  counter(t, f.reg, "abridge_compactions_total", "result", "summarized"),
		"summary ok":  counter(t, f.reg, "abridge_summarizer_calls_total", "result", "ok"),
		"summary in>": boolFloat(counter(t, f.reg, "abridge_summarizer_tokens_total", "type", "input") > 0),
		"sent>fwd":    boolFloat(counter(t, f.reg, "abridge_tokens_total", "api", "chat", "stage", "sent") > counter(t, f.reg, "abridge_tokens_total", "api", "chat", "stage", "forwarded")),
		"provider in": counter(t, f.reg, "abridge_provider_tokens_total", "api", "chat", "type", "input"),
	}
	want := map[string]float64{"chat 200": 1, "other 200": 1, "summarized": 1, "summary ok": 1, "summary in>": 1, "sent>fwd": 1, "provider in": float64(usageIn(events))}
	mu.Lock()
	var processed []middleware.Event
	for _, e := range events {
		if e.Type == middleware.EventProcessed {
			processed = append(processed, e)
		}
	}
	if len(processed) != 1 || processed[0].MessagesAfter >= processed[0].MessagesBefore {
		t.Errorf("events %+v, want one processed request, compacted", events)
	}
	mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	families, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	for _, fam := range families {
		if fam.GetName() != "abridge_prompt_tokens" {
			continue
		}
		for _, m := range fam.GetMetric() {
			sums[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleSum()
		}
	}
	if !(sums["forwarded"] > 0 && sums["forwarded"] < sums["received"]) {
		t.Errorf("prompt tokens received %v, forwarded %v: want fewer forwarded", sums["received"], sums["forwarded"])
	}
}

// TestMetricsAtZero checks that the error and outcome counters exist, at
// zero, before anything happened, so that rates and alerts work from the
// start; and that the HTTP status and the error code have labels of their
// own names.
func TestMetricsAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := proxy.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, fam := range families {
		got[fam.GetName()] = nil
		for _, m := range fam.GetMetric() {
			if m.GetCounter().GetValue() != 0 {
				t.Errorf("%s %v = %v at the start", fam.GetName(), m.GetLabel(), m.GetCounter().GetValue())
			}
			for _, l := range m.GetLabel() {
				got[fam.GetName()] = append(got[fam.GetName()], l.GetName()+"="+l.GetValue())
			}
		}
	}
	want := map[string][]string{
		"abridge_rejected_requests_total": {"error=invalid_history", "error=invalid_json", "error=invalid_message", "error=invalid_path",
			"error=missing_messages", "error=processing_failed", "error=request_timeout", "error=request_too_large", "error=server_busy", "error=unknown_path", "error=unsupported_encoding"},
		"abridge_upstream_errors_total":          {"reason=connection", "reason=reset", "reason=status_5xx", "reason=timeout"},
		"abridge_context_overflows_total":        {"retried=false", "retried=true"},
		"abridge_compactions_total":              {"result=canceled", "result=fallback", "result=shared", "result=skipped", "result=summarized"},
		"abridge_summarizer_calls_total":         {"result=error", "result=ok", "result=timeout"},
		"abridge_summarizer_tokens_total":        summaryTokenLabels(),
		"abridge_digest_compactions_total":       {"api=chat", "api=messages", "api=other", "api=responses"},
		"abridge_summary_store_errors_total":     {"op=claim", "op=save", "op=spans", "op=summary"},
		"abridge_ahead_summaries_total":          {"event=failed", "event=started", "event=used", "event=wasted", "event=written"},
		"abridge_ahead_wasted_input_chars_total": nil,
		"abridge_deferred_compactions_total":     nil,
		"abridge_summary_wait_seconds":           nil,
		"abridge_chain_failures_total":           nil,
		"abridge_processing_duration_seconds":    nil,
		"abridge_summarizer_duration_seconds":    nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics at the start (-want +got):\n%s", diff)
	}
}

// summaryTokenLabels are the labels of abridge_summarizer_tokens_total,
// metric by metric: every API with every type.
func summaryTokenLabels() []string {
	var out []string
	for _, api := range []string{"chat", "messages", "other", "responses"} {
		for _, typ := range []string{"cache_creation_input", "cached_input", "input", "output"} {
			out = append(out, "api="+api, "type="+typ)
		}
	}
	return out
}

// usageIn returns the input tokens of the usage events.
func usageIn(events []middleware.Event) int64 {
	var n int64
	for _, e := range events {
		if e.Type == middleware.EventUsage {
			n += e.Usage.InputTokens
		}
	}
	return n
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// counter returns the sum of the named counter's children that have the
// given label values (name, value, name, value…), gathered from reg.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	total := 0.0
	eachChild(t, reg, name, labels, func(m *dto.Metric) { total += m.GetCounter().GetValue() })
	return total
}

// eachChild calls f with each child of the named metric that has the given
// label values (name, value, name, value…), gathered from reg.
func eachChild(t *testing.T, reg *prometheus.Registry, name string, labels []string, f func(*dto.Metric)) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	metrics:
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			f(m)
		}
	}
}

// TestForwardAuthorization checks who pays for a summary: the client's
// Authorization when the summarizer's request to the upstream has none of
// its own, the summarizer's own key when it has one, and nobody's outside a
// proxied request or for a request to another origin.
func TestForwardAuthorization(t *testing.T) {
	tests := []struct {
		name, own, client, want string
		proxied, elsewhere      bool
		messages                bool   // the client's request is an Anthropic Messages one, to its own upstream
		apiKey, wantAPIKey      string // the client's x-api-key, and the summary's
	}{
		{"client pays", "", "Bearer client", "Bearer client", true, false, false, "", ""},
		{"proxy's key", "Bearer proxy", "Bearer client", "Bearer proxy", true, false, false, "", ""},
		{"client sent none", "", "", "", true, false, false, "", ""},
		{"not proxied", "", "", "", false, false, false, "", ""},
		{"another origin", "", "Bearer client", "", true, true, false, "", ""},
		// An Anthropic key sent to the Messages upstream never reaches the
		// OpenAI upstream the summarizer calls.
		{"the client's request went to another upstream", "", "Bearer sk-ant-client", "", true, false, true, "", ""},
		{"an x-api-key goes to no other upstream", "", "", "", true, false, true, "sk-ant-api03-client", ""},
		// To its own upstream (as abridge serve sends a Messages client's
		// summaries), the client's x-api-key pays.
		{"an x-api-key goes with an OpenAI client's request too", "", "", "", true, false, false, "sk-client-api-key", "sk-client-api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]string{}
			sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				seen[r.URL.Path] = r.Header.Get("Authorization")
				seen["key "+r.URL.Path] = r.Header.Get("X-Api-Key")
			}))
			defer sink.Close()
			origin := mustURL(t, sink.URL)
			if tt.elsewhere {
				origin = mustURL(t, "http://127.0.0.1:1")
			}
			rt := proxy.ForwardAuthorization(origin, nil)
			// A request made with rt inside the chain stands for the
			// summarizer's.
			summarize := func(ctx context.Context) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, sink.URL+"/summarize", nil)
				if tt.own != "" {
					req.Header.Set("Authorization", tt.own)
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					return err
				}
				return resp.Body.Close()
			}
			if !tt.proxied {
				if err := summarize(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
				defer anthropic.Close()
				p := proxy.New(proxy.Options{
					Upstream:  mustURL(t, sink.URL+"/v1"),
					Upstreams: map[string]*url.URL{"messages": mustURL(t, anthropic.URL+"/v1")},
					Chain: processor.Func(func(ctx context.Context, h []processor.Message) ([]processor.Message, error) {
						return h, summarize(ctx)
					}),
				})
				srv := httptest.NewServer(p)
				defer srv.Close()
				path := "/v1/chat/completions"
				if tt.messages {
					path = "/v1/messages"
				}
				req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
				if tt.client != "" {
					req.Header.Set("Authorization", tt.client)
				}
				if tt.apiKey != "" {
					req.Header.Set("X-Api-Key", tt.apiKey)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if got, ok := seen["/summarize"]; !ok || got != tt.want {
				t.Errorf("summarizer's Authorization %q (sent: %v), want %q", got, ok, tt.want)
			}
			if got := seen["key /summarize"]; got != tt.wantAPIKey {
				t.Errorf("summarizer's x-api-key %q, want %q", got, tt.wantAPIKey)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestOverflowRetry checks the proxy's answer to a context overflow: the
// history, which the window did not compact by itself, is compacted by the
// window found in the chain (behind the receipts' steps too) and sent
// again, the client gets the answer, and the retry is counted.
func TestOverflowRetry(t *testing.T) {
	for _, receipts := range []bool{false, true} {
		t.Run(fmt.Sprintf("receipts=%v", receipts), func(t *testing.T) { testOverflowRetry(t, receipts) })
	}
}

func testOverflowRetry(t *testing.T, receipts bool) {
	body := longConversation(50)
	up := &openaitest.Upstream{MaxPromptChars: len(body) / 2}
	f := newFixture(t, up, func(o *proxy.Options) {
		o.Chain = window.New(window.Options{MaxMessages: -1})
		if receipts {
			_, o.Receipts = receiptStore(t)
		}
	})
	resp, data := f.post(t, "/v1/chat/completions", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	chats := f.up.Chats()
	if len(chats) != 2 {
		t.Fatalf("upstream got %d requests, want the first and the retry", len(chats))
	}
	if fw, err := openaitest.CheckForwarded([]byte(body), chats[1].Body, nil); err != nil || !fw.Compacted {
		t.Errorf("retry %+v, %v: want compacted and valid", fw, err)
	}
	if n := counter(t, f.reg, "abridge_context_overflows_total", "retried", "true"); n != 1 {
		t.Errorf("abridge_context_overflows_total{retried=true} = %v, want 1", n)
	}

	// The request's log line and the forwarded prompt's size describe
	// the retry, what the client's answer came from.
	retried, err := transcript.Load(bytes.NewReader(chats[1].Body))
	if err != nil {
		t.Fatal(err)
	}
	lines := f.logs.FilterMessage("proxy: request").All()
	if len(lines) != 1 {
		t.Fatalf("%d request log lines, want 1", len(lines))
	}
	fields := lines[0].ContextMap()
	if got, want := fields["messages_after"], int64(len(retried)); got != want {
		t.Errorf("log line: messages_after = %v, want %d, the retry's", got, want)
	}
	if got, want := fields["tokens_after"], int64(processor.EstimateTokens(retried)); got != want {
		t.Errorf("log line: tokens_after = %v, want %d, the retry's", got, want)
	}
	count, sum := histogram(t, f.reg, "abridge_prompt_tokens", "stage", "forwarded")
	if want := float64(processor.EstimateTokens(retried)); count != 1 || sum != want {
		t.Errorf("abridge_prompt_tokens{stage=forwarded}: %v samples summing to %v; want one, the retry's %v", count, sum, want)
	}
}

// histogram returns the sample count and sum of the named histogram's
// children that have the given label values, gathered from reg.
func histogram(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (count, sum float64) {
	t.Helper()
	eachChild(t, reg, name, labels, func(m *dto.Metric) {
		count += float64(m.GetHistogram().GetSampleCount())
		sum += m.GetHistogram().GetSampleSum()
	})
	return count, sum
}
