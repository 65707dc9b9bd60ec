package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/testkit/logkeys"
)

// TestServeLogKeys runs abridge serve with a JSON log at debug level
// through what makes it log: requests of the three APIs answered whole,
// one compacted, answers cut short whole and mid-stream, an upstream 5xx,
// refusals; then checks that no line of the log repeats a key (a reader
// that keeps a repeated key's last value loses the first).
func TestServeLogKeys(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Model string }
		_ = json.Unmarshal(body, &req)
		switch req.Model {
		case "cut-whole":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "290")
			w.WriteHeader(200)
			io.WriteString(w, `{"id":"x","choices":[`)
		case "cut-stream":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"x\",\"cho")
		case "fail":
			http.Error(w, `{"error":{"message":"down","type":"server_error"}}`, http.StatusInternalServerError)
			return
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		if conn, _, err := rc.Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer up.Close()
	env := serveEnv(t, up.URL)
	env["ANTHROPIC_BASE_URL"] = up.URL
	env["ABRIDGE_LOG_FORMAT"] = "json"
	env["ABRIDGE_MAX_MESSAGES"] = "4"
	srv := startServe(t, env)

	var long []string
	for i := range 5 {
		long = append(long, fmt.Sprintf(`{"role":"user","content":"question %d about store/store.go: %s"}`, i, strings.Repeat("why does it fail? ", 40)),
			fmt.Sprintf(`{"role":"assistant","content":"answer %d: %s"}`, i, strings.Repeat("it is the map. ", 40)))
	}
	long = append(long, `{"role":"user","content":"and now?"}`)
	chat := func(model, messages string) string {
		return `{"model":"` + model + `","messages":[` + messages + `]}`
	}
	hi := `{"role":"user","content":"hi"}`
	requests := []struct{ path, body string }{
		{"/chat/completions", chat("ok", strings.Join(long, ","))},
		{"/chat/completions", chat("cut-whole", hi)},
		{"/chat/completions", `{"model":"cut-stream","stream":true,"messages":[` + hi + `]}`},
		{"/chat/completions", chat("fail", hi)},
		{"/chat/completions", `{"model":"ok","messages":`},
		{"/chat/completions", chat("ok", `{"role":"tool","tool_call_id":"c1","content":"orphan"}`)},
		{"/responses", `{"model":"ok","input":[` + hi + `]}`},
		{"/responses", `{"model":"cut-whole","input":[` + hi + `]}`},
		{"/messages", `{"model":"ok","max_tokens":16,"messages":[` + hi + `]}`},
		{"/messages", `{"model":"cut-stream","stream":true,"max_tokens":16,"messages":[` + hi + `]}`},
		{"/../x", `{}`},
	}
	for _, req := range requests {
		resp, err := http.Post(srv.base+req.path, "application/json", strings.NewReader(req.body))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	// Every request's line is written once it is served.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(srv.stderr.String(), `"msg":"proxy: request"`) < len(requests) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := srv.stderr.String()
	for _, want := range []string{`"msg":"proxy: answer cut off"`, `"msg":"window: compacted"`, `"answer_cut_off":"upstream_reset"`, `"error":"upstream_reset"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not hold %s:\n%s", want, out)
		}
	}
	if err := logkeys.Check(out); err != nil {
		t.Error(err)
	}
}
