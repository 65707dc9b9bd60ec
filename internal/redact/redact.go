// Package redact hides secrets in text: the one rule by which abridge keeps
// a credential out of what it repeats, a model's errors (an upstream that
// refuses a key often quotes it), the proxy's error answers, the
// configuration as it is printed. [Forms] says which values are secrets
// and how a text may quote them, [Replace] hides them, and [Keys] hides
// what looks like an API key although nobody said it was one.
package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Mark replaces a secret in a model's error or an upstream's answer.
const Mark = "[redacted key]"

// MinLen is the length below which a value is not taken for a secret: local
// servers want any value ("EMPTY", "ollama"), and hiding a short word
// everywhere in a message would garble it.
const MinLen = 8

// Forms returns the strings a text may quote each of values (an API key, or
// a credential header's value such as "Bearer sk-…") as: the value, its
// token after a scheme, and both as a JSON string escapes them; the longest
// first, none shorter than [MinLen].
func Forms(values ...string) []string {
	var out []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		forms := []string{v}
		if _, token, ok := strings.Cut(v, " "); ok {
			forms = append(forms, strings.TrimSpace(token))
		}
		for _, f := range forms {
			if len(f) < MinLen {
				continue
			}
			out = append(out, f)
			if b, err := json.Marshal(f); err == nil {
				if esc := string(b[1 : len(b)-1]); esc != f {
					out = append(out, esc)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Replace returns s with each of secrets but "" replaced by mark, in the
// order given (give the longest first, as [Forms] does, so that no part of
// a longer one is left).
func Replace(s, mark string, secrets ...string) string {
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, mark)
		}
	}
	return s
}

// keyPattern matches API keys and the masked fragments of them that
// providers quote in their messages ("Incorrect API key provided:
// sk-proj-****abcd", "gsk_…", "hf_…", "sk_test_…", "AIza…"), and any word
// with a run of asterisks in it, the mark of a masked key.
var keyPattern = regexp.MustCompile(`\b(?:(?:sk|rk|pk|gsk|xai|hf|nvapi|pplx|fw)[-_](?:(?:test|live|proj|ant)[-_])?[A-Za-z0-9_*\-]{3,}|AIza[A-Za-z0-9_\-]{20,})|[A-Za-z0-9_\-]*\*{3,}[A-Za-z0-9_\-.]*`)

// Keys returns s with what looks like an API key, whole or masked, replaced
// by [Mark].
func Keys(s string) string {
	return keyPattern.ReplaceAllString(s, Mark)
}
