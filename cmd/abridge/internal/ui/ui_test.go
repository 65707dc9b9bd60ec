package ui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

const (
	convID    = "0123456789abcdef01234567"
	receiptID = "89abcdef0123456789abcdef"
	hostile   = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`
)

// source returns the receipts of a SQLite store holding one conversation
// of two requests, the second compacted with a summary holding hostile
// markup.
func source(t *testing.T) *session.Receipts {
	t.Helper()
	ctx := context.Background()
	st, err := session.Open(ctx, sqlite.Driver{Path: filepath.Join(t.TempDir(), "s.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	rs := st.Receipts()
	now := time.Now()
	r := receipt.Receipt{ID: receiptID, Conversation: convID, API: "chat", Model: "gpt-test", Time: now,
		Client: receipt.Size{Messages: 41, Tokens: 9000}, Before: receipt.Size{Messages: 41, Tokens: 8000}, After: receipt.Size{Messages: 23, Tokens: 3000},
		From: 2, To: 20, Replaced: []receipt.Replaced{{Role: "assistant", Tools: []string{"bash"}, Chars: 80}, {Role: "tool", Tools: []string{"bash"}, Chars: 4000}},
		Summary: "The user said " + hostile, Ref: "sum-x", Writer: receipt.WriterDigest, Reason: "timeout"}
	if err := rs.SaveReceipt(ctx, r); err != nil {
		t.Fatal(err)
	}
	err = rs.AddRequests(ctx,
		receipt.Request{Conversation: convID, Time: now.Add(-time.Second), API: "chat", Model: "gpt-test", Status: 200,
			Client: receipt.Size{Messages: 40, Tokens: 8800}, Sent: receipt.Size{Messages: 40, Tokens: 8800}},
		receipt.Request{Conversation: convID, Time: now, API: "chat", Model: "gpt-test", Status: 200,
			Client: receipt.Size{Messages: 41, Tokens: 9000}, Sent: receipt.Size{Messages: 23, Tokens: 3000},
			Usage: &receipt.Usage{Input: 3100, Cached: 1000, Output: 40}, Receipt: receiptID, Compacted: true})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func get(t *testing.T, h http.Handler, target string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8787"
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestAccess checks who is answered: without a token, only requests for
// a loopback host; with one, a request bearing it (header, cookie, or
// ?token= once, which sets the cookie and drops the token from the
// address), and 401 for the others.
func TestAccess(t *testing.T) {
	src := source(t)
	open, guarded := Handler(Options{Source: src}), Handler(Options{Source: src, Token: "s3cret"})
	cookie := "abridge_ui=" + cookieValue("s3cret")
	tests := []struct {
		name     string
		h        http.Handler
		host     string
		target   string
		header   http.Header
		status   int
		location string
	}{
		{"loopback", open, "127.0.0.1:8787", "/ui/", nil, 200, ""},
		{"localhost", open, "localhost:8787", "/ui/", nil, 200, ""},
		{"ipv6 loopback", open, "[::1]:8787", "/ui/", nil, 200, ""},
		{"another host", open, "attacker.example:8787", "/ui/", nil, 403, ""},
		{"no token", guarded, "proxy.example", "/ui/", nil, 401, ""},
		{"no token, API", guarded, "proxy.example", "/ui/api/conversations", nil, 401, ""},
		{"bearer", guarded, "proxy.example", "/ui/api/conversations", http.Header{"Authorization": {"Bearer s3cret"}}, 200, ""},
		{"wrong bearer", guarded, "proxy.example", "/ui/", http.Header{"Authorization": {"Bearer s3cre"}}, 401, ""},
		{"cookie", guarded, "proxy.example", "/ui/receipts/" + receiptID, http.Header{"Cookie": {cookie}}, 200, ""},
		{"wrong cookie", guarded, "proxy.example", "/ui/", http.Header{"Cookie": {"abridge_ui=s3cret"}}, 401, ""},
		{"query token", guarded, "proxy.example", "/ui/conversations/" + convID + "?token=s3cret&x=1", nil, 303, "/ui/conversations/" + convID + "?x=1"},
		{"wrong query token", guarded, "proxy.example", "/ui/?token=nope", nil, 401, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			req.Host = tc.host
			for k, v := range tc.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			resp := rec.Result()
			if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
				t.Fatalf("status %d, Location %q; want %d, %q", resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.location)
			}
			if resp.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("no Content-Security-Policy")
			}
			switch resp.StatusCode {
			case 401:
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without WWW-Authenticate")
				}
			case 303:
				c := resp.Cookies()
				if len(c) != 1 || c[0].Name != CookieName || c[0].Value != cookieValue("s3cret") || !c[0].HttpOnly ||
					c[0].SameSite != http.SameSiteStrictMode || strings.Contains(c[0].Value, "s3cret") {
					t.Errorf("cookie set: %+v", c)
				}
			}
		})
	}
}

// TestPages renders each page: the list shows the conversation, the
// conversation its chart, compactions and requests, the receipt its
// figures, the marker and what it replaced; content is escaped, the only
// script is the page's own, with the nonce the Content-Security-Policy
// names.
func TestPages(t *testing.T) {
	h := Handler(Options{Source: source(t)})
	tests := []struct {
		target string
		status int
		want   []string
	}{
		{"/ui/", 200, []string{`href="/ui/conversations/` + convID + `"`, "6,000", ">1<"}},
		{"/ui/conversations/" + convID, 200, []string{"<svg", "polyline", `href="/ui/receipts/` + receiptID + `"`, "3,100 · 1,000 · 40", "not reported",
			"The user said &lt;script&gt;window.pwned=1&lt;/script&gt;"}},
		{"/ui/receipts/" + receiptID, 200, []string{"the offline digest, because the summarizer&#39;s model did not answer in time",
			"[abridge: summary of the earlier conversation]", "&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img src=x onerror=&#34;window.pwned=2&#34;&gt;",
			"<td>tool</td><td>bash</td><td class=\"n\">4,000</td>", "41 → 23 messages"}},
		{"/ui/receipts/ffffffffffffffffffffffff", 404, []string{"No receipt has this id"}},
		{"/ui/receipts/..%2f..%2fetc", 404, []string{"No receipt has this id"}},
		{"/ui/conversations/ffffffffffffffffffffffff", 404, []string{"No request of this conversation"}},
	}
	scripts := regexp.MustCompile(`<script[^>]*>`)
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			resp := get(t, h, tc.target, nil)
			body, _ := io.ReadAll(resp.Body)
			page := string(body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d:\n%s", resp.StatusCode, tc.status, page)
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			tags := scripts.FindAllString(page, -1)
			nonce := regexp.MustCompile(`script-src 'nonce-([^']+)'`).FindStringSubmatch(resp.Header.Get("Content-Security-Policy"))
			if len(tags) != 1 || nonce == nil || tags[0] != `<script nonce="`+nonce[1]+`">` {
				t.Errorf("script tags %q, CSP %q: want the page's own, with the CSP's nonce", tags, resp.Header.Get("Content-Security-Policy"))
			}
			if strings.Contains(page, "onerror=\"") {
				t.Errorf("an attribute from the content reached the page")
			}
		})
	}
}

