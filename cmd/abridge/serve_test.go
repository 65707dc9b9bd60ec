package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

const clientKey = "sk-client-key-for-serve-tests"

// servingLine is the line serve prints once it listens.
var servingLine = regexp.MustCompile(`serving on (http://\S+/v1) `)

// running is an abridge serve started in-process.
type running struct {
	base   string // http://127.0.0.1:PORT/v1
	stop   context.CancelFunc
	done   chan int
	stderr *syncBuffer
}

// serveEnv is the environment of a serve in front of upstream, keeping
// its summaries in a SQLite file of the test's.
func serveEnv(t *testing.T, upstream string) map[string]string {
	return map[string]string{
		"OPENAI_BASE_URL":    upstream + "/v1",
		"ABRIDGE_SESSION_DB": filepath.Join(t.TempDir(), "serve.db"),
		"ABRIDGE_LOG_LEVEL":  "debug",
	}
}

// serveBoth starts openAI and anthropic as upstreams, closed when the test
// ends, and returns the environment of a serve in front of both (see
// serveEnv) and the OpenAI upstream's URL.
func serveBoth(t *testing.T, openAI, anthropic http.Handler) (env map[string]string, openAIURL string) {
	openAISrv, anthropicSrv := httptest.NewServer(openAI), httptest.NewServer(anthropic)
	t.Cleanup(openAISrv.Close)
	t.Cleanup(anthropicSrv.Close)
	env = serveEnv(t, openAISrv.URL)
	env["ANTHROPIC_BASE_URL"] = anthropicSrv.URL
	return env, openAISrv.URL
}

// post sends body to url as JSON with header, and returns the response
// with its body read.
func post(t *testing.T, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	data := openaitest.ReadAll(t, resp, err)
	return resp, data
}

// startServe runs abridge serve in-process on a free port and waits until
// it listens. Cancelling its context is what SIGTERM does in main.
func startServe(t *testing.T, env map[string]string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stop: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	go func() {
		r.done <- run(ctx, nil, []string{"serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), io.Discard, r.stderr, foreground(env))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Errorf("abridge serve did not stop")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingLine.FindStringSubmatch(r.stderr.String()); m != nil {
			r.base = m[1]
			return r
		}
		select {
		case code := <-r.done:
			t.Fatalf("abridge serve exited with %d:\n%s", code, r.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("abridge serve did not start:\n%s", r.stderr.String())
	return nil
}

// TestServeOpenAIGo replays a 120-message tool-using conversation from a
// shared transcript with openai-go against abridge serve, in front of a
// fake upstream speaking the real wire format, alternately streamed and
// not: every request reaches the upstream valid, byte-identical outside
// "messages", compacted once past the window's trigger (head, one marker,
// tail), with the client's Authorization; the summaries are paid with the
// client's Authorization too (the proxy has no key); /healthz and /metrics
// answer, and no log line shows the key.
func TestServeOpenAIGo(t *testing.T) {
	_, msgs := openaitest.SharedConversation(t, 120)
	up := &openaitest.Upstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	srv := startServe(t, serveEnv(t, upSrv.URL))

	tap := &openaitest.Tap{}
	client := openai.NewClient(option.WithBaseURL(srv.base), option.WithAPIKey(clientKey), option.WithMaxRetries(0),
		option.WithMiddleware(tap.Middleware))
	ctx := context.Background()
	lengths := openaitest.RequestLengths(msgs)
	for i, n := range lengths {
		params := openai.ChatCompletionNewParams{
			Model: "gpt-test",
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name: "bash", Parameters: shared.FunctionParameters{"type": "object"},
			})},
			ToolChoice:          openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
			MaxCompletionTokens: openai.Int(512),
		}
		params.SetExtraFields(map[string]any{"x_trace": map[string]any{"request": i}})
		var err error
		if params.Messages, err = openaitest.Messages(msgs[:n]); err != nil {
			t.Fatal(err)
		}
		streamed := i%2 == 1
		answer, _, err := openaitest.Ask(ctx, client, params, streamed)
		if err != nil {
			t.Fatalf("request %d (%d messages, streamed %v): %v", i, n, streamed, err)
		}
		if answer != "ok" {
			t.Fatalf("request %d: answer %q", i, answer)
		}
	}

	chats := up.Chats()
	sent := tap.Bodies()
	if len(chats) != len(lengths) || len(sent) != len(lengths) {
		t.Fatalf("upstream got %d requests, client sent %d, want %d", len(chats), len(sent), len(lengths))
	}
	trim := trimtools.New(trimtools.Options{})
	compacted := 0
	for i, got := range chats {
		f, err := openaitest.CheckForwarded(sent[i], got.Body, trim)
		if err != nil {
			t.Errorf("request %d (%d messages): %v", i, lengths[i], err)
		}
		if f.Compacted {
			compacted++
		}
		if got.Header.Get("Authorization") != "Bearer "+clientKey {
			t.Errorf("request %d: the client's Authorization was not forwarded", i)
		}
	}
	summaries := 0
	for _, r := range up.Requests() {
		if r.Summary {
			summaries++
			if r.Header.Get("Authorization") != "Bearer "+clientKey {
				t.Errorf("summary request not paid with the client's Authorization")
			}
		}
	}
	if compacted == 0 || summaries == 0 {
		t.Errorf("%d compacted requests, %d summaries: want some of each", compacted, summaries)
	}
	t.Logf("%d requests, %d compacted, %d summaries", len(chats), compacted, summaries)

	base := strings.TrimSuffix(srv.base, "/v1")
	health := get(t, base+"/healthz")
	if health != "{\"status\":\"ok\"}\n" {
		t.Errorf("/healthz: %q", health)
	}
	metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`abridge_requests_total{code="200",route="chat"} ` + strconv.Itoa(len(lengths)),
		`abridge_summarizer_calls_total{result="ok"} ` + strconv.Itoa(summaries),
		`abridge_compactions_total{result="summarized"} ` + strconv.Itoa(summaries),
		`abridge_prompt_tokens_count{stage="forwarded"} ` + strconv.Itoa(len(lengths)),
		"abridge_summarizer_duration_seconds_count " + strconv.Itoa(summaries),
		"go_goroutines",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if logs := srv.stderr.String(); strings.Contains(logs, clientKey) || strings.Contains(logs, "Bearer") {
		t.Errorf("the log shows the Authorization header:\n%s", logs)
	}
	if !strings.Contains(srv.stderr.String(), "paid by each client's own credential") {
		t.Errorf("serve does not say who pays for summaries:\n%s", srv.stderr.String())
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	data := openaitest.ReadAll(t, resp, err)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, data)
	}
	return string(data)
}

