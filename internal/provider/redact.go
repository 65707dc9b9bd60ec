package provider

import (
	"errors"

	"github.com/abridge-go/abridge/internal/redact"
	"github.com/abridge-go/abridge/model"
)

// Secrets are the values a model's errors never show: its API keys.
type Secrets []string

// SecretsOf returns what an error must never show of keys: each key long
// enough to be a secret, in the forms a message may quote it (see
// [redact.Forms]).
func SecretsOf(keys ...string) Secrets {
	return Secrets(redact.Forms(keys...))
}

// Redact replaces each of the secrets wherever it appears in text, and
// what looks like an API key, whole or masked, so that an error never
// repeats any part of a key.
func (s Secrets) Redact(text string) string {
	return redact.Keys(redact.Replace(text, redact.Mark, s...))
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
