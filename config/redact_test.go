package config

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zapcore"
)

func TestRedactDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"abridge.db", "abridge.db"},
		{"file:abridge.db?_pragma=busy_timeout(5000)", "file:abridge.db?_pragma=busy_timeout(5000)"},
		{"postgres://user:hunter2@db:5432/abridge?sslmode=disable", "postgres://user:[REDACTED]@db:5432/abridge?sslmode=disable"},
		{"postgres://user@db/abridge", "postgres://user@db/abridge"},
		{"postgres://user:p@ss@db/abridge", "postgres://user:[REDACTED]@db/abridge"},
		{"postgres://user:p%zz@db/abridge", "postgres://user:[REDACTED]@db/abridge"},
		{"postgres://db/abridge?user=u&password=hunter2", "postgres://db/abridge?user=u&password=[REDACTED]"},
		{"host=db user=u password=hunter2 dbname=abridge", "host=db user=u password=[REDACTED] dbname=abridge"},
		{"host=db password='hunter 2' dbname=abridge", "host=db password=[REDACTED] dbname=abridge"},
		{"https://gw.example/v1?api-key=abc123", "https://gw.example/v1?api-key=[REDACTED]"},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, redactDSN(tt.in)); diff != "" {
				t.Errorf("redactDSN(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	c, err := LoadFrom(map[string]string{
		"OPENAI_API_KEY":           "sk-primary-key",
		"OPENAI_BASE_URL":          "https://gw.example/v1?key=sk-primary-key",
		"ABRIDGE_SUMMARY_API_KEY":  "sk-summary-key",
		"ABRIDGE_SUMMARY_BASE_URL": "http://127.0.0.1:8080/v1",
		"ABRIDGE_SUMMARY_MODEL":    "model-sk-summary-key",
		"ABRIDGE_SESSION_DB":       "postgres://u:pw@db/abridge",
		"ABRIDGE_MAX_MESSAGES":     "0",
		"ABRIDGE_UI_TOKEN":         "ui-token-secret",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ABRIDGE_MODEL":                   "gpt-4.1-mini",
		"ABRIDGE_SUMMARY_MODEL":           "model-[REDACTED]",
		"ABRIDGE_SUMMARY_ANTHROPIC_MODEL": "claude-haiku-4-5",
		"ABRIDGE_SUMMARY_BASE_URL":        "http://127.0.0.1:8080/v1",
		"ABRIDGE_SUMMARY_API_KEY":         "[REDACTED]",
		"ABRIDGE_SUMMARY_TIMEOUT":         "1m30s",
		"ABRIDGE_TRIM_MAX_CHARS":          "2000",
		"ABRIDGE_MAX_MESSAGES":            "0",
		"ABRIDGE_CONTEXT_WINDOW":          "0",
		"ABRIDGE_KEEP_MESSAGES":           "0",
		"ABRIDGE_TAIL_OUTPUTS":            "0",
		"ABRIDGE_STRATEGY":                "default",
		"ABRIDGE_TRIGGER_TOKENS":          "0",
		"ABRIDGE_FACTS_CHARS":             "2000",
		"ABRIDGE_SUMMARY_CLIP":            "300",
		"ABRIDGE_TRIGGER_PERCENT":         "70",
		"ABRIDGE_KEEP_USER_TURNS":         "0",
		"ABRIDGE_AHEAD":                   "5",
		"ABRIDGE_HARD_MESSAGES":           "0",
		"ABRIDGE_HARD_TOKENS":             "0",
		"ABRIDGE_SUMMARY_WORKERS":         "64",
		"ABRIDGE_SUMMARY_QUEUE":           "1024",
		"ABRIDGE_SUMMARY_CLAIM_TTL":       "30s",
		"ABRIDGE_SUMMARIZER":              "auto",
		"ABRIDGE_MAX_STEPS":               "25",
		"ABRIDGE_REQUEST_TIMEOUT":         "5m0s",
		"ABRIDGE_STREAM_IDLE_TIMEOUT":     "2m0s",
		"ABRIDGE_SESSION_DB":              "postgres://u:[REDACTED]@db/abridge",
		"ABRIDGE_SERVE_ADDR":              "127.0.0.1:8787",
		"ABRIDGE_SERVE_MAX_BODY_MB":       "32",
		"ABRIDGE_SERVE_BODY_MEMORY_MB":    "256",
		"ABRIDGE_SERVE_TIMEOUT":           "10m0s",
		"ABRIDGE_SERVE_SHUTDOWN_TIMEOUT":  "30s",
		"ABRIDGE_SERVE_SUMMARIZE_FOR":     "accepted",
		"ABRIDGE_UI_TOKEN":                "[REDACTED]",
		"ABRIDGE_LOG_LEVEL":               "info",
		"ABRIDGE_LOG_FORMAT":              "console",
		"OPENAI_API_KEY":                  "[REDACTED]",
		"OPENAI_BASE_URL":                 "https://gw.example/v1?key=[REDACTED]",
		"ANTHROPIC_BASE_URL":              "",
	}
	if diff := cmp.Diff(want, c.Redacted()); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}

	var got map[string]string
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MarshalJSON (-want +got):\n%s", diff)
	}

	enc := zapcore.NewMapObjectEncoder()
	if err := c.MarshalLogObject(enc); err != nil {
		t.Fatal(err)
	}
	wantLog := map[string]any{
		"summarizer_kind": "llm", "endpoint": true,
		"summary_model": "model-[REDACTED]", "summary_base_url": "http://127.0.0.1:8080/v1",
	}
	for k, v := range want {
		wantLog[k] = v
	}
	if diff := cmp.Diff(wantLog, enc.Fields); diff != "" {
		t.Errorf("MarshalLogObject (-want +got):\n%s", diff)
	}
}