// TestServeEndpoints checks /healthz and /metrics: another method than
// GET or HEAD is answered 405 with Allow, and /metrics answers in the
// OpenMetrics format when asked for it, its error counters at zero.
func TestServeEndpoints(t *testing.T) {
	upSrv := httptest.NewServer(&openaitest.Upstream{})
	defer upSrv.Close()
	srv := startServe(t, serveEnv(t, upSrv.URL))
	root := strings.TrimSuffix(srv.base, "/v1")
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Post(root+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(string(data), "method_not_allowed") {
			t.Errorf("POST %s: %d, Allow %q, %s; want 405 with Allow: GET, HEAD", path, resp.StatusCode, resp.Header.Get("Allow"), data)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, root+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(string(data), "# EOF\n") {
		t.Errorf("GET /metrics asking for OpenMetrics: Content-Type %q, want OpenMetrics text ending in # EOF", ct)
	}
	for _, want := range []string{`abridge_rejected_requests_total{error="invalid_json"} 0`, `abridge_upstream_errors_total{reason="reset"} 0`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestServeSummaryEndpointWithoutKey checks that a summary endpoint of its
// own, with no key anywhere, is not called: the client's key goes to the
// upstream only, so summaries are the offline digest, and the start line
// says so.
func TestServeSummaryEndpointWithoutKey(t *testing.T) {
	up := &openaitest.Upstream{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	other := &openaitest.Upstream{}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	env := serveEnv(t, upSrv.URL)
	env["ABRIDGE_SUMMARY_BASE_URL"] = otherSrv.URL + "/v1"
	srv := startServe(t, env)
	if line := srv.stderr.String(); !strings.Contains(line, "summaries: digest") || !strings.Contains(line, "paid by nobody: no API key for ABRIDGE_SUMMARY_BASE_URL") {
		t.Errorf("start line does not say summaries are the digest for want of a key:\n%s", line)
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-test", "messages": openaitest.ToolConversation(60, "summary endpoint")})
	resp, data := post(t, srv.base+"/chat/completions", string(body), map[string]string{"Authorization": "Bearer " + clientKey})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the summary endpoint got %d requests without a key, want none", n)
	}
	chats := up.Chats()
	if len(chats) != 1 {
		t.Fatalf("upstream got %d chat requests, want 1", len(chats))
	}
	f, err := openaitest.CheckForwarded(body, chats[0].Body, trimtools.New(trimtools.Options{}))
	if err != nil || !f.Compacted {
		t.Errorf("forwarded %+v, %v: want a history compacted by the digest", f, err)
	}
}

// TestServeShutdown stops abridge serve (as SIGTERM does) while a request
// is in flight: the server stops accepting connections, the request in
// flight finishes with its whole answer, and serve exits 0.
func TestServeShutdown(t *testing.T) {
	arrived := make(chan struct{})
	release := make(chan struct{})
	up := &openaitest.Upstream{Hook: func(w http.ResponseWriter, r *http.Request, req openaitest.Request) bool {
		close(arrived)
		<-release
		return false
	}}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	srv := startServe(t, serveEnv(t, upSrv.URL))
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.base, "http://"), "/v1")

	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(srv.base+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(data), err}
	}()
	<-arrived
	srv.stop()
	// Wait until the listener is closed: new connections are refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("serve still accepts connections after it was told to stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case code := <-srv.done:
		t.Fatalf("serve exited with %d before the request in flight finished", code)
	default:
	}
	close(release)
	a := <-answered
	if a.err != nil || a.status != 200 || !strings.Contains(a.body, `"content":"ok"`) {
		t.Errorf("request in flight: %d %q %v; want 200 with the whole answer", a.status, a.body, a.err)
	}
	select {
	case code := <-srv.done:
		if code != 0 {
			t.Errorf("serve exited with %d, want 0:\n%s", code, srv.stderr.String())
		}
		srv.done <- code // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit after the request in flight finished")
	}
	if !strings.Contains(srv.stderr.String(), "stopping: letting the requests in flight finish") {
		t.Errorf("serve did not say it was stopping:\n%s", srv.stderr.String())
	}
}

// TestServeJSONLog checks that with ABRIDGE_LOG_FORMAT=json every line
// serve writes on stderr, from start to stop, is a JSON object.
func TestServeJSONLog(t *testing.T) {
	upSrv := httptest.NewServer(&openaitest.Upstream{})
	defer upSrv.Close()
	env := serveEnv(t, upSrv.URL)
	env["ABRIDGE_LOG_FORMAT"] = "json"
	env["ABRIDGE_LOG_LEVEL"] = "info"
	srv := startServe(t, env)
	srv.stop()
	select {
	case code := <-srv.done:
		srv.done <- code // for the cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	out := srv.stderr.String()
	for _, want := range []string{"serving on http://", "stopping: letting the requests in flight finish"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve's log does not say %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("a line of the JSON log is not JSON (%v): %s", err, line)
		}
	}
}

// TestServeUsage checks serve's mistakes: they are named, with exit code
// 2 for the command line and 1 for the environment.
func TestServeUsage(t *testing.T) {
	// A free port, for a proxy told to forward to itself.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(self)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		says string
	}{
		{"upstream is itself", map[string]string{"OPENAI_BASE_URL": "http://localhost:" + port + "/v1",
			"ABRIDGE_SESSION_DB": filepath.Join(t.TempDir(), "s.db")}, []string{"serve", "--addr", self}, 1, "is this proxy's own address"},
		{"bad --addr", nil, []string{"serve", "--addr", "8787"}, 2, `serve: --addr "8787": want HOST:PORT`},
		{"arguments", nil, []string{"serve", "now"}, 2, "serve: unexpected arguments: now"},
		{"bad variable", map[string]string{"ABRIDGE_SERVE_TIMEOUT": "soon"}, []string{"serve"}, 1, `ABRIDGE_SERVE_TIMEOUT="soon": not a duration`},
		{"bad database", map[string]string{"ABRIDGE_SESSION_DB": "mysql://db/x"}, []string{"serve", "--addr", "127.0.0.1:0"}, 1, "serve: ABRIDGE_SESSION_DB:"},
		{"summary timeout past the serve timeout", map[string]string{"ABRIDGE_SERVE_TIMEOUT": "60s"}, []string{"serve", "--addr", "127.0.0.1:0"}, 1,
			"ABRIDGE_SUMMARY_TIMEOUT (1m30s) must be shorter than ABRIDGE_SERVE_TIMEOUT (1m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.env, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.says) {
				t.Errorf("exit %d, stderr %q: want %d and %q", r.code, r.stderr, tt.code, tt.says)
			}
		})
	}
}
