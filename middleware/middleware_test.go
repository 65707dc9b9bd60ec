package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/model"
	openaimodel "github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

const secret = "sk-test-secret-0123456789"

// events collects the middleware's and the window's events.
type events struct {
	mu     sync.Mutex
	mw     []middleware.Event
	window []window.Event
}

func (e *events) onMiddleware(_ context.Context, ev middleware.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mw = append(e.mw, ev)
}

func (e *events) onWindow(_ context.Context, ev window.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.window = append(e.window, ev)
}

func (e *events) count(t middleware.EventType) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.mw {
		if ev.Type == t {
			n++
		}
	}
	return n
}

// TestTranscript replays a 120-message tool-using conversation from a
// shared transcript through openai-go with the middleware, the app keeping
// its full history, alternately streamed and not, with tools, tool_choice,
// response_format, temperature and a field openai-go does not know: every
// request reaches the upstream valid and byte-identical outside
// "messages", and once past the window's trigger compacted into the
// client's head, one summary marker and the client's tail. The summaries
// are written by the LLM summarizer over the same fake upstream, and their
// usage reaches the host through model.Observe.
func TestTranscript(t *testing.T) {
	_, msgs := openaitest.SharedConversation(t, 120)
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()

	var summaryTokens atomic.Int64
	sm := model.Observe(openaimodel.New(openaimodel.WithBaseURL(srv.URL), openaimodel.WithAPIKey(secret), openaimodel.WithMaxRetries(0)),
		func(_ context.Context, o model.Observation) { summaryTokens.Add(o.Usage.InputTokens) })
	ev := &events{}
	win := window.New(window.Options{Summarizer: llm.New(sm, llm.Options{}), OnEvent: ev.onWindow, Ahead: -1})
	trim := trimtools.New(trimtools.Options{})
	core, logs := observer.New(zapcore.DebugLevel)
	mw := middleware.New(processor.Chain(trim, win), middleware.Options{Compactor: win, Logger: zap.New(core), OnEvent: ev.onMiddleware})

	tp := &openaitest.Tap{}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(secret), option.WithMaxRetries(0),
		option.WithMiddleware(tp.Middleware, mw))
	ctx := context.Background()
	lengths := openaitest.RequestLengths(msgs)
	for i, n := range lengths {
		streamed := i%2 == 1
		answer, usage, err := openaitest.Ask(ctx, client, requestParams(t, msgs[:n]), streamed)
		if err != nil {
			t.Fatalf("request %d (%d messages, streamed %v): %v", i, n, streamed, err)
		}
		if answer != "ok" {
			t.Fatalf("request %d: answer %q, want ok", i, answer)
		}
		if streamed && usage.PromptTokens == 0 {
			t.Errorf("request %d: streamed answer without usage", i)
		}
	}

	chats := up.Chats()
	sent := tp.Bodies()
	if len(chats) != len(lengths) || len(sent) != len(lengths) {
		t.Fatalf("upstream got %d requests, client sent %d, want %d", len(chats), len(sent), len(lengths))
	}
	compacted := 0
	for i, got := range chats {
		f, err := openaitest.CheckForwarded(sent[i], got.Body, trim)
		if err != nil {
			t.Errorf("request %d (%d messages): %v", i, lengths[i], err)
			continue
		}
		if f.Compacted {
			compacted++
		} else if f.Sent > 41 {
			t.Errorf("request %d: %d messages sent uncompacted", i, f.Sent)
		}
		if got.Header.Get(middleware.ConversationHeader) != "" {
			t.Errorf("request %d: conversation header sent upstream", i)
		}
	}
	_, summaries := up.Counts()
	t.Logf("%d requests, %d compacted, %d summarizer calls, %d summarizer input tokens", len(chats), compacted, summaries, summaryTokens.Load())
	if compacted == 0 || summaries == 0 {
		t.Errorf("%d compacted requests and %d summarizer calls, want some of each", compacted, summaries)
	}
	if summaryTokens.Load() == 0 {
		t.Error("the summarizer's usage never reached the host")
	}
	finished := 0
	for _, e := range ev.window {
		if e.Type == window.EventFinished {
			finished++
			if e.TokensAfter >= e.TokensBefore {
				t.Errorf("compaction from %d to %d tokens", e.TokensBefore, e.TokensAfter)
			}
		}
	}
	if finished != summaries {
		t.Errorf("%d compactions finished, %d summarizer calls: want one call each", finished, summaries)
	}
	if n := ev.count(middleware.EventProcessed); n != len(lengths) {
		t.Errorf("%d processed events, want %d", n, len(lengths))
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, secret) || strings.Contains(e.Message, "Bearer") {
			t.Errorf("log line shows the API key: %q", e.Message)
		}
		for _, f := range e.Context {
			if strings.Contains(f.String, secret) {
				t.Errorf("log field %s shows the API key", f.Key)
			}
		}
	}
	if logs.FilterMessage("middleware: processed").Len() != len(lengths) {
		t.Errorf("%d processed lines logged, want %d", logs.FilterMessage("middleware: processed").Len(), len(lengths))
	}
}

