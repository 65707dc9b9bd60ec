package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	_ "modernc.org/sqlite" // the driver summaryRows reads the store with

	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// tenant is one client of a shared abridge serve.
type tenant struct {
	name string // in every message of its conversation
	key  string
	msgs []openai.ChatCompletionMessageParamUnion
}

// tenantConversation returns a conversation of n rounds after the head,
// each message naming name; opening, when set, replaces its first 4
// messages (another tenant's opening, known to whoever copies it).
func tenantConversation(name string, n int, opening []openai.ChatCompletionMessageParamUnion) []openai.ChatCompletionMessageParamUnion {
	h := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a release assistant."),
		openai.UserMessage("Let us plan the release."),
		openai.AssistantMessage("Sure. What comes first?"),
	}
	for i := range n {
		h = append(h,
			openai.UserMessage(fmt.Sprintf("%s step %d: %s", name, i, strings.Repeat(name+" detail ", 30))),
			openai.AssistantMessage(fmt.Sprintf("%s step %d done.", name, i)))
	}
	if opening != nil {
		copy(h, opening[:4])
	}
	return h
}

// TestServeTenants runs abridge serve in client-pays mode for two tenants,
// each with its own key, and a client whose key the upstream refuses (in
// the 32-hexadecimal-digit shape Azure uses, which no prefix tells), who
// copies the opening of the first tenant's conversation and sends three
// times as many requests. Each tenant's summaries are written by the model
// and paid with its own key, none is a fallback, none is paid twice when
// the tenants send their conversations again from the start, and the
// refused key appears in no log line. By default the refused client's
// summaries call no model; when every request is summarized
// (ABRIDGE_SERVE_SUMMARIZE_FOR=all), its failures stop its own summaries
// only, after as many calls as open a breaker.
func TestServeTenants(t *testing.T) {
	for _, mode := range []string{"accepted", "all"} {
		t.Run(mode, func(t *testing.T) { testServeTenants(t, mode) })
	}
}

func testServeTenants(t *testing.T, mode string) {
	const bogusKey = "0123456789abcdef0123456789abcdef"
	tenants := []*tenant{
		{name: "alpha", key: "alpha-key-for-serve-tests"},
		{name: "bravo", key: "bravo-key-for-serve-tests"},
	}
	valid := map[string]bool{}
	for _, tn := range tenants {
		tn.msgs = tenantConversation(tn.name, 40, nil)
		valid["Bearer "+tn.key] = true
	}
	var bogus []*tenant // three conversations, each a compaction of its own
	for i := range 3 {
		name := fmt.Sprintf("mallory%d", i)
		bogus = append(bogus, &tenant{name: name, key: bogusKey, msgs: tenantConversation(name, 40, tenants[0].msgs)})
	}

	// As OpenAI does, the upstream quotes the key it refuses.
	up, upURL := keyedUpstream(t, valid, func(auth string) string {
		return fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://example.invalid.", strings.TrimPrefix(auth, "Bearer "))
	})
	env := serveEnv(t, upURL)
	env["ABRIDGE_SERVE_SUMMARIZE_FOR"] = mode
	srv := startServe(t, env)

	ctx := context.Background()
	send := func(tn *tenant, n int) error {
		client := openai.NewClient(option.WithBaseURL(srv.base), option.WithAPIKey(tn.key), option.WithMaxRetries(0))
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: tn.msgs[:n]})
		return err
	}
	rounds := func() {
		for n := 4; n <= len(tenants[0].msgs); n += 2 {
			// The refused client first, three times a round: as many
			// failures as open a breaker shared by all.
			for _, b := range bogus {
				var apiErr *openai.Error
				if err := send(b, n); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
					t.Fatalf("refused client, %d messages: %v, want the upstream's 401", n, err)
				}
			}
			for _, tn := range tenants {
				if err := send(tn, n); err != nil {
					t.Fatalf("%s, %d messages: %v", tn.name, n, err)
				}
			}
		}
	}
	rounds()
	summaries := map[string]int{}
	for _, r := range up.Requests() {
		if !r.Summary {
			continue
		}
		auth := r.Header.Get("Authorization")
		body := string(r.Body)
		switch {
		case strings.Contains(body, "mallory") != strings.Contains(auth, bogusKey):
			t.Errorf("the refused client's summary was asked with another key, or its key paid for another's")
		case strings.Contains(body, "alpha step") && !strings.Contains(body, "mallory") && auth != "Bearer "+tenants[0].key,
			strings.Contains(body, "bravo step") && auth != "Bearer "+tenants[1].key:
			t.Errorf("a tenant's summary was paid with another credential (%q)", auth)
		}
		summaries[strings.TrimPrefix(auth, "Bearer ")]++
	}
	switch refused := summaries[bogusKey]; {
	case mode == "accepted" && refused > 0:
		t.Errorf("%d summaries asked with the refused key, want none", refused)
	case refused > 3:
		t.Errorf("%d summaries asked with the refused key, want at most 3 (its breaker then opens)", refused)
	}
	for _, tn := range tenants {
		if summaries[tn.key] == 0 {
			t.Errorf("%s: no summary written with its key", tn.name)
		}
	}
	// What reached the upstream for the tenants holds the model's
	// summaries, never a digest.
	compacted := 0
	for _, r := range up.Chats() {
		if !valid[r.Header.Get("Authorization")] {
			continue
		}
		body := string(r.Body)
		if strings.Contains(body, "[abridge: summary") {
			compacted++
		}
		if strings.Contains(body, summarizer.DigestHeader) {
			t.Errorf("a tenant's request went with a digest in place of a summary")
			break
		}
	}
	if compacted == 0 {
		t.Fatal("no tenant request was compacted")
	}

	// Sent again from the start, with the refused client as busy as
	// before: no summary is paid again.
	before := len(up.Requests())
	rounds()
	for _, r := range up.Requests()[before:] {
		if r.Summary {
			t.Errorf("a summary was paid again (%q) for a conversation sent again", r.Header.Get("Authorization"))
		}
	}
	logs := srv.stderr.String()
	if strings.Contains(logs, bogusKey) {
		t.Errorf("the refused key appears in the log:\n%s", logs)
	}
	t.Logf("summaries: alpha %d, bravo %d, refused %d; %d compacted tenant requests",
		summaries[tenants[0].key], summaries[tenants[1].key], summaries[bogusKey], compacted)
}

