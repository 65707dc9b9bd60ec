package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// TestRequiredRefused sends requests whose history holds a secret (in an
// earlier tool output) through a proxy whose chain starts with a
// redaction processor marked required, its redaction service down: each
// is answered 500 processing_failed in its API's error shape, counted as
// refused, not as a chain failure, and nothing reaches the upstream, with
// receipts kept or not.
func TestRequiredRefused(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	redact := processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		return nil, errors.New("redaction service unavailable")
	})
	bodies := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Deploy it."},` +
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"API_KEY=` + key + `"},{"role":"user","content":"Go on."}]}`},
		{"/v1/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Deploy it."},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"API_KEY=` + key + `"},{"type":"text","text":"Go on."}]}]}`},
	}
	for _, receipts := range []bool{false, true} {
		t.Run(fmt.Sprintf("receipts=%v", receipts), func(t *testing.T) {
			f := newFixture(t, &openaitest.Upstream{}, func(o *proxy.Options) {
				o.Chain = processor.Chain(processor.Required(redact), o.Chain)
				if receipts {
					_, o.Receipts = receiptStore(t)
				}
			})
			for _, b := range bodies {
				resp, data := f.post(t, b.path, b.body, http.Header{"Authorization": {"Bearer " + secret}})
				if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(data), middleware.CodeProcessingFailed) {
					t.Errorf("%s: status %d (%s), want 500 %s", b.path, resp.StatusCode, data, middleware.CodeProcessingFailed)
				}
			}
			if reqs := f.up.Requests(); len(reqs) != 0 {
				t.Errorf("upstream got %d requests, want none", len(reqs))
			}
			if n := counter(t, f.reg, "abridge_rejected_requests_total", "error", middleware.CodeProcessingFailed); n != 2 {
				t.Errorf("abridge_rejected_requests_total{error=processing_failed} = %v, want 2", n)
			}
			if n := counter(t, f.reg, "abridge_chain_failures_total"); n != 0 {
				t.Errorf("abridge_chain_failures_total = %v, want 0: nothing was sent unprocessed", n)
			}
		})
	}
}