// requestParams builds a request with msgs (raw Chat Completions JSON)
// and every other kind of field an app sets.
func requestParams(t *testing.T, msgs []json.RawMessage) openai.ChatCompletionNewParams {
	t.Helper()
	params := openai.ChatCompletionNewParams{
		Model: "gpt-test",
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        "bash",
			Description: openai.String("Run a shell command."),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}},
		})},
		ToolChoice:     openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}},
		Temperature:    openai.Float(0.25),
	}
	params.SetExtraFields(map[string]any{"x_unknown_field": map[string]any{"kept": []any{1, "two", nil}}})
	var err error
	if params.Messages, err = openaitest.Messages(msgs); err != nil {
		t.Fatal(err)
	}
	return params
}

// send runs the middleware over one request to srv, through a plain
// http.Client.
func send(t *testing.T, mw middleware.Middleware, method, url string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := mw(req, http.DefaultClient.Do)
	data := openaitest.ReadAll(t, resp, err)
	return resp, data
}

// TestRejected checks that a body abridge cannot process is answered with
// an OpenAI-shaped 400 naming what is wrong, and sent nowhere.
func TestRejected(t *testing.T) {
	tests := []struct {
		name, body, code, says string
		header                 http.Header
		status                 int // 0: 400
	}{
		{name: "not JSON", body: `{"model": "m", "messages": [`, code: middleware.CodeInvalidJSON, says: "not a valid JSON object"},
		{name: "brace after the object", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}]}}`, code: middleware.CodeInvalidJSON, says: "after the object"},
		{name: "bracket after the object", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}]}]`, code: middleware.CodeInvalidJSON, says: "after the object"},
		{name: "letter after the object", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}]} x`, code: middleware.CodeInvalidJSON, says: "after the object"},
		{name: "NUL after the object", body: "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\x00", code: middleware.CodeInvalidJSON, says: "after the object"},
		{name: "gzip", body: "\x1f\x8b\x08\x00", header: http.Header{"Content-Encoding": {"gzip"}},
			code: middleware.CodeUnsupportedEncoding, says: "Content-Encoding: gzip", status: http.StatusUnsupportedMediaType},
		{name: "array", body: `[1, 2]`, code: middleware.CodeInvalidJSON, says: "not a valid JSON object"},
		{name: "no messages", body: `{"model": "m"}`, code: middleware.CodeMissingMessages, says: `no "messages" field`},
		{name: "empty messages", body: `{"model": "m", "messages": []}`, code: middleware.CodeMissingMessages, says: `"messages" is empty`},
		{name: "bad role", body: `{"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}`, code: middleware.CodeInvalidMessage, says: "wizard"},
		{name: "orphan tool return", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": "out"}]}`,
			code: middleware.CodeInvalidHistory, says: "without a matching tool call"},
		{name: "unanswered call", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "user", "content": "go on"}]}`,
			code: middleware.CodeInvalidHistory, says: "c1"},
		{name: "unanswered call last", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}`,
			code: middleware.CodeInvalidHistory, says: "without a tool return"},
		{name: "two answers last", body: `{"model": "m", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]}`,
			code: middleware.CodeInvalidHistory, says: "does not end with a request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			ev := &events{}
			mw := middleware.New(nil, middleware.Options{OnEvent: ev.onMiddleware})
			resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", tt.header, tt.body)
			wantStatus := tt.status
			if wantStatus == 0 {
				wantStatus = http.StatusBadRequest
			}
			if resp.StatusCode != wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, data, wantStatus)
			}
			var got struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("answer %s: %v", data, err)
			}
			if got.Error.Code != tt.code || got.Error.Type != "invalid_request_error" ||
				!strings.HasPrefix(got.Error.Message, "abridge: ") || !strings.Contains(got.Error.Message, tt.says) {
				t.Errorf("error %+v, want code %s, a message starting abridge: and saying %q", got.Error, tt.code, tt.says)
			}
			if n := len(up.Requests()); n != 0 {
				t.Errorf("upstream got %d requests, want none", n)
			}
			if ev.count(middleware.EventRejected) != 1 {
				t.Errorf("events %+v, want one rejection", ev.mw)
			}
		})
	}
}