// TestServeProxyPaysOnlyForCredentials runs abridge serve with a key of
// its own: a client that sends no credential, and one whose key the
// upstream refuses, get no summary paid on the proxy's key and write
// nothing in the summary store; a client whose key the upstream accepts
// gets its summaries, on the proxy's key.
func TestServeProxyPaysOnlyForCredentials(t *testing.T) {
	const proxyKey = "proxy-key-for-serve-tests"
	const goodKey = "good-key-for-serve-tests"
	up, upURL := keyedUpstream(t, map[string]bool{"Bearer " + proxyKey: true, "Bearer " + goodKey: true}, func(string) string {
		return "You didn't provide an API key."
	})
	env := serveEnv(t, upURL)
	env["OPENAI_API_KEY"] = proxyKey
	srv := startServe(t, env)

	post := func(auth string, msgs []openai.ChatCompletionMessageParamUnion) int {
		t.Helper()
		body, err := json.Marshal(openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.base+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, auth := range []string{"", "Bearer not-a-key-of-anyone"} {
		conv := tenantConversation("stranger", 30, nil)
		for n := 4; n <= len(conv); n += 4 {
			if code := post(auth, conv[:n]); code != http.StatusUnauthorized {
				t.Fatalf("Authorization %q, %d messages: status %d, want the upstream's 401", auth, n, code)
			}
		}
	}
	if _, sums := up.Counts(); sums != 0 {
		t.Errorf("%d summaries paid on the proxy's key for clients the upstream refused, want 0", sums)
	}
	if n := summaryRows(t, env["ABRIDGE_SESSION_DB"]); n != 0 {
		t.Errorf("%d summaries stored for clients the upstream refused, want 0", n)
	}
	conv := tenantConversation("client", 30, nil)
	for n := 4; n <= len(conv); n += 4 {
		if code := post("Bearer "+goodKey, conv[:n]); code != http.StatusOK {
			t.Fatalf("accepted client, %d messages: status %d", n, code)
		}
	}
	for _, r := range up.Requests() {
		if r.Summary && r.Header.Get("Authorization") != "Bearer "+proxyKey {
			t.Errorf("a summary was not paid with the proxy's key")
		}
	}
	if _, sums := up.Counts(); sums == 0 || summaryRows(t, env["ABRIDGE_SESSION_DB"]) == 0 {
		t.Errorf("%d summaries for the accepted client, want some, stored", sums)
	}
}

// summaryRows returns the number of spans in the summary store of the
// SQLite file path.
func summaryRows(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM summaries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// keyedUpstream starts a fake upstream that answers the chat requests whose
// Authorization is in valid, and refuses the others with a 401 saying
// message(their Authorization); it returns the upstream and its URL.
func keyedUpstream(t *testing.T, valid map[string]bool, message func(auth string) string) (*openaitest.Upstream, string) {
	up := &openaitest.Upstream{Hook: func(w http.ResponseWriter, r *http.Request, _ openaitest.Request) bool {
		auth := r.Header.Get("Authorization")
		if valid[auth] {
			return false
		}
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": message(auth), "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write(body)
		return true
	}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	return up, srv.URL
}
