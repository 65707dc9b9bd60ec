package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
)

// A host mounts the proxy on a server of its own; clients set their base
// URL to it (…/v1). Here the upstream stands for the provider and says how
// many messages it received; the window compacts past 6 messages, so the
// 11 messages of the first request arrive as 7: the first exchange, one
// summary and the last 4. The second request's history is broken: it is
// answered 400 and never reaches the upstream.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Messages []json.RawMessage }
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"received %d messages"}}]}`, len(body.Messages))
	}))
	defer upstream.Close()
	base, _ := url.Parse(upstream.URL + "/v1")

	win := window.New(window.Options{MaxMessages: 6})
	mux := http.NewServeMux()
	mux.Handle("/v1/", proxy.New(proxy.Options{Upstream: base, Chain: win}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(body string) {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(data)))
	}
	var msgs []string
	msgs = append(msgs, `{"role":"user","content":"Start."}`, `{"role":"assistant","content":"Started."}`)
	for i := 1; i <= 4; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Step %d: %s"}`, i, strings.Repeat("details ", 50)),
			fmt.Sprintf(`{"role":"assistant","content":"Done %d."}`, i))
	}
	msgs = append(msgs, `{"role":"user","content":"Next?"}`)
	post(`{"model":"gpt-4.1-mini","messages":[` + strings.Join(msgs, ",") + `]}`)
	post(`{"model":"gpt-4.1-mini","messages":[{"role":"tool","tool_call_id":"call_1","content":"42"}]}`)
	// Output:
	// 200 {"choices":[{"message":{"role":"assistant","content":"received 7 messages"}}]}
	// 400 {"error":{"message":"abridge: message 0: return for call \"call_1\": tool return without a matching tool call","type":"invalid_request_error","param":"messages","code":"invalid_history"}}
}