// TestRejectedThroughOpenAI shows a rejection as an openai-go app sees it:
// an *openai.Error with status 400 and abridge's code, returned at once
// (a 400 is not retried).
func TestRejectedThroughOpenAI(t *testing.T) {
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(secret),
		option.WithMiddleware(middleware.New(nil, middleware.Options{})))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), openai.ToolMessage("out", "call_1")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v, want an *openai.Error", err)
	}
	if apiErr.StatusCode != 400 || apiErr.Code != middleware.CodeInvalidHistory || !strings.Contains(apiErr.Message, "call_1") {
		t.Errorf("status %d, code %q, message %q: want 400, %s, naming call_1", apiErr.StatusCode, apiErr.Code, apiErr.Message, middleware.CodeInvalidHistory)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

// TestUntouched checks that requests other than POST …/chat/completions
// pass through as they were, and that a chat completions body the
// processors leave alone is sent byte for byte.
func TestUntouched(t *testing.T) {
	tests := []struct {
		name, method, path, body string
	}{
		{"models", http.MethodGet, "/v1/models", ""},
		{"embeddings", http.MethodPost, "/v1/embeddings", `{"input": "not messages", "model": "e"}`},
		{"chat, nothing to do", http.MethodPost, "/v1/chat/completions",
			"{ \"model\" : \"m\",\n \"messages\": [ {\"role\":\"user\",\"content\":\"hi\"} ] , \"zz\": [1.50, 2e3]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			mw := middleware.New(trimtools.New(trimtools.Options{}), middleware.Options{})
			send(t, mw, tt.method, srv.URL+tt.path, http.Header{"Authorization": {"Bearer " + secret}}, tt.body)
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(reqs))
			}
			if diff := cmp.Diff(tt.body, string(reqs[0].Body)); diff != "" {
				t.Errorf("body changed (-sent +received):\n%s", diff)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+secret {
				t.Errorf("Authorization %q not forwarded", got)
			}
		})
	}
}

