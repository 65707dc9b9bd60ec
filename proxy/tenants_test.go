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

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/internal/redact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
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
	m := openai.New(openai.WithBaseURL(up.URL+"/v1"), openai.WithHTTPClient(client), openai.WithModel("gpt-test"))
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), exchangeKey{}, &exchange{credential: http.Header{"Authorization": {"Bearer " + key}}, upstream: origin})
			_, err := m.Request(ctx, []processor.Message{processor.UserMessage("hi")}, model.Settings{})
			if err == nil {
				t.Fatal("no error from a refused key")
			}
			if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), redact.Mark) {
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

func (c *callCounter) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return "A summary.", nil
}

func (c *callCounter) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestSummarizeFor checks, through the proxy, for which requests each
// policy (Options.SummarizeFor, Options.ClientsPay) lets the window call
// its summarizer, and that a credential is accepted once the upstream
// answers a POST carrying it with success, not before and not for a
// listing.
func TestSummarizeFor(t *testing.T) {
	const accepted, refused = "Bearer accepted-key", "Bearer refused-key"
	// What each request was sent with: a credential (its Authorization,
	// "" for none), or the accepted one before the upstream accepted it.
	const first = "accepted-key, first"
	tests := []struct {
		policy     string
		clientsPay bool
		want       map[string]bool // summarized
	}{
		{"", false, map[string]bool{first: true, accepted: true, refused: true, "": true}},
		{SummarizeAll, false, map[string]bool{first: true, accepted: true, refused: true, "": true}},
		{SummarizeAll, true, map[string]bool{first: true, accepted: true, refused: true, "": true}},
		{SummarizeCredential, false, map[string]bool{first: true, accepted: true, refused: true, "": false}},
		{SummarizeCredential, true, map[string]bool{first: true, accepted: true, refused: true, "": true}},
		{SummarizeAccepted, false, map[string]bool{first: false, accepted: true, refused: false, "": false}},
		{SummarizeAccepted, true, map[string]bool{first: false, accepted: true, refused: false, "": true}},
		{"acepted", false, map[string]bool{first: false, accepted: true, refused: false, "": false}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q/clients-pay=%v", tc.policy, tc.clientsPay), func(t *testing.T) {
			// The upstream refuses refused-key's POSTs and accepts the
			// rest, no credential included.
			up := roundTripper(func(req *http.Request) (*http.Response, error) {
				status := http.StatusOK
				if req.Header.Get("Authorization") == refused && req.Method == http.MethodPost {
					status = http.StatusUnauthorized
				}
				return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}, Request: req}, nil
			})
			sum := &callCounter{}
			w := window.New(window.Options{MaxMessages: 4, Summarizer: sum, Store: window.NewMemoryStore(0), Ahead: -1})
			p := New(Options{Chain: w, Transport: up, SummarizeFor: tc.policy, ClientsPay: tc.clientsPay})
			conversations := 0
			send := func(method, auth string, turns int) {
				t.Helper()
				conversations++
				msgs := []string{fmt.Sprintf(`{"role":"user","content":"Conversation %d."}`, conversations), `{"role":"assistant","content":"Started."}`}
				for i := range turns {
					msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Step %d: %s"}`, i, strings.Repeat("details ", 50)),
						fmt.Sprintf(`{"role":"assistant","content":"Done %d."}`, i))
				}
				msgs = append(msgs, `{"role":"user","content":"Next?"}`)
				path := "/v1/chat/completions"
				if method == http.MethodGet {
					path = "/v1/models"
				}
				r := httptest.NewRequest(method, path, strings.NewReader(`{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`))
				if auth != "" {
					r.Header.Set("Authorization", auth)
				}
				p.ServeHTTP(httptest.NewRecorder(), r)
			}
			summarized := func(auth string) bool {
				before := sum.calls()
				send(http.MethodPost, auth, 6)
				return sum.calls() > before
			}
			got := map[string]bool{first: summarized(accepted)}
			// A listing answered with success accepts nobody; a short
			// POST, with nothing to summarize, is answered.
			send(http.MethodGet, refused, 0)
			for auth := range tc.want {
				if auth != first {
					send(http.MethodPost, auth, 0)
				}
			}
			for auth := range tc.want {
				if auth != first {
					got[auth] = summarized(auth)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summarized (-want +got):\n%s", diff)
			}
		})
	}
}
