package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/summary"
)

func mustLoad(t *testing.T, environ map[string]string) *Config {
	t.Helper()
	c, err := LoadFrom(environ)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTrimOptions(t *testing.T) {
	tests := []struct {
		value string
		want  trimtools.Options
	}{
		{"", trimtools.Options{MaxChars: 2000}},
		{"0", trimtools.Options{MaxChars: 0}}, // the trimmer's default, as in Go
		{"-1", trimtools.Options{MaxChars: -1}},
		{"150", trimtools.Options{MaxChars: 150}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			c := mustLoad(t, map[string]string{"ABRIDGE_TRIM_MAX_CHARS": tt.value})
			if diff := cmp.Diff(tt.want, c.TrimOptions()); diff != "" {
				t.Errorf("TrimOptions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindowOptions(t *testing.T) {
	tests := []struct {
		name    string
		environ map[string]string
		want    window.Options
	}{
		{"defaults", nil, window.Options{MaxMessages: 40, TriggerPercent: 70, Timeout: 90 * time.Second, FactsChars: 2000, SummaryClip: 300, Ahead: 5, ClaimTTL: 30 * time.Second, Pool: window.PoolOptions{Workers: 64, Queue: 1024, QueuePerPayer: 128}}},
		{"count trigger off", map[string]string{"ABRIDGE_MAX_MESSAGES": "-1"},
			window.Options{MaxMessages: -1, TriggerPercent: 70, Timeout: 90 * time.Second, FactsChars: 2000, SummaryClip: 300, Ahead: 5, ClaimTTL: 30 * time.Second, Pool: window.PoolOptions{Workers: 64, Queue: 1024, QueuePerPayer: 128}}},
		{"count trigger at its default", map[string]string{"ABRIDGE_MAX_MESSAGES": "0"},
			window.Options{MaxMessages: 0, TriggerPercent: 70, Timeout: 90 * time.Second, FactsChars: 2000, SummaryClip: 300, Ahead: 5, ClaimTTL: 30 * time.Second, Pool: window.PoolOptions{Workers: 64, Queue: 1024, QueuePerPayer: 128}}},
		{"all set", map[string]string{
			"ABRIDGE_MAX_MESSAGES": "30", "ABRIDGE_CONTEXT_WINDOW": "128000", "ABRIDGE_TRIGGER_PERCENT": "80",
			"ABRIDGE_KEEP_USER_TURNS": "2", "ABRIDGE_SUMMARY_TIMEOUT": "30s", "ABRIDGE_KEEP_MESSAGES": "12",
			"ABRIDGE_TRIGGER_TOKENS": "50000", "ABRIDGE_FACTS_CHARS": "-1", "ABRIDGE_SUMMARY_CLIP": "500",
			"ABRIDGE_AHEAD": "-1", "ABRIDGE_HARD_MESSAGES": "90", "ABRIDGE_HARD_TOKENS": "100000", "ABRIDGE_SUMMARY_CLAIM_TTL": "5s",
		}, window.Options{MaxMessages: 30, KeepMessages: 12, ContextWindow: 128000, TriggerPercent: 80, TriggerTokens: 50000, FactsChars: -1, SummaryClip: 500,
			KeepUserTurns: 2, Timeout: 30 * time.Second, Ahead: -1, HardMessages: 90, HardTokens: 100000, ClaimTTL: 5 * time.Second,
			Pool: window.PoolOptions{Workers: 64, Queue: 1024, QueuePerPayer: 128}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustLoad(t, tt.environ).WindowOptions()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WindowOptions (-want +got):\n%s", diff)
			}
		})
	}
}

// toolReturnSizes returns the content length of every tool return.
func toolReturnSizes(h []processor.Message) []int {
	var out []int
	for _, m := range h {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				out = append(out, len(r.Content))
			}
		}
	}
	return out
}

// TestChainTrims checks that the chain Build builds trims as
// ABRIDGE_TRIM_MAX_CHARS says (the window, set to compact past 100 messages,
// leaves the history alone).
func TestChainTrims(t *testing.T) {
	h := conversation(12) // tool returns of 600 characters
	full := toolReturnSizes(h)
	tests := []struct {
		value   string
		trimmed bool
	}{
		{"-1", false},
		{"0", false}, // 2000
		{"2000", false},
		{"100", true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			comp, err := mustLoad(t, map[string]string{"ABRIDGE_TRIM_MAX_CHARS": tt.value, "ABRIDGE_MAX_MESSAGES": "100"}).Build(BuildOptions{Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			out, err := comp.Chain.Process(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			got := toolReturnSizes(out)
			if len(got) != len(full) {
				t.Fatalf("tool returns: %d, want %d", len(got), len(full))
			}
			for i := range got {
				if (got[i] < full[i]) != tt.trimmed {
					t.Errorf("tool return %d: %d of %d characters kept, want trimmed=%v", i, got[i], full[i], tt.trimmed)
				}
			}
		})
	}
}

func TestBuildDigest(t *testing.T) {
	c := mustLoad(t, map[string]string{"ABRIDGE_MAX_MESSAGES": "8"})
	var events atomic.Int32
	comp, err := c.Build(BuildOptions{OnEvent: func(context.Context, window.Event) { events.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if comp.SummarizerKind != "digest" {
		t.Errorf("SummarizerKind = %q, want digest", comp.SummarizerKind)
	}
	if _, ok := comp.WindowSummarizer.(*summarizer.Digest); !ok {
		t.Errorf("Summarizer is %T, want *summarizer.Digest", comp.WindowSummarizer)
	}
	if comp.Logger == nil || comp.Model == nil || comp.Window == nil || comp.Chain == nil || len(comp.AgentOptions) != 4 {
		t.Fatalf("Build left a component out: %+v", comp)
	}
	h := conversation(20)
	out, err := comp.Chain.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= len(h) {
		t.Errorf("chain kept %d of %d messages; the window should have compacted", len(out), len(h))
	}
	if err := processor.Validate(out); err != nil {
		t.Errorf("chain output: %v", err)
	}
	if events.Load() == 0 {
		t.Errorf("OnEvent was never called")
	}
}

func TestBuildLLM(t *testing.T) {
	srv := newFakeOpenAI(t)
	c := mustLoad(t, map[string]string{
		"OPENAI_BASE_URL":         srv.URL,
		"OPENAI_API_KEY":          "main-key",
		"ABRIDGE_MODEL":           "main-model",
		"ABRIDGE_SUMMARY_MODEL":   "summary-model",
		"ABRIDGE_SUMMARY_API_KEY": "summary-key",
		"ABRIDGE_MAX_MESSAGES":    "8",
	})
	comp, err := c.Build(BuildOptions{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if comp.SummarizerKind != "llm" {
		t.Fatalf("SummarizerKind = %q, want llm", comp.SummarizerKind)
	}
	if _, ok := comp.WindowSummarizer.(*llm.LLM); !ok {
		t.Errorf("Summarizer is %T, want *llm.LLM", comp.WindowSummarizer)
	}
	if got := comp.Model.Name(); got != "main-model" {
		t.Errorf("Model.Name() = %q, want main-model", got)
	}

	h := conversation(20)
	out, err := comp.Chain.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= len(h) {
		t.Errorf("chain kept %d of %d messages; the window should have compacted", len(out), len(h))
	}
	if !strings.Contains(historyText(out), "step 3 is next") {
		t.Errorf("the summary from the fake server is not in the processed history")
	}
	if _, err := comp.Model.Request(context.Background(), out, model.Settings{}); err != nil {
		t.Fatal(err)
	}

	var got []seen
	for _, s := range srv.seen() {
		got = append(got, seen{Model: s.Model, Authorization: s.Authorization})
	}
	want := []seen{
		{Model: "summary-model", Authorization: "Bearer summary-key"},
		{Model: "main-model", Authorization: "Bearer main-key"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests the server received (-want +got):\n%s", diff)
	}
}

// historyText joins the text of every part of h.
func historyText(h []processor.Message) string {
	var b strings.Builder
	for _, m := range h {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.UserPrompt:
				b.WriteString(p.Content)
			case processor.Text:
				b.WriteString(p.Content)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestSummarizerFallsBackToPrimaryEndpoint(t *testing.T) {
	srv := newFakeOpenAI(t)
	c := mustLoad(t, map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "main-key", "ABRIDGE_MODEL": "m"})
	comp, err := c.Build(BuildOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	if comp.SummarizerKind != "llm" {
		t.Fatalf("kind = %q, want llm", comp.SummarizerKind)
	}
	if _, err := comp.WindowSummarizer.Summarize(context.Background(), conversation(8)[:7], "", ""); err != nil {
		t.Fatal(err)
	}
	want := []seen{{Model: "m", Authorization: "Bearer main-key"}}
	var got []seen
	for _, r := range srv.seen() {
		got = append(got, seen{Model: r.Model, Authorization: r.Authorization})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestLogger(t *testing.T) {
	tests := []struct {
		level, format string
		want          []string // substrings of the output
		absent        []string
	}{
		{"info", "console", []string{"INFO\tshown", "WARN\talso shown"}, []string{"hidden"}},
		{"warn", "console", []string{"WARN\talso shown"}, []string{"shown\t", "hidden"}},
		{"debug", "json", []string{`"level":"debug","ts":`, `"msg":"hidden"`, `"msg":"shown"`}, nil},
		{"error", "json", nil, []string{"shown", "hidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.format, func(t *testing.T) {
			l, buf := bufferLogger(t, tt.level, tt.format)
			l.Debug("hidden")
			l.Info("shown")
			l.Warn("also shown")
			out := buf.String()
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
		})
	}
	if _, err := Default().LoggerTo(io.Discard); err != nil {
		t.Errorf("LoggerTo with the defaults: %v", err)
	}
}

// TestLoggerTo checks the one line a logger from LoggerTo writes, whole, in
// each format: the level and format are the configured ones, and a line
// below the level is left out.
func TestLoggerTo(t *testing.T) {
	// The timestamp is the only part of a line that changes between runs.
	stamp := regexp.MustCompile(`(?m)^[0-9][^\t]*\t|"ts":[0-9.e+-]+`)
	tests := []struct {
		level, format string
		want          string
	}{
		{"warn", "console", "TS\tWARN\tthe disk is full\t{\"free\": 0}\n"},
		{"warn", "json", `{"level":"warn",TS,"msg":"the disk is full","free":0}` + "\n"},
		{"debug", "json", `{"level":"debug",TS,"msg":"checking","free":0}` + "\n" +
			`{"level":"warn",TS,"msg":"the disk is full","free":0}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.level+"/"+tt.format, func(t *testing.T) {
			l, buf := bufferLogger(t, tt.level, tt.format)
			l.Debug("checking", zap.Int("free", 0))
			l.Warn("the disk is full", zap.Int("free", 0))
			got := stamp.ReplaceAllStringFunc(buf.String(), func(s string) string {
				if strings.HasPrefix(s, `"ts"`) {
					return "TS"
				}
				return "TS\t"
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoggerToConcurrent logs from several goroutines into a bytes.Buffer,
// which is not safe for concurrent use: LoggerTo serializes the writes, so
// every line arrives whole (and the race detector sees no race).
func TestLoggerToConcurrent(t *testing.T) {
	c := mustLoad(t, map[string]string{"ABRIDGE_LOG_FORMAT": "json"})
	var buf bytes.Buffer
	l, err := c.LoggerTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, lines = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				l.Info("line", zap.Int("goroutine", g), zap.Int("i", i))
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("%d lines, want %d", len(got), goroutines*lines)
	}
	for i, line := range got {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not whole JSON: %q", i, line)
		}
	}
}

func TestLoggerInvalid(t *testing.T) {
	c := Default()
	c.LogLevel = "loud"
	c.LogFormat = "xml"
	want := "build logger: " +
		`ABRIDGE_LOG_LEVEL="loud": unknown value; accepted: debug, info, warn or error` + "\n" +
		`ABRIDGE_LOG_FORMAT="xml": unknown value; accepted: console or json`
	var buf bytes.Buffer
	tests := []struct {
		name  string
		build func() (*zap.Logger, error)
	}{
		{"LoggerTo", func() (*zap.Logger, error) { return c.LoggerTo(&buf) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.build()
			if err == nil {
				t.Fatal("accepted a bad level and format")
			}
			if l != nil {
				t.Errorf("returned a logger with the error")
			}
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			var ve *VarError
			if !errors.As(err, &ve) || ve.Var != "ABRIDGE_LOG_LEVEL" {
				t.Errorf("error does not match the level's *VarError: %v", err)
			}
		})
	}
	if buf.Len() != 0 {
		t.Errorf("LoggerTo wrote %q while failing", buf.String())
	}
	if _, err := Default().LoggerTo(nil); err == nil || err.Error() != "build logger: nil writer" {
		t.Errorf("LoggerTo(nil) = %v, want the error build logger: nil writer", err)
	}
	if _, err := c.Build(BuildOptions{}); err == nil {
		t.Errorf("Build accepted a bad level and format")
	}
	c = Default()
	c.TriggerPercent = 0
	if _, err := c.Build(BuildOptions{Logger: zap.NewNop()}); err == nil || !strings.HasPrefix(err.Error(), "ABRIDGE_TRIGGER_PERCENT=") {
		t.Errorf("Build with a bad threshold: %v", err)
	}
}

func TestAgentOptions(t *testing.T) {
	srv := newFakeOpenAI(t)
	srv.toolCalls = true
	tests := []struct {
		maxSteps string
		requests int
	}{
		{"1", 1},
		{"3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.maxSteps, func(t *testing.T) {
			c := mustLoad(t, map[string]string{
				"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "ABRIDGE_MAX_STEPS": tt.maxSteps,
			})
			before := len(srv.seen())
			comp, err := c.Build(BuildOptions{Logger: zaptest.NewLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(comp.Model, comp.AgentOptions...)
			_, err = a.Run(context.Background(), nil, "Look it up.")
			if !errors.Is(err, agent.ErrStepLimit) {
				t.Fatalf("Run: %v, want the step limit", err)
			}
			if got := len(srv.seen()) - before; got != tt.requests {
				t.Errorf("the agent made %d requests, want %d", got, tt.requests)
			}
		})
	}
}

// bufferLogger returns the logger configured with level and format,
// writing to the buffer it returns.
func bufferLogger(t *testing.T, level, format string) (*zap.Logger, *bytes.Buffer) {
	t.Helper()
	c := mustLoad(t, map[string]string{"ABRIDGE_LOG_LEVEL": level, "ABRIDGE_LOG_FORMAT": format})
	var buf bytes.Buffer
	l, err := c.LoggerTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return l, &buf
}

// TestBuildSummarizersCompactOpenAI passes what Build returns to
// openai.Compact with a focus, as a host that keeps openai-go
// histories does: the window's summarizer (the summary model) and the
// on-demand one (the primary model) both compact, each calling its own
// model; with no endpoint both are the offline digest, which records the
// focus.
func TestBuildSummarizersCompactOpenAI(t *testing.T) {
	params, err := openai.ToParams(conversation(6))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("llm", func(t *testing.T) {
		srv := newFakeOpenAI(t)
		c := mustLoad(t, map[string]string{
			"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "main-key",
			"ABRIDGE_MODEL": "main-model", "ABRIDGE_SUMMARY_MODEL": "summary-model",
		})
		comp, err := c.Build(BuildOptions{Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []summarizer.Summarizer{comp.WindowSummarizer, comp.CompactSummarizer} {
			out, rep, err := openai.Compact(context.Background(), s, params, "the failing step")
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 2 || rep.MessagesAfter != 2 {
				t.Errorf("compacted to %d messages (report %d), want the summary and its acknowledgement", len(out), rep.MessagesAfter)
			}
		}
		var models []string
		for _, s := range srv.seen() {
			models = append(models, s.Model)
		}
		if diff := cmp.Diff([]string{"summary-model", "main-model"}, models); diff != "" {
			t.Errorf("models called (-want +got):\n%s", diff)
		}
	})
	t.Run("digest", func(t *testing.T) {
		comp, err := mustLoad(t, nil).Build(BuildOptions{Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := openai.Compact(context.Background(), comp.CompactSummarizer, params, "the failing step")
		if err != nil {
			t.Fatal(err)
		}
		back, err := openai.FromParams(out)
		if err != nil {
			t.Fatal(err)
		}
		if s, _, ok := summary.ParseMarker(back[0]); !ok || !strings.Contains(s, "Focus asked for:\nthe failing step") {
			t.Errorf("digest summary %q, want the focus recorded", s)
		}
	})
}

// TestTimeouts runs agent turns against a server that stops answering:
// ABRIDGE_REQUEST_TIMEOUT bounds each request of the agent, and
// ABRIDGE_STREAM_IDLE_TIMEOUT a stream that stops sending, long before
// the caller's deadline.
func TestTimeouts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	defer srv.Close()
	tests := []struct {
		name   string
		env    map[string]string
		stream bool
		want   string
	}{
		{"request timeout", map[string]string{"ABRIDGE_REQUEST_TIMEOUT": "300ms"}, false,
			"model request 1: model provider status 200: request timed out after 300ms"},
		{"stream idle timeout", map[string]string{"ABRIDGE_STREAM_IDLE_TIMEOUT": "300ms"}, true,
			"model request 1: model provider status 200: response cut off: the stream sent nothing for 300ms (after 1 chunks)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k"}
			maps.Copy(env, tt.env)
			c := mustLoad(t, env)
			comp, err := c.Build(BuildOptions{Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			opts := comp.AgentOptions
			if tt.stream {
				opts = append(opts, agent.WithOnText(func(string) {}))
			}
			m := comp.Model
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = agent.New(m, opts...).Run(ctx, nil, "hi")
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Run: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRequestFault checks which summarizer errors are blamed on the
// request rather than on the service or the credential.
func TestRequestFault(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&model.Error{StatusCode: 400, Code: "content_filter"}, true},
		{fmt.Errorf("summarize: %w", &model.Error{StatusCode: 422}), true},
		{&model.Error{StatusCode: 413}, true},
		{&model.Error{StatusCode: 401}, false},
		{&model.Error{StatusCode: 403}, false},
		{&model.Error{StatusCode: 429}, false},
		{&model.Error{StatusCode: 500}, false},
		{&model.Error{}, false},
		{context.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		if got := requestFault(tc.err); got != tc.want {
			t.Errorf("requestFault(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// countingSummarizer is a window summarizer that counts its calls.
type countingSummarizer struct{ calls atomic.Int64 }

func (s *countingSummarizer) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	s.calls.Add(1)
	return "The user asked for fixes; they are done.", nil
}

// TestBuildSummarizer checks that BuildOptions.Summarizer writes the
// summaries of the window Build builds, in place of the configured one.
func TestBuildSummarizer(t *testing.T) {
	s := &countingSummarizer{}
	comp, err := mustLoad(t, map[string]string{"ABRIDGE_MAX_MESSAGES": "6", "ABRIDGE_AHEAD": "-1"}).
		Build(BuildOptions{Logger: zap.NewNop(), Summarizer: s})
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Window.Close(context.Background())
	if comp.WindowSummarizer != summarizer.Summarizer(s) {
		t.Errorf("WindowSummarizer is %T, want the one given", comp.WindowSummarizer)
	}
	h := conversation(12)
	out, err := comp.Chain.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) >= len(h) || s.calls.Load() != 1 {
		t.Errorf("%d → %d messages, %d summarizer calls; want a compaction by the summarizer given", len(h), len(out), s.calls.Load())
	}
}

// TestQuietEvents checks that BuildOptions.QuietEvents keeps the window's
// events out of the log while OnEvent still receives them.
func TestQuietEvents(t *testing.T) {
	tests := []struct {
		quiet   bool
		wantLog bool
	}{
		{quiet: false, wantLog: true},
		{quiet: true, wantLog: false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("quiet=%v", tt.quiet), func(t *testing.T) {
			c := mustLoad(t, map[string]string{"ABRIDGE_MAX_MESSAGES": "6", "ABRIDGE_AHEAD": "-1", "ABRIDGE_LOG_LEVEL": "debug"})
			var log bytes.Buffer
			logger, err := c.LoggerTo(&log)
			if err != nil {
				t.Fatal(err)
			}
			var events atomic.Int64
			comp, err := c.Build(BuildOptions{Logger: logger, Summarizer: &countingSummarizer{}, QuietEvents: tt.quiet,
				OnEvent: func(context.Context, window.Event) { events.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := comp.Chain.Process(context.Background(), conversation(12)); err != nil {
				t.Fatal(err)
			}
			if err := comp.Window.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if events.Load() == 0 {
				t.Error("OnEvent received no event")
			}
			if got := strings.Contains(log.String(), "window: compacted"); got != tt.wantLog {
				t.Errorf("log has the compaction: %v, want %v; log:\n%s", got, tt.wantLog, log.String())
			}
		})
	}
}
