package config

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/abridge-go/abridge/internal/redact"
)

// Redaction is what a secret is replaced with wherever a Config prints it.
const Redaction = "[REDACTED]"

// The formatting methods below have value receivers so that a Config value,
// not only a pointer, redacts itself when printed or logged.

// Redacted returns every variable's effective value, keyed by variable name:
// an API key set shows as [Redaction], a password in a URL or DSN is
// replaced, and any API key appearing inside another value is replaced too.
// An unset key shows as "".
func (c Config) Redacted() map[string]string {
	out := make(map[string]string, len(variables))
	for _, v := range variables {
		out[v.Name] = c.redacted(&v)
	}
	return out
}

// String returns the settings as space-separated NAME=value pairs in the
// order of docs/configuration.md, secrets redacted.
func (c Config) String() string {
	var b strings.Builder
	for i, v := range variables {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Name)
		b.WriteByte('=')
		b.WriteString(quoteIfNeeded(c.redacted(&v)))
	}
	return b.String()
}

// GoString is what the %#v verb prints: the String form, secrets redacted.
func (c Config) GoString() string {
	return "config.Config{" + c.String() + "}"
}

// MarshalJSON encodes [Config.Redacted], so encoding a Config (as
// zap.Reflect does) never writes a secret.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.Redacted())
}

// MarshalLogObject adds the settings to a zap log entry, secrets redacted,
// followed by what they resolve to: the summarizer's kind, model and base
// URL ("" for the OpenAI API), and whether an endpoint is configured.
// logger.Debug("configuration", cfg.Field()) logs it.
func (c Config) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, v := range variables {
		enc.AddString(v.Name, c.redacted(&v))
	}
	enc.AddString("summarizer_kind", c.SummarizerKind())
	enc.AddString("summary_model", c.scrub(c.summaryModel()))
	enc.AddString("summary_base_url", c.scrub(redactDSN(c.summaryBaseURL())))
	enc.AddBool("endpoint", c.Endpoint())
	return nil
}

// Field returns the configuration as a zap field named "config", secrets
// redacted.
func (c Config) Field() zap.Field {
	return zap.Object("config", c)
}

// redacted is one variable's value as it may be shown.
func (c *Config) redacted(v *variable) string {
	return c.hide(v, v.show(c))
}

// hide returns s, a value of v, as it may be shown: "" stays "", a secret
// becomes [Redaction], a URL or DSN loses its passwords, and any API key in
// it is replaced.
func (c *Config) hide(v *variable, s string) string {
	switch {
	case s == "":
		return ""
	case v.secret:
		return Redaction
	case v.dsn:
		s = redactDSN(s)
	}
	return c.scrub(s)
}

// scrub replaces any API key appearing in s.
func (c *Config) scrub(s string) string {
	return redact.Replace(s, Redaction, c.openAIKey, c.SummaryAPIKey)
}

// passwordParam matches a credential given as key=value, in a URL's query
// or a key=value DSN, the value possibly single-quoted.
var passwordParam = regexp.MustCompile(`(?i)\b((?:password|passwd|pwd|pass|secret|token|api[_-]?key|access[_-]?token|key)=)('[^']*'|[^&;\s]+)`)

// userPassword matches the password of a URL's user information. It is
// greedy up to the last @ of the word, so that a password holding a raw @ is
// hidden whole (at worst more than the password is hidden).
var userPassword = regexp.MustCompile(`(://[^/@\s:]*:)\S*@`)

// redactDSN replaces the password of a URL's user information and any
// credential given as key=value.
func redactDSN(s string) string {
	s = userPassword.ReplaceAllString(s, "${1}"+Redaction+"@")
	return passwordParam.ReplaceAllString(s, "${1}"+Redaction)
}

// quoteIfNeeded quotes s when it is empty or holds spaces, quotes or
// control characters.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\r\n\"'\\=") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}
