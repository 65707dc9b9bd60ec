package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// TestAheadThroughProxy grows a conversation through the proxy while its
// summaries are written ahead by an upstream that holds every summary
// request until the test lets it go: no request waits for it. The
// requests past the trigger go out uncompacted while the summary is held
// (deferred), the first one after it is written goes out compacted, and
// the metrics count each step.
func TestAheadThroughProxy(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	release := make(chan struct{})
	up := &openaitest.Upstream{Summary: "Summary of the build so far.", Hook: func(_ http.ResponseWriter, _ *http.Request, req openaitest.Request) bool {
		if req.Summary {
			<-release
		}
		return false
	}}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	defer close(release) // a summary still held when the test fails
	reg := prometheus.NewRegistry()
	metrics, err := proxy.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(upSrv.URL + "/v1")
	sm := openai.New(openai.WithBaseURL(upSrv.URL), openai.WithMaxRetries(0))
	win := window.New(window.Options{MaxMessages: 20, Summarizer: llm.New(sm, llm.Options{}), OnEvent: metrics.WindowEvent})
	srv := httptest.NewServer(proxy.New(proxy.Options{Upstream: base, Chain: win, Metrics: metrics}))
	defer srv.Close()

	released := false
	for n := 8; n <= 28; n += 2 {
		body := longConversation(n)
		n := forwardedMessages(t, []byte(body))
		start := time.Now()
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", stringReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d messages: status %d", n, resp.StatusCode)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("%d messages: the request took %v", n, d)
		}
		chats := up.Chats()
		sent := forwardedMessages(t, chats[len(chats)-1].Body)
		switch {
		case !released && sent != n:
			t.Fatalf("%d messages sent as %d while the summary was held: the request waited for it, or was compacted without it", n, sent)
		case released && sent >= n:
			t.Fatalf("%d messages sent as %d once the summary was written", n, sent)
		}
		if n == 27 {
			// Four requests past the trigger (at 21, 23, 25 and 27
			// messages) went out uncompacted; the summary may be written
			// now.
			release <- struct{}{}
			waitFor(t, func() bool { return counter(t, reg, "abridge_ahead_summaries_total", "event", "written") == 1 })
			released = true
		}
	}
	got := map[string]float64{
		"started":  counter(t, reg, "abridge_ahead_summaries_total", "event", "started"),
		"used":     counter(t, reg, "abridge_ahead_summaries_total", "event", "used"),
		"deferred": counter(t, reg, "abridge_deferred_compactions_total"),
	}
	if got["started"] < 1 || got["used"] != 1 || got["deferred"] != 4 {
		t.Errorf("metrics %v: want a summary started, used once, and the requests at 21, 23, 25 and 27 messages deferred", got)
	}
	if n := histogramCount(t, reg, "abridge_summary_wait_seconds"); n != 0 {
		t.Errorf("%d requests waited for a summary", n)
	}
}

// forwardedMessages returns the number of messages of a chat completions
// body.
func forwardedMessages(t *testing.T, body []byte) int {
	t.Helper()
	var b struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return len(b.Messages)
}

// waitFor waits until cond holds, for the background work it names, and
// fails the test after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the background work")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stringReader reads s.
func stringReader(s string) *strings.Reader { return strings.NewReader(s) }

// histogramCount returns the number of observations of a histogram.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	var n uint64
	eachChild(t, reg, name, nil, func(m *dto.Metric) { n += m.GetHistogram().GetSampleCount() })
	return n
}

// TestAheadDeferredOverflow: a request past the trigger goes out
// uncompacted while its summary is being written; when the provider
// refuses it as too long, the proxy compacts it now (the request waits for
// that summary) and retries once: the client gets its answer.
func TestAheadDeferredOverflow(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	up := &openaitest.Upstream{MaxPromptChars: 8000}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	reg := prometheus.NewRegistry()
	metrics, err := proxy.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(upSrv.URL + "/v1")
	sm := openai.New(openai.WithBaseURL(upSrv.URL), openai.WithMaxRetries(0))
	// The summaries written ahead never come: a runner that takes them
	// and never runs them.
	win := window.New(window.Options{MaxMessages: 20, HardMessages: -1, Summarizer: llm.New(sm, llm.Options{}),
		OnEvent: metrics.WindowEvent, Background: never{}})
	srv := httptest.NewServer(proxy.New(proxy.Options{Upstream: base, Chain: win, Metrics: metrics}))
	defer srv.Close()
	for n := 8; n <= 40; n += 2 {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", stringReader(longConversation(n)))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d messages: status %d: %s", n, resp.StatusCode, data)
		}
	}
	if n := counter(t, reg, "abridge_deferred_compactions_total"); n == 0 {
		t.Error("no request was deferred")
	}
	if n := counter(t, reg, "abridge_context_overflows_total", "retried", "true"); n == 0 {
		t.Error("no overflow was compacted and retried")
	}
}

// never is a window.Runner that takes every job and never runs it.
type never struct{}

func (never) Go(string, func(context.Context)) bool { return true }