// TestCodecGiven checks that the middleware processes a request with the
// API it is given (Rewriter.Send: the proxy decides once, as the request
// arrives), the zero one included, and decides from the path only when
// given none (its Middleware): a body that is not JSON is refused where
// the request is processed and sent on where it is not.
func TestCodecGiven(t *testing.T) {
	type outcome struct {
		Refused   bool // abridge answered, naming what is wrong
		Anthropic bool // in the shape of Anthropic's errors
		Upstream  int  // requests the upstream got
	}
	tests := []struct {
		name, path string
		given      bool
		api        middleware.API
		want       outcome
	}{
		{"chat path, none given", "/v1/chat/completions", false, middleware.API{}, outcome{true, false, 0}},
		{"chat path, given none", "/v1/chat/completions", true, middleware.API{}, outcome{false, false, 1}},
		{"other path, none given", "/v1/embeddings", false, middleware.API{}, outcome{false, false, 1}},
		{"other path, given chat", "/v1/embeddings", true, middleware.APIOf(http.MethodPost, "/v1/chat/completions"), outcome{true, false, 0}},
		{"chat path, given messages", "/v1/chat/completions", true, middleware.APIOf(http.MethodPost, "/v1/messages"), outcome{true, true, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+tt.path, strings.NewReader(`{"model": "m", "messages": [`))
			if err != nil {
				t.Fatal(err)
			}
			rw := middleware.NewRewriter(nil, middleware.Options{})
			var resp *http.Response
			if tt.given {
				resp, err = rw.Send(req, tt.api, &middleware.Report{}, http.DefaultClient.Do)
			} else {
				resp, err = rw.Middleware(req, http.DefaultClient.Do)
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			got := outcome{Refused: strings.Contains(string(data), "abridge: "),
				Anthropic: strings.HasPrefix(string(data), `{"type":"error"`), Upstream: len(up.Requests())}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// overflowBody is a 60-message chat completions body: a long tool-using
// conversation.
func overflowBody() string {
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"You are a coding agent."}`, `{"role":"user","content":"Fix the build."}`)
	for i := 0; len(msgs) < 59; i++ {
		id := "call_" + strings.Repeat("x", i%5) + string(rune('a'+i%26))
		msgs = append(msgs,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"bash","arguments":"{\"command\":\"make\"}"}}]}`,
			`{"role":"tool","tool_call_id":"`+id+`","content":"`+strings.Repeat("output line ", 40)+`"}`)
	}
	msgs = append(msgs, `{"role":"user","content":"And now?"}`)
	return `{"model":"gpt-test","messages":[` + strings.Join(msgs, ",") + `],"temperature":0}`
}

// TestOverflow checks the retry after a context overflow: the history is
// compacted once more, by the chain's window unless another compactor is
// given, and sent again when that made it smaller; otherwise, or without a
// compactor, the provider's 400 reaches the app.
func TestOverflow(t *testing.T) {
	body := overflowBody()
	tests := []struct {
		name string
		// compactor is how the window compacts after the overflow: "chain"
		// (found in the chain, Options.Compactor unset), "option" (given
		// as Options.Compactor, the chain a processor.Func of it) or ""
		// (neither: the chain holds the window in a processor.Func).
		compactor  string
		maxChars   int
		wantStatus int
		wantSent   int // chat requests upstream
		wantEvent  *middleware.Event
	}{
		{"compacted and retried", "chain", len(body) / 2, 200, 2, &middleware.Event{Type: middleware.EventOverflow, Retried: true}},
		{"compacted by the compactor given", "option", len(body) / 2, 200, 2, &middleware.Event{Type: middleware.EventOverflow, Retried: true}},
		{"still too long", "chain", 100, 400, 2, &middleware.Event{Type: middleware.EventOverflow, Retried: true}},
		{"no compactor", "", len(body) / 2, 400, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{MaxPromptChars: tt.maxChars}
			srv := httptest.NewServer(up)
			defer srv.Close()
			// The window does not compact by itself: only the overflow
			// makes it.
			win := window.New(window.Options{MaxMessages: -1})
			ev := &events{}
			opts := middleware.Options{OnEvent: ev.onMiddleware}
			var chain processor.Processor = win
			if tt.compactor != "chain" {
				chain = processor.Func(win.Process)
			}
			if tt.compactor == "option" {
				opts.Compactor = win
			}
			mw := middleware.New(chain, opts)
			resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", nil, body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, data, tt.wantStatus)
			}
			if tt.wantStatus == 400 && !strings.Contains(string(data), "context_length_exceeded") {
				t.Errorf("answer %s is not the provider's overflow", data)
			}
			chats := up.Chats()
			if len(chats) != tt.wantSent {
				t.Fatalf("upstream got %d requests, want %d", len(chats), tt.wantSent)
			}
			if tt.wantSent == 2 {
				f, err := openaitest.CheckForwarded([]byte(body), chats[1].Body, nil)
				if err != nil || !f.Compacted {
					t.Errorf("retry: %+v, %v; want a compacted, valid request", f, err)
				}
			}
			var got *middleware.Event
			for _, e := range ev.mw {
				if e.Type == middleware.EventOverflow {
					got = &middleware.Event{Type: e.Type, Retried: e.Retried}
					if e.MessagesAfter >= e.MessagesBefore {
						t.Errorf("overflow event: %d messages after, %d before", e.MessagesAfter, e.MessagesBefore)
					}
				}
			}
			if diff := cmp.Diff(tt.wantEvent, got); diff != "" {
				t.Errorf("overflow event (-want +got):\n%s", diff)
			}
		})
	}
}

// countingSummarizer counts its calls.
type countingSummarizer struct{ calls atomic.Int64 }

func (c *countingSummarizer) Summarize(_ context.Context, msgs []processor.Message, previous, focus string) (string, error) {
	c.calls.Add(1)
	return "summary of " + string(rune('0'+len(msgs)%10)), nil
}

