package provider

import (
	"errors"
	"regexp"
	"strings"

	"github.com/abridge-go/abridge/model"
)

// Secrets are the values a model's errors never show: its API keys.
type Secrets []string

// minSecretLen is the length below which an API key is not taken for a
// secret: local servers want any value ("EMPTY", "ollama"), and hiding a
// short word everywhere in a message would garble it.
const minSecretLen = 8

// SecretsOf returns the keys an error must never show: those of keys long
// enough to be secrets.
func SecretsOf(keys ...string) Secrets {
	var out Secrets
	for _, k := range keys {
		if len(k) >= minSecretLen {
			out = append(out, k)
		}
	}
	return out
}

// redactedKey replaces a key in messages.
const redactedKey = "[redacted key]"

// keyPattern matches API keys and the masked fragments of them that
// providers quote in their messages ("Incorrect API key provided:
// sk-proj-****abcd", "gsk_…", "hf_…", "sk_test_…", "AIza…"), and any word
// with a run of asterisks in it, the mark of a masked key.
var keyPattern = regexp.MustCompile(`\b(?:(?:sk|rk|pk|gsk|xai|hf|nvapi|pplx|fw)[-_](?:(?:test|live|proj|ant)[-_])?[A-Za-z0-9_*\-]{3,}|AIza[A-Za-z0-9_\-]{20,})|[A-Za-z0-9_\-]*\*{3,}[A-Za-z0-9_\-.]*`)

// Redact replaces each of the secrets wherever it appears in text, and
// what looks like an API key, whole or masked, so that an error never
// repeats any part of a key.
func (s Secrets) Redact(text string) string {
	for _, k := range s {
		text = strings.ReplaceAll(text, k, redactedKey)
	}
	return keyPattern.ReplaceAllString(text, redactedKey)
}

// RedactError returns err with its text passed through [Secrets.Redact]:
// an [*model.Error]'s Message, and the text of what it wraps.
func (s Secrets) RedactError(err error) error {
	var me *model.Error
	if !errors.As(err, &me) {
		return &redacted{err: err, redact: s.Redact}
	}
	out := *me
	out.Message = s.Redact(out.Message)
	if out.Err != nil {
		out.Err = &redacted{err: out.Err, redact: s.Redact}
	}
	return &out
}

// redacted is an error whose text passes through redact; it unwraps to the
// error it holds.
type redacted struct {
	err    error
	redact func(string) string
}

func (r *redacted) Error() string { return r.redact(r.err.Error()) }
func (r *redacted) Unwrap() error { return r.err }
