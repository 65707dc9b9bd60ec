package redact

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestForms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"short values are no secrets", []string{"EMPTY", "ollama", ""}, nil},
		{"a key", []string{"sk-proj-abcdef123"}, []string{"sk-proj-abcdef123"}},
		{"a header with its token, longest first", []string{" Bearer sk-abcdef123 "}, []string{"Bearer sk-abcdef123", "sk-abcdef123"}},
		{"a JSON-escaped form", []string{`key"with<quote`}, []string{`key\"with\u003cquote`, `key"with<quote`}},
		{"several, longest first", []string{"abcdefgh", "abcdefghijkl"}, []string{"abcdefghijkl", "abcdefgh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Forms(tc.values...)); diff != "" {
				t.Errorf("Forms(%q) (-want +got):\n%s", tc.values, diff)
			}
		})
	}
}

func TestReplaceKeys(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"a secret", "bad key abcdefgh1234 sent", []string{"abcdefgh1234"}, "bad key [redacted key] sent"},
		{"empty secrets ignored", "text", []string{""}, "text"},
		{"a key-shaped word", "Incorrect API key provided: sk-proj-****abcd.", nil, "Incorrect API key provided: [redacted key]."},
		{"a Google key", "key AIzaSyA1234567890abcdefghij bad", nil, "key [redacted key] bad"},
		{"no key", "model not found", nil, "model not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Keys(Replace(tc.in, Mark, tc.secrets...))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