// TestAPI reads the JSON behind the pages.
func TestAPI(t *testing.T) {
	h := Handler(Options{Source: source(t)})
	var convs struct{ Conversations []receipt.Conversation }
	decode(t, get(t, h, "/ui/api/conversations", nil), 200, &convs)
	if len(convs.Conversations) != 1 || convs.Conversations[0].ID != convID || convs.Conversations[0].Compactions != 1 {
		t.Errorf("conversations: %+v", convs)
	}
	var one struct {
		Requests []receipt.Request
		Receipts []struct {
			ID, Marker string
		}
	}
	decode(t, get(t, h, "/ui/api/conversations/"+convID, nil), 200, &one)
	if len(one.Requests) != 2 || len(one.Receipts) != 1 || !strings.Contains(one.Receipts[0].Marker, hostile) {
		t.Errorf("conversation: %+v", one)
	}
	var r struct {
		receipt.Receipt
		Marker string
	}
	decode(t, get(t, h, "/ui/api/receipts/"+receiptID, nil), 200, &r)
	if r.ID != receiptID || r.Marker != r.Receipt.Marker() || r.Reason != "timeout" {
		t.Errorf("receipt: %+v", r)
	}
	var missing map[string]string
	decode(t, get(t, h, "/ui/api/receipts/ffffffffffffffffffffffff", nil), 404, &missing)
	if diff := cmp.Diff(map[string]string{"error": "not found"}, missing); diff != "" {
		t.Errorf("unknown receipt (-want +got):\n%s", diff)
	}
	var v map[string]string
	decode(t, get(t, h, "/ui/api/version", nil), 200, &v)
	if v["version"] == "" {
		t.Errorf("version: %v", v)
	}
}

func decode(t *testing.T, resp *http.Response, status int, v any) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q; want %d, JSON", resp.StatusCode, resp.Header.Get("Content-Type"), status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
