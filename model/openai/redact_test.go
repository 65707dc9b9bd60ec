package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// TestOpenAIRedactsKey has providers echo the configured API key, whatever
// its shape, in every place an error takes text from: neither the error's
// text nor that of the error it wraps holds it.
func TestOpenAIRedactsKey(t *testing.T) {
	keys := []string{
		"gsk_8fQ2mZkLr0aPq7XyTbNcVdWe4sHj1uIo",
		"hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
		"sk_test_51HxYzAbCdEfGhIjKlMnOp",
		"0123456789abcdefFEDCBA9876543210", // a bare key
		"short-8!",                         // the shortest secret
	}
	echoes := []struct {
		name    string
		handler func(key string) http.HandlerFunc
		stream  bool
		quoted  bool // the error quotes what the server said
	}{
		{"error message", func(key string) http.HandlerFunc {
			return providertest.ReplyJSON(401, `{"error":{"message":"Invalid API key: `+key+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, false, true},
		{"detail", func(key string) http.HandlerFunc {
			return providertest.ReplyJSON(403, `{"detail":"key `+key+` is not allowed"}`)
		}, false, true},
		{"non-JSON error body", func(key string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(502)
				io.WriteString(w, "upstream refused Authorization: Bearer "+key)
			}
		}, false, false},
		{"stream error event", func(key string) http.HandlerFunc {
			return providertest.ReplySSE(`{"error":{"message":"bad key ` + key + `","type":"auth"}}`)
		}, true, true},
		{"stream that is no event stream", func(key string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, key+" is not a valid key")
			}
		}, true, true},
	}
	for _, key := range keys {
		for _, e := range echoes {
			t.Run(e.name+"/"+key[:4], func(t *testing.T) {
				f := providertest.NewServer(t, e.handler(key))
				var s model.Settings
				if e.stream {
					s.OnText = func(string) {}
				}
				m := New(WithBaseURL(f.URL), WithAPIKey(key), WithMaxRetries(0))
				_, err := m.Request(context.Background(), providertest.History(), s)
				if err == nil {
					t.Fatal("Request succeeded, want an error")
				}
				// The error and what it wraps, as far as the provider's
				// own error values, which hold what the server said.
				var me *model.Error
				if !errors.As(err, &me) {
					t.Fatalf("error %v (%T), want a *model.Error", err, err)
				}
				texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", me.Message)}
				if me.Err != nil {
					texts = append(texts, me.Err.Error(), fmt.Sprintf("%+v", me.Err))
				}
				for _, text := range texts {
					if strings.Contains(text, key) {
						t.Errorf("error text holds the key: %s", text)
					}
				}
				if e.quoted && !strings.Contains(err.Error(), "[redacted key]") {
					t.Errorf("error %q does not say a key was redacted", err)
				}
			})
		}
	}
}

// TestOpenAIRedactsEnvKey redacts the key the client reads from
// OPENAI_API_KEY itself.
func TestOpenAIRedactsEnvKey(t *testing.T) {
	const key = "env-key-7777777777777777"
	t.Setenv("OPENAI_API_KEY", key)
	f := providertest.NewServer(t, providertest.ReplyJSON(401, `{"error":{"message":"Invalid API key: `+key+`","type":"auth"}}`))
	_, err := New(WithBaseURL(f.URL), WithMaxRetries(0)).Request(context.Background(), providertest.History(), model.Settings{})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "Invalid API key: [redacted key]") {
		t.Errorf("error %v; want the key from the environment redacted", err)
	}
}

// TestRedactPatterns checks what is taken for a key without being the
// configured one: the masked and prefixed forms providers quote.
func TestRedactPatterns(t *testing.T) {
	m := New(WithAPIKey("EMPTY")) // too short to be a secret
	tests := []struct{ in, want string }{
		{"Incorrect API key provided: sk-proj-****abcd.", "Incorrect API key provided: [redacted key]."},
		{"key gsk_****wxyz rejected", "key [redacted key] rejected"},
		{"key ****wxyz rejected", "key [redacted key] rejected"},
		{"token hf_abcdefgh expired", "token [redacted key] expired"},
		{"use sk_live_abcdef", "use [redacted key]"},
		{"google AIzaSyA1234567890abcdefghijk", "google [redacted key]"},
		{"EMPTY is not a key", "EMPTY is not a key"},
		{"the task-force asked", "the task-force asked"},
	}
	for _, tt := range tests {
		if got := m.redact(tt.in); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