func TestString(t *testing.T) {
	c, err := LoadFrom(map[string]string{
		"OPENAI_API_KEY":     "sk-primary-key",
		"ABRIDGE_SESSION_DB": "host=db password=pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `ABRIDGE_STRATEGY=default ABRIDGE_MODEL=gpt-4.1-mini ABRIDGE_SUMMARY_MODEL="" ABRIDGE_SUMMARY_ANTHROPIC_MODEL=claude-haiku-4-5 ABRIDGE_SUMMARY_BASE_URL="" ` +
		`ABRIDGE_SUMMARY_API_KEY="" ABRIDGE_SUMMARY_TIMEOUT=1m30s ABRIDGE_TRIM_MAX_CHARS=2000 ` +
		`ABRIDGE_MAX_MESSAGES=40 ABRIDGE_KEEP_MESSAGES=0 ABRIDGE_TAIL_OUTPUTS=0 ABRIDGE_CONTEXT_WINDOW=0 ABRIDGE_TRIGGER_PERCENT=70 ABRIDGE_TRIGGER_TOKENS=0 ` +
		`ABRIDGE_FACTS_CHARS=2000 ABRIDGE_SUMMARY_CLIP=300 ` +
		`ABRIDGE_KEEP_USER_TURNS=0 ABRIDGE_AHEAD=5 ABRIDGE_HARD_MESSAGES=0 ABRIDGE_HARD_TOKENS=0 ABRIDGE_SUMMARY_WORKERS=64 ABRIDGE_SUMMARY_QUEUE=1024 ` +
		`ABRIDGE_SUMMARY_CLAIM_TTL=30s ABRIDGE_SUMMARIZER=auto ABRIDGE_MAX_STEPS=25 ` +
		`ABRIDGE_REQUEST_TIMEOUT=5m0s ABRIDGE_STREAM_IDLE_TIMEOUT=2m0s ` +
		`ABRIDGE_SESSION_DB="host=db password=[REDACTED]" ABRIDGE_SERVE_ADDR=127.0.0.1:8787 ABRIDGE_SERVE_MAX_BODY_MB=32 ABRIDGE_SERVE_BODY_MEMORY_MB=256 ` +
		`ABRIDGE_SERVE_TIMEOUT=10m0s ABRIDGE_SERVE_SHUTDOWN_TIMEOUT=30s ABRIDGE_SERVE_SUMMARIZE_FOR=accepted ABRIDGE_UI_TOKEN="" ABRIDGE_LOG_LEVEL=info ABRIDGE_LOG_FORMAT=console ` +
		`OPENAI_API_KEY=[REDACTED] OPENAI_BASE_URL="" ANTHROPIC_BASE_URL=""`
	if diff := cmp.Diff(want, c.String()); diff != "" {
		t.Errorf("String (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("config.Config{"+want+"}", c.GoString()); diff != "" {
		t.Errorf("GoString (-want +got):\n%s", diff)
	}
}
