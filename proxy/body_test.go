package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// bodyProxy is a proxy with opts in front of up, served by an
// http.Server of its own, with nothing between them.
func bodyProxy(t *testing.T, up *openaitest.Upstream, opts proxy.Options) string {
	t.Helper()
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	opts.Upstream, _ = url.Parse(upSrv.URL + "/v1")
	srv := httptest.NewServer(proxy.New(opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// stall opens a connection to base, sends the headers of a chat
// completions request declaring length bytes and then sent bytes of its
// body, and returns the connection, left open.
func stall(t *testing.T, base string, length, sent int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", length)
	if _, err := io.WriteString(conn, head+strings.Repeat(" ", sent)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// status reads the status code of the answer on conn.
func status(t *testing.T, conn net.Conn) int {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStalledBodies is the stalled-body attack on a small scale: twenty
// connections each announce a 32 MiB chat body and send a few bytes of
// it. The proxy holds what arrived, not what was announced (the heap grows
// by far less than the 640 MiB announced), and answers each 408 at the
// body's deadline, well before the request's own timeout.
func TestStalledBodies(t *testing.T) {
	const conns, declared = 20, 32 << 20
	base := bodyProxy(t, &openaitest.Upstream{}, proxy.Options{MaxBodyBytes: declared, BodyTimeout: 700 * time.Millisecond})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	var open []net.Conn
	for range conns {
		open = append(open, stall(t, base, declared, 100))
	}
	time.Sleep(300 * time.Millisecond) // the proxy reads the headers and the first bytes
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB for %d stalled bodies announcing %d MiB each, want under 64", grew>>20, conns, declared>>20)
	}
	for i, conn := range open {
		if got := status(t, conn); got != http.StatusRequestTimeout {
			t.Errorf("connection %d: status %d, want 408", i, got)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stalled bodies answered after %s, want about the 700ms body timeout", took)
	}
}

// TestBodyMemory checks the bound on the memory of bodies in flight, each
// counted with what processing it takes (middleware.ProcessingMemory: in
// all, about 6 times a body of one long text, 4 times of it held while
// the answer is awaited): while one request holds more than half of it
// (its body read, its answer slow), a body whose processing does not fit
// is answered 503 with Retry-After; a small one fits beside it; once the
// first is served, the large one goes through.
func TestBodyMemory(t *testing.T) {
	bigBody := func(n int) string {
		return `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", n) + `"}]}`
	}
	up := &openaitest.Upstream{Latency: 1500 * time.Millisecond}
	base := bodyProxy(t, up, proxy.Options{MaxBodyBytes: 1 << 20, BodyMemory: 5 << 20, BodyTimeout: 400 * time.Millisecond})
	post := func(body string) (int, http.Header) {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if got, _ := post(bigBody(700 << 10)); got != http.StatusOK {
			t.Errorf("first request: status %d, want 200", got)
		}
	}()
	time.Sleep(300 * time.Millisecond) // its body is read; the upstream takes its time
	if got, h := post(bigBody(500 << 10)); got != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Errorf("request over the bound: status %d, Retry-After %q; want 503 with one", got, h.Get("Retry-After"))
	}
	if got, _ := post(bigBody(10)); got != http.StatusOK {
		t.Errorf("small request beside it: status %d, want 200", got)
	}
	wg.Wait()
	if got, _ := post(bigBody(500 << 10)); got != http.StatusOK {
		t.Errorf("the same request once the first was served: status %d, want 200", got)
	}
}

// TestAnswerCutOff checks that an answer that breaks off is counted and
// logged as what happened, not as a plain 200: the upstream resetting the
// connection mid-body (a whole answer, answered 502: see
// TestAnswerCutShort), or a stream cut by the proxy's timeout; and that a
// timeout spent in abridge's own processing is not blamed on an upstream
// that never saw the request.
func TestAnswerCutOff(t *testing.T) {
	hang := processor.Func(func(ctx context.Context, h []processor.Message) ([]processor.Message, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tests := []struct {
		name       string
		hook       func(w http.ResponseWriter) bool
		chain      processor.Processor
		reason     string // abridge_upstream_errors_total's, "" for none
		logged     string // the request line's error or answer_cut_off
		wantStatus int
	}{
		{name: "reset mid-body", reason: "reset", logged: "upstream_reset", wantStatus: 502, hook: func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
			io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[`)
			http.NewResponseController(w).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}},
		{name: "stream cut by the timeout", reason: "timeout", logged: "upstream_timeout", wantStatus: 200, hook: func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\n")
			http.NewResponseController(w).Flush()
			time.Sleep(time.Second)
			return true
		}},
		{name: "processing past the timeout", chain: hang, logged: proxy.CodeProcessTimeout, wantStatus: 504},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			if tt.hook != nil {
				up.Hook = func(w http.ResponseWriter, _ *http.Request, _ openaitest.Request) bool { return tt.hook(w) }
			}
			reg := prometheus.NewRegistry()
			metrics, err := proxy.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zapcore.InfoLevel)
			base := bodyProxy(t, up, proxy.Options{Timeout: 300 * time.Millisecond, Chain: tt.chain, Metrics: metrics, Logger: zap.New(core)})
			resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			switch {
			case err != nil && tt.wantStatus != 200:
				t.Fatal(err)
			case err != nil:
				// The connection broke before the status reached the
				// client: what a client sees of a cut answer.
			default:
				_, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
				}
			}
			for _, reason := range []string{"connection", "timeout", "reset", "status_5xx"} {
				want := 0.0
				if reason == tt.reason {
					want = 1
				}
				if got := counter(t, reg, "abridge_upstream_errors_total", "reason", reason); got != want {
					t.Errorf("abridge_upstream_errors_total{reason=%s} = %v, want %v", reason, got, want)
				}
			}
			if tt.reason == "" && len(up.Requests()) != 0 {
				t.Errorf("upstream got %d requests, want none", len(up.Requests()))
			}
			// The request line tells what happened, at warn.
			deadline := time.Now().Add(5 * time.Second)
			for {
				lines := logs.FilterMessage("proxy: request").All()
				if len(lines) == 1 {
					ctx := lines[0].ContextMap()
					if lines[0].Level != zapcore.WarnLevel || (ctx["error"] != tt.logged && ctx["answer_cut_off"] != tt.logged) {
						t.Errorf("request logged at %s with %v, want warn naming %s", lines[0].Level, ctx, tt.logged)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d request lines logged, want 1", len(lines))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestSmallBodyMemory checks that a bound smaller than one read still
// lets a body through: a chunked body (its length unknown) under an 8 KiB
// bound.
func TestSmallBodyMemory(t *testing.T) {
	base := bodyProxy(t, &openaitest.Upstream{}, proxy.Options{MaxBodyBytes: 1 << 10, BodyMemory: 8 << 10, BodyTimeout: time.Second})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", io.NopCloser(strings.NewReader(body))) // no length: chunked
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d (%s), want 200", resp.StatusCode, data)
	}
}
