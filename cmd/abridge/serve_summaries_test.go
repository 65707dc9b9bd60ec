package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/testkit/openaitest"
)

// summarySeen is what a test sees of a summary request: the upstream it
// reached, its path and the credential it carried.
type summarySeen struct {
	Upstream, Path        string
	Authorization, APIKey string
}

// TestServeSummariesPerAPI checks, with no API key in the proxy, that each
// client's conversation is summarized through its own API at its own
// upstream, with its own credential; and that a summary endpoint of its
// own, which a Messages client's key may not reach, gives that client the
// digest with no request anywhere, counted by API.
func TestServeSummariesPerAPI(t *testing.T) {
	const anthropicKey = "sk-ant-api03-serve-client-0123456789"
	var texts []string
	for i := range 60 {
		texts = append(texts, fmt.Sprintf("Step %d: run the tests and read what they print. %s", i, strings.Repeat("output ", 60)))
	}
	messagesBody := func() string {
		var msgs []map[string]any
		for i, s := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": s})
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": "Go on."})
		b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs})
		return string(b)
	}
	responsesBody := func() string {
		var items []map[string]any
		for i, s := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			items = append(items, map[string]any{"type": "message", "role": role, "content": s})
		}
		b, _ := json.Marshal(map[string]any{"model": "gpt-5-codex", "input": items})
		return string(b)
	}
	tests := []struct {
		name         string
		path, body   string
		header       map[string]string
		summaryOwnTo string // ABRIDGE_SUMMARY_BASE_URL: "" none, "openai" on the OpenAI upstream's origin
		want         []summarySeen
		wantDigest   map[string]string
	}{
		{
			name: "messages", path: "/v1/messages", body: messagesBody(),
			header:     map[string]string{"X-Api-Key": anthropicKey, "Anthropic-Version": "2023-06-01"},
			want:       []summarySeen{{Upstream: "anthropic", Path: "/v1/messages", APIKey: anthropicKey}},
			wantDigest: map[string]string{"messages": "0"},
		},
		{
			name: "responses", path: "/v1/responses", body: responsesBody(),
			header:     map[string]string{"Authorization": "Bearer " + clientKey},
			want:       []summarySeen{{Upstream: "openai", Path: "/v1/responses", Authorization: "Bearer " + clientKey}},
			wantDigest: map[string]string{"responses": "0"},
		},
		{
			// The endpoint is on the OpenAI upstream, which an Anthropic
			// key may not reach: the digest, and no request.
			name: "messages with a summary endpoint on the OpenAI upstream", path: "/v1/messages", body: messagesBody(),
			header:       map[string]string{"X-Api-Key": anthropicKey, "Anthropic-Version": "2023-06-01"},
			summaryOwnTo: "openai",
			wantDigest:   map[string]string{"messages": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			openAI, anthropic := &openaitest.Upstream{}, &openaitest.Upstream{}
			env, openAIURL := serveBoth(t, openAI, anthropic)
			env["ABRIDGE_SERVE_SUMMARIZE_FOR"] = "credential"
			if tt.summaryOwnTo == "openai" {
				env["ABRIDGE_SUMMARY_BASE_URL"] = openAIURL + "/summaries/v1"
			}
			srv := startServe(t, env)
			base := strings.TrimSuffix(srv.base, "/v1")
			resp, data := post(t, base+tt.path, tt.body, tt.header)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			var got []summarySeen
			clients := 0
			for name, up := range map[string]*openaitest.Upstream{"openai": openAI, "anthropic": anthropic} {
				for _, r := range up.Requests() {
					if !r.Summary {
						clients++
						continue
					}
					got = append(got, summarySeen{Upstream: name, Path: r.Path,
						Authorization: r.Header.Get("Authorization"), APIKey: r.Header.Get("X-Api-Key")})
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summary requests (-want +got):\n%s", diff)
			}
			if clients != 1 {
				t.Errorf("%d client requests reached the upstreams, want 1", clients)
			}
			metrics := get(t, base+"/metrics")
			for api, n := range tt.wantDigest {
				if want := `abridge_digest_compactions_total{api="` + api + `"} ` + n; !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
			if len(tt.want) > 0 {
				api := strings.TrimPrefix(tt.path, "/v1/")
				if strings.Contains(metrics, `abridge_summarizer_tokens_total{api="`+api+`",type="input"} 0`+"\n") {
					t.Errorf("abridge_summarizer_tokens_total{api=%q,type=\"input\"} is 0, want the summary's tokens", api)
				}
			}
			if logs := srv.stderr.String(); strings.Contains(logs, anthropicKey) || strings.Contains(logs, clientKey) {
				t.Errorf("the log shows a client's key")
			}
		})
	}
}

// TestServeAheadPaidByClient grows a conversation through abridge serve
// with its summaries written ahead, in the background, on each API: every
// summary is asked of the client's own API at its own upstream with the
// client's credential, as one written when due is (the request that
// started it has ended by then), and the conversation is compacted.
func TestServeAheadPaidByClient(t *testing.T) {
	const anthropicKey = "sk-ant-api03-serve-client-0123456789"
	body := func(api string, n int) string {
		var msgs []map[string]any
		for i := range n {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"role": role, "content": fmt.Sprintf("Step %d: %s", i, strings.Repeat("output ", 40))})
		}
		var b []byte
		switch api {
		case "messages":
			b, _ = json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs})
		default:
			b, _ = json.Marshal(map[string]any{"model": "gpt-test", "messages": msgs})
		}
		return string(b)
	}
	for _, tc := range []struct {
		api, path string
		header    map[string]string
		want      summarySeen
	}{
		{"chat", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + clientKey},
			summarySeen{Upstream: "openai", Path: "/v1/chat/completions", Authorization: "Bearer " + clientKey}},
		{"messages", "/v1/messages", map[string]string{"X-Api-Key": anthropicKey, "Anthropic-Version": "2023-06-01"},
			summarySeen{Upstream: "anthropic", Path: "/v1/messages", APIKey: anthropicKey}},
	} {
		t.Run(tc.api, func(t *testing.T) {
			openAI, anthropic := &openaitest.Upstream{}, &openaitest.Upstream{}
			env, _ := serveBoth(t, openAI, anthropic)
			env["ABRIDGE_SERVE_SUMMARIZE_FOR"] = "credential"
			env["ABRIDGE_AHEAD"] = "5"
			env["ABRIDGE_MAX_MESSAGES"] = "20"
			srv := startServe(t, env)
			base := strings.TrimSuffix(srv.base, "/v1")
			compacted := false
			for n := 9; n <= 41; n += 2 {
				time.Sleep(turn) // the agent's turn, while the summaries started ahead are written
				resp, _ := post(t, base+tc.path, body(tc.api, n), tc.header)
				if resp.StatusCode != 200 {
					t.Fatalf("%d messages: status %d", n, resp.StatusCode)
				}
				compacted = compacted || resp.Header.Get("Abridge-Compaction") != ""
			}
			var got []summarySeen
			for name, up := range map[string]*openaitest.Upstream{"openai": openAI, "anthropic": anthropic} {
				for _, r := range up.Requests() {
					if r.Summary {
						got = append(got, summarySeen{Upstream: name, Path: r.Path,
							Authorization: r.Header.Get("Authorization"), APIKey: r.Header.Get("X-Api-Key")})
					}
				}
			}
			if len(got) == 0 || !compacted {
				t.Fatalf("%d summaries written, compacted %v: want the conversation compacted with a summary written ahead", len(got), compacted)
			}
			for _, s := range got {
				if diff := cmp.Diff(tc.want, s); diff != "" {
					t.Errorf("a summary request (-want +got):\n%s", diff)
				}
			}
			if metrics := get(t, base+"/metrics"); !regexp.MustCompile(`(?m)^abridge_ahead_summaries_total\{event="used"\} [1-9]`).MatchString(metrics) {
				t.Errorf("/metrics counts no summary written ahead used")
			}
		})
	}
}
