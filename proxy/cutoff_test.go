package proxy_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/logkeys"
)

// apiRequests are a valid request of each wire API: its path and body.
var apiRequests = []struct{ api, path, body string }{
	{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
	{"responses", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"hi"}]}`},
	{"messages", "/v1/messages", `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`},
}

// hangUp ends an answer by closing its connection, whatever it announced.
func hangUp(t *testing.T, w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		t.Errorf("upstream: flush: %v", err)
	}
	conn, _, err := rc.Hijack()
	if err != nil {
		t.Errorf("upstream: hijack: %v", err)
		return
	}
	conn.Close()
}

// TestAnswerCutShort checks, on every API, what the client gets and what
// the request's log line and the metrics say when the upstream's answer
// breaks off: a whole answer cut short (it announces 290 bytes, sends 145
// and hangs up) reaches the client as a 502 in its API's error shape, since
// nothing was sent on yet, and is logged and counted as a 502; a whole
// answer that arrives is sent on byte for byte; a stream cut mid-event, its
// 200 sent on long before, stays a 200 in the log and in
// abridge_requests_total, with answer_cut_off in the log; a whole answer
// cut past the part the proxy reads first is a stream's case; a whole
// answer still arriving when the proxy's Timeout passes is a 504. Every
// cut is counted once in abridge_upstream_errors_total, by its reason, and
// no log line repeats a key.
func TestAnswerCutShort(t *testing.T) {
	whole := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("a", 185) + `"}}]}`
	if len(whole) != 290 {
		t.Fatalf("the whole answer is %d bytes, want 290", len(whole))
	}
	tests := []struct {
		name     string
		upstream func(t *testing.T, w http.ResponseWriter)
		status   int    // what the client gets, and the log and the metrics report
		failure  string // the request line's error
		cut      string // the request line's answer_cut_off
		reason   string // abridge_upstream_errors_total's, counted once; "" for none
		body     string // the client's body, when set
		timeout  time.Duration
	}{
		{name: "whole answer cut short", status: 502, failure: proxy.CodeUpstreamReset, reason: "reset", upstream: func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "290")
			w.WriteHeader(200)
			io.WriteString(w, whole[:145])
			hangUp(t, w)
		}},
		{name: "whole answer", status: 200, body: whole, upstream: func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "290")
			io.WriteString(w, whole)
		}},
		{name: "whole answer past the timeout", status: 504, failure: proxy.CodeUpstreamTimeout, reason: "timeout", timeout: 300 * time.Millisecond, upstream: func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "290")
			w.WriteHeader(200)
			io.WriteString(w, whole[:145])
			http.NewResponseController(w).Flush()
			time.Sleep(time.Second)
		}},
		{name: "stream cut mid-event", status: 200, cut: proxy.CodeUpstreamReset, reason: "reset", upstream: func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[]}\n\ndata: {\"id\":\"x\",\"cho")
			hangUp(t, w)
		}},
		{name: "whole answer cut past 8 MiB", status: 200, cut: proxy.CodeUpstreamReset, reason: "reset", upstream: func(t *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "10000000")
			w.WriteHeader(200)
			io.WriteString(w, strings.Repeat(" ", 9<<20))
			hangUp(t, w)
		}},
	}
	for _, tt := range tests {
		for _, req := range apiRequests {
			t.Run(tt.name+"/"+req.api, func(t *testing.T) {
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					tt.upstream(t, w)
				}))
				defer up.Close()
				upURL, _ := url.Parse(up.URL + "/v1")
				reg := prometheus.NewRegistry()
				metrics, err := proxy.NewMetrics(reg)
				if err != nil {
					t.Fatal(err)
				}
				var log bytes.Buffer
				p := proxy.New(proxy.Options{Upstream: upURL, Metrics: metrics, Logger: jsonLogger(&log), Timeout: tt.timeout})
				srv := httptest.NewServer(p)
				defer srv.Close()

				resp, err := http.Post(srv.URL+req.path, "application/json", strings.NewReader(req.body))
				if err != nil {
					t.Fatal(err)
				}
				body, readErr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Errorf("status %d, want %d (body %.200q)", resp.StatusCode, tt.status, body)
				}
				switch {
				case tt.failure != "":
					checkErrorShape(t, req.api, body, tt.failure)
				case tt.body != "" && (readErr != nil || string(body) != tt.body):
					t.Errorf("body %q (%v), want the upstream's whole answer", body, readErr)
				case tt.cut != "" && readErr == nil:
					t.Errorf("the client read the cut answer to its end without an error")
				}

				// The request is logged once served, which may be after the
				// client has its answer: Close waits for that.
				srv.Close()
				line := requestLine(t, log.String())
				got := map[string]any{"status": line["status"], "error": line["error"], "answer_cut_off": line["answer_cut_off"]}
				want := map[string]any{"status": float64(tt.status), "error": nilIfEmpty(tt.failure), "answer_cut_off": nilIfEmpty(tt.cut)}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("the request's log line (-want +got):\n%s", diff)
				}
				wantCodes := map[string]float64{"200": 0, "502": 0, "504": 0}
				wantCodes[strconv.Itoa(tt.status)] = 1
				wantErrors := map[string]float64{"connection": 0, "reset": 0, "timeout": 0, "status_5xx": 0}
				if tt.reason != "" {
					wantErrors[tt.reason] = 1
				}
				for _, c := range []struct {
					name, label string
					want        map[string]float64
					fixed       []string
				}{
					{"abridge_requests_total", "code", wantCodes, []string{"route", req.api}},
					{"abridge_upstream_errors_total", "reason", wantErrors, nil},
				} {
					got := map[string]float64{}
					for value := range c.want {
						got[value] = counter(t, reg, c.name, append([]string{c.label, value}, c.fixed...)...)
					}
					if diff := cmp.Diff(c.want, got); diff != "" {
						t.Errorf("%s by %s (-want +got):\n%s", c.name, c.label, diff)
					}
				}
			})
		}
	}
}

// checkErrorShape checks that body is an error of api's shape with code:
// OpenAI's {"error": {"code": …}} for chat and responses, Anthropic's
// {"type": "error", "error": {"type": "api_error", "message": "code: …"}}.
func checkErrorShape(t *testing.T, api string, body []byte, code string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("error body is not JSON (%v): %q", err, body)
		return
	}
	switch api {
	case "messages":
		if e.Type != "error" || e.Error.Type != "api_error" || !strings.HasPrefix(e.Error.Message, code+": ") {
			t.Errorf("error body %s, want Anthropic's shape, an api_error saying %s", body, code)
		}
	default:
		if e.Error.Code != code || e.Error.Message == "" {
			t.Errorf("error body %s, want OpenAI's shape with code %s", body, code)
		}
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonLogger logs at info and above to w, as zap's JSON encoder writes
// (what abridge serve's ABRIDGE_LOG_FORMAT=json does).
func jsonLogger(w io.Writer) *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), zapcore.InfoLevel))
}

// requestLine returns the "proxy: request" line of log, a JSON log of
// one request, having checked that no line repeats a key.
func requestLine(t *testing.T, log string) map[string]any {
	t.Helper()
	if err := logkeys.Check(log); err != nil {
		t.Error(err)
	}
	var found map[string]any
	for line := range strings.Lines(log) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatal(err)
		}
		if entry["msg"] == "proxy: request" {
			found = entry
		}
	}
	if found == nil {
		t.Fatalf("no request line logged:\n%s", log)
	}
	return found
}