// TestConversationHeader checks the optional conversation header: it is
// not sent upstream, and two conversations that begin alike but carry
// different ids get a summary each, where without ids the second reuses
// the first's.
func TestConversationHeader(t *testing.T) {
	body := overflowBody()
	tests := []struct {
		name      string
		ids       [2]string
		wantCalls int64
	}{
		{"no header", [2]string{"", ""}, 1},
		{"same id", [2]string{"a", "a"}, 1},
		{"different ids", [2]string{"a", "b"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			s := &countingSummarizer{}
			mw := middleware.New(window.New(window.Options{Summarizer: s, Ahead: -1}), middleware.Options{})
			for _, id := range tt.ids {
				h := http.Header{}
				if id != "" {
					h.Set(middleware.ConversationHeader, id)
				}
				if resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", h, body); resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
			}
			for _, r := range up.Chats() {
				if v := r.Header.Get(middleware.ConversationHeader); v != "" {
					t.Errorf("conversation header %q sent upstream", v)
				}
			}
			if got := s.calls.Load(); got != tt.wantCalls {
				t.Errorf("%d summarizer calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

// TestChainFailed checks that processors failing on a valid history do not
// fail the request: it is sent as the app wrote it, and the failure is
// reported.
func TestChainFailed(t *testing.T) {
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	boom := errors.New("boom")
	ev := &events{}
	core, logs := observer.New(zapcore.WarnLevel)
	mw := middleware.New(processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		return nil, boom
	}), middleware.Options{OnEvent: ev.onMiddleware, Logger: zap.New(core)})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	if resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", nil, body); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if got := string(up.Chats()[0].Body); got != body {
		t.Errorf("sent %s, want the app's body %s", got, body)
	}
	if ev.count(middleware.EventChainFailed) != 1 || !errors.Is(ev.mw[0].Err, boom) {
		t.Errorf("events %+v, want one chain failure with boom", ev.mw)
	}
	if logs.Len() != 1 {
		t.Errorf("%d warnings logged, want 1", logs.Len())
	}
}

func TestEventTypeString(t *testing.T) {
	got := []string{middleware.EventProcessed.String(), middleware.EventRejected.String(), middleware.EventChainFailed.String(),
		middleware.EventOverflow.String(), middleware.EventType(9).String()}
	want := []string{"processed", "rejected", "chain failed", "overflow", "event(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

// TestPrefill checks that a history ending with an assistant message
// without tool calls (a prefill the model is to continue) is forwarded,
// the part before it compacted and the prefill sent last, byte for byte.
func TestPrefill(t *testing.T) {
	const prefill = `{"role":"assistant","content":"The build fails because"}`
	long := overflowBody()
	body := strings.Replace(long, `{"role":"user","content":"And now?"}]`, `{"role":"user","content":"And now?"},`+prefill+`]`, 1)
	if body == long {
		t.Fatal("the prefill was not added to the body")
	}
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	s := &countingSummarizer{}
	ev := &events{}
	mw := middleware.New(window.New(window.Options{Summarizer: s, Ahead: -1}), middleware.Options{OnEvent: ev.onMiddleware})
	resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", nil, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d (%s), want 200", resp.StatusCode, data)
	}
	chats := up.Chats()
	if len(chats) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(chats))
	}
	raw, _, err := openaitest.SplitBody(chats[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		t.Fatal(err)
	}
	if got := string(msgs[len(msgs)-1]); got != prefill {
		t.Errorf("last message sent %s, want the prefill %s", got, prefill)
	}
	if got := string(msgs[len(msgs)-2]); got != `{"role":"user","content":"And now?"}` {
		t.Errorf("message before the prefill %s, want the user's last", got)
	}
	if s.calls.Load() != 1 || len(msgs) >= 62 {
		t.Errorf("%d summarizer calls, %d messages sent: want the 62 compacted with one summary", s.calls.Load(), len(msgs))
	}
	if ev.count(middleware.EventProcessed) != 1 || ev.mw[0].MessagesBefore != 62 || ev.mw[0].MessagesAfter != len(msgs) {
		t.Errorf("events %+v, want one processed, 62 messages before and %d after", ev.mw, len(msgs))
	}
}

// TestBodyGrowsAsItArrives checks that the middleware allocates for the
// bytes of a received body that arrive, not for the length it declares: a request
// announcing 256 MiB and ending after a few bytes costs kilobytes, and is
// refused as short; one that sends more than it declared is refused too.
func TestBodyGrowsAsItArrives(t *testing.T) {
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name     string
		declared int64
		wantErr  string
	}{
		{"declared 256 MiB", 256 << 20, "unexpected EOF"},
		{"declared less", int64(len(body)) - 5, "longer than its Content-Length"},
		{"declared exactly", int64(len(body)), ""},
		{"unknown length", -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw := middleware.New(nil, middleware.Options{})
			req, err := http.NewRequest(http.MethodPost, "http://upstream.invalid/v1/chat/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			// As a server receives it: a body of unknown contents.
			req.Body, req.GetBody = io.NopCloser(strings.NewReader(body)), nil
			req.ContentLength = tt.declared
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = mw(req, func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
			})
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("allocated %d bytes for a %d-byte body, want under 1 MiB", got, len(body))
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
