package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// TestForwardAuthorizationRedacts sends a summarizer's request through
// ForwardAuthorization to an upstream that refuses the client's key and
// quotes it, as OpenAI does: the error the model returns never holds the
// key, whatever its shape (known prefix or none, Azure's 32 hexadecimal
// digits, characters JSON escapes).
func TestForwardAuthorizationRedacts(t *testing.T) {
	keys := []string{
		"sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"0123456789abcdef0123456789abcdef",
		"tenant/key+with=odd<chars>&more",
		"plainwordkey",
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		msg := fmt.Sprintf("Incorrect API key provided: %s (header %s).", key, r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, msg)
	}))
	defer up.Close()
	origin, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: ForwardAuthorization(origin, nil)}
	m := model.NewOpenAI(model.WithBaseURL(up.URL+"/v1"), model.WithHTTPClient(client), model.WithModel("gpt-test"))
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), exchangeKey{}, &exchange{credential: http.Header{"Authorization": {"Bearer " + key}}, upstream: origin})
			_, err := m.Request(ctx, []processor.Message{processor.UserMessage("hi")}, model.Settings{})
			if err == nil {
				t.Fatal("no error from a refused key")
			}
			if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), redactedCredential) {
				t.Errorf("error %q: want the key redacted", err)
			}
		})
	}
}

// callCounter counts its calls.
type callCounter struct {
	mu sync.Mutex
	n  int
}

func (c *callCounter) Summarize(context.Context, []processor.Message, string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return "A summary.", nil
}

// TestTenantsSummarizeFor checks for which requests each policy lets the
// window call its summarizer, and that a credential is accepted once the
// upstream answers a request carrying it with success, not before.
func TestTenantsSummarizeFor(t *testing.T) {
	const accepted, refused = "Bearer accepted-key", "Bearer refused-key"
	tests := []struct {
		policy    string
		proxyPays bool
		want      map[string]bool // by Authorization ("" none): summarized
	}{
		{SummarizeAccepted, true, map[string]bool{accepted: true, refused: false, "": false}},
		{SummarizeAccepted, false, map[string]bool{accepted: true, refused: false, "": true}},
		{SummarizeCredential, true, map[string]bool{accepted: true, refused: true, "": false}},
		{SummarizeCredential, false, map[string]bool{accepted: true, refused: true, "": true}},
		{SummarizeAll, true, map[string]bool{accepted: true, refused: true, "": true}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/proxy-pays=%v", tc.policy, tc.proxyPays), func(t *testing.T) {
			tn := NewTenants(TenantOptions{SummarizeFor: tc.policy, ProxyPays: tc.proxyPays})
			// The upstream accepts accepted-key and no credential.
			up := tn.Transport(roundTripper(func(req *http.Request) (*http.Response, error) {
				status := http.StatusOK
				if req.Header.Get("Authorization") == refused && req.Method == http.MethodPost {
					status = http.StatusUnauthorized
				}
				return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}}, nil
			}))
			summarized := func(auth string) bool {
				sum := &callCounter{}
				w := window.New(window.Options{MaxMessages: 4, Summarizer: sum, Store: window.NewMemoryStore(0), Ahead: -1})
				h := http.Header{}
				if auth != "" {
					h.Set("Authorization", auth)
				}
				history := []processor.Message{processor.SystemMessage("s"), processor.UserMessage("u"), processor.TextMessage("a")}
				for i := range 6 {
					history = append(history, processor.UserMessage(fmt.Sprintf("question %d %s", i, strings.Repeat("x", 200))),
						processor.TextMessage(fmt.Sprintf("answer %d %s", i, strings.Repeat("y", 200))))
				}
				history = append(history, processor.UserMessage("last"))
				if _, err := w.Process(tn.context(context.Background(), h), history); err != nil {
					t.Fatal(err)
				}
				return sum.n > 0
			}
			if tc.policy == SummarizeAccepted && summarized(accepted) {
				t.Errorf("summarized for a credential before the upstream accepted it")
			}
			// A listing answered with success accepts nobody.
			list, _ := http.NewRequest(http.MethodGet, "http://upstream.invalid/v1/models", nil)
			list.Header.Set("Authorization", refused)
			if resp, err := up.RoundTrip(list); err == nil {
				_ = resp.Body.Close()
			}
			for auth := range tc.want {
				req, _ := http.NewRequest(http.MethodPost, "http://upstream.invalid/v1/chat/completions", nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := up.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
			}
			for auth, want := range tc.want {
				if got := summarized(auth); got != want {
					t.Errorf("Authorization %q: summarized %v, want %v", auth, got, want)
				}
			}
		})
	}
}
