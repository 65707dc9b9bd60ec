package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var allowConfig = cmp.AllowUnexported(Config{})

// defaults is the Config every unset variable leads to.
func defaults() Config {
	return Config{
		Strategy:              "default",
		Model:                 "gpt-4.1-mini",
		SummaryAnthropicModel: "claude-haiku-4-5",
		SummaryTimeout:        90 * time.Second,
		TrimMaxChars:          2000,
		MaxMessages:           40,
		ContextWindow:         0,
		TriggerPercent:        70,
		FactsChars:            2000,
		SummaryClip:           300,
		KeepUserTurns:         0,
		Ahead:                 5,
		SummaryWorkers:        64,
		SummaryQueue:          1024,
		SummaryClaimTTL:       30 * time.Second,
		Summarizer:            "auto",
		MaxSteps:              25,
		RequestTimeout:        5 * time.Minute,
		StreamIdleTimeout:     2 * time.Minute,
		ServeAddr:             "127.0.0.1:8787",
		ServeMaxBodyMB:        32,
		ServeBodyMemoryMB:     256,
		ServeTimeout:          10 * time.Minute,
		ServeShutdownTimeout:  30 * time.Second,
		ServeSummarizeFor:     "accepted",
		LogLevel:              "info",
		LogFormat:             "console",
	}
}

func TestDefaults(t *testing.T) {
	for name, environ := range map[string]map[string]string{
		"nil":       nil,
		"empty":     {},
		"all empty": emptyValues(),
		"unrelated": {"HOME": "/root", "ABRIDGE_TRANSCRIPTS": "/tmp/x"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := LoadFrom(environ)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(defaults(), *got, allowConfig); diff != "" {
				t.Errorf("LoadFrom (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(defaults(), *Default(), allowConfig); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

// emptyValues sets every ABRIDGE_ variable to "".
func emptyValues() map[string]string {
	m := map[string]string{}
	for _, v := range variables {
		if v.field != "" {
			m[v.Name] = ""
		}
	}
	return m
}

func TestEachVariable(t *testing.T) {
	tests := []struct {
		name, value string
		want        func(c *Config)
	}{
		{"ABRIDGE_MODEL", "gpt-5", func(c *Config) { c.Model = "gpt-5" }},
		{"ABRIDGE_SUMMARY_MODEL", "gpt-4.1-nano", func(c *Config) { c.SummaryModel = "gpt-4.1-nano" }},
		{"ABRIDGE_SUMMARY_ANTHROPIC_MODEL", "claude-sonnet-4-5", func(c *Config) { c.SummaryAnthropicModel = "claude-sonnet-4-5" }},
		{"ABRIDGE_SUMMARY_BASE_URL", "http://127.0.0.1:11434/v1", func(c *Config) { c.SummaryBaseURL = "http://127.0.0.1:11434/v1" }},
		{"ABRIDGE_SUMMARY_API_KEY", "sk-summary", func(c *Config) { c.SummaryAPIKey = "sk-summary" }},
		{"ABRIDGE_SUMMARY_TIMEOUT", "2m30s", func(c *Config) { c.SummaryTimeout = 150 * time.Second }},
		{"ABRIDGE_SUMMARY_TIMEOUT", "1ms", func(c *Config) { c.SummaryTimeout = time.Millisecond }},
		{"ABRIDGE_TRIM_MAX_CHARS", "500", func(c *Config) { c.TrimMaxChars = 500 }},
		{"ABRIDGE_TRIM_MAX_CHARS", "100", func(c *Config) { c.TrimMaxChars = 100 }},
		{"ABRIDGE_TRIM_MAX_CHARS", "0", func(c *Config) { c.TrimMaxChars = 0 }},
		{"ABRIDGE_MAX_MESSAGES", "80", func(c *Config) { c.MaxMessages = 80 }},
		{"ABRIDGE_MAX_MESSAGES", "0", func(c *Config) { c.MaxMessages = 0 }},
		{"ABRIDGE_MAX_MESSAGES", "-1", func(c *Config) { c.MaxMessages = -1 }},
		{"ABRIDGE_TRIM_MAX_CHARS", "-1", func(c *Config) { c.TrimMaxChars = -1 }},
		{"ABRIDGE_KEEP_MESSAGES", "12", func(c *Config) { c.KeepMessages = 12 }},
		{"ABRIDGE_TRIGGER_TOKENS", "64000", func(c *Config) { c.TriggerTokens = 64000 }},
		{"ABRIDGE_TAIL_OUTPUTS", "2", func(c *Config) { c.TailOutputs = 2 }},
		{"ABRIDGE_FACTS_CHARS", "4000", func(c *Config) { c.FactsChars = 4000 }},
		{"ABRIDGE_FACTS_CHARS", "-1", func(c *Config) { c.FactsChars = -1 }},
		{"ABRIDGE_FACTS_CHARS", "0", func(c *Config) { c.FactsChars = 0 }},
		{"ABRIDGE_SUMMARY_CLIP", "1000", func(c *Config) { c.SummaryClip = 1000 }},
		{"ABRIDGE_SUMMARY_CLIP", "-1", func(c *Config) { c.SummaryClip = -1 }},
		{"ABRIDGE_STRATEGY", "DEFAULT", func(c *Config) {}},
		{"ABRIDGE_CONTEXT_WINDOW", "128000", func(c *Config) { c.ContextWindow = 128000 }},
		{"ABRIDGE_TRIGGER_PERCENT", "1", func(c *Config) { c.TriggerPercent = 1 }},
		{"ABRIDGE_TRIGGER_PERCENT", "100", func(c *Config) { c.TriggerPercent = 100 }},
		{"ABRIDGE_KEEP_USER_TURNS", "3", func(c *Config) { c.KeepUserTurns = 3 }},
		{"ABRIDGE_AHEAD", "3", func(c *Config) { c.Ahead = 3 }},
		{"ABRIDGE_AHEAD", "-1", func(c *Config) { c.Ahead = -1 }},
		{"ABRIDGE_HARD_MESSAGES", "120", func(c *Config) { c.HardMessages = 120 }},
		{"ABRIDGE_HARD_MESSAGES", "-1", func(c *Config) { c.HardMessages = -1 }},
		{"ABRIDGE_HARD_TOKENS", "180000", func(c *Config) { c.HardTokens = 180000 }},
		{"ABRIDGE_SUMMARY_WORKERS", "16", func(c *Config) { c.SummaryWorkers = 16 }},
		{"ABRIDGE_SUMMARY_QUEUE", "64", func(c *Config) { c.SummaryQueue = 64 }},
		{"ABRIDGE_SUMMARY_CLAIM_TTL", "10s", func(c *Config) { c.SummaryClaimTTL = 10 * time.Second }},
		{"ABRIDGE_SUMMARIZER", "llm", func(c *Config) { c.Summarizer = "llm" }},
		{"ABRIDGE_SUMMARIZER", "digest", func(c *Config) { c.Summarizer = "digest" }},
		{"ABRIDGE_SUMMARIZER", "Digest", func(c *Config) { c.Summarizer = "digest" }},
		{"ABRIDGE_MAX_STEPS", "1", func(c *Config) { c.MaxSteps = 1 }},
		{"ABRIDGE_REQUEST_TIMEOUT", "30s", func(c *Config) { c.RequestTimeout = 30 * time.Second }},
		{"ABRIDGE_STREAM_IDLE_TIMEOUT", "1m", func(c *Config) { c.StreamIdleTimeout = time.Minute }},
		{"ABRIDGE_SESSION_DB", "postgres://localhost/abridge", func(c *Config) { c.SessionDB = "postgres://localhost/abridge" }},
		{"ABRIDGE_SERVE_ADDR", ":9000", func(c *Config) { c.ServeAddr = ":9000" }},
		{"ABRIDGE_SERVE_ADDR", "[::1]:0", func(c *Config) { c.ServeAddr = "[::1]:0" }},
		{"ABRIDGE_SERVE_MAX_BODY_MB", "1024", func(c *Config) { c.ServeMaxBodyMB = 1024 }},
		{"ABRIDGE_SERVE_BODY_MEMORY_MB", "64", func(c *Config) { c.ServeBodyMemoryMB = 64 }},
		{"ABRIDGE_SERVE_TIMEOUT", "90s", func(c *Config) { c.ServeTimeout = 90 * time.Second }},
		{"ABRIDGE_SERVE_SUMMARIZE_FOR", "all", func(c *Config) { c.ServeSummarizeFor = "all" }},
		{"ABRIDGE_SERVE_SHUTDOWN_TIMEOUT", "2m", func(c *Config) { c.ServeShutdownTimeout = 2 * time.Minute }},
		{"ABRIDGE_LOG_LEVEL", "debug", func(c *Config) { c.LogLevel = "debug" }},
		{"ABRIDGE_LOG_LEVEL", "WARN", func(c *Config) { c.LogLevel = "warn" }},
		{"ABRIDGE_LOG_LEVEL", "error", func(c *Config) { c.LogLevel = "error" }},
		{"ABRIDGE_LOG_FORMAT", "json", func(c *Config) { c.LogFormat = "json" }},
		{"ABRIDGE_MAX_STEPS", " 7 ", func(c *Config) { c.MaxSteps = 7 }},
		{"OPENAI_API_KEY", "sk-primary", func(c *Config) { c.openAIKey = "sk-primary" }},
		{"OPENAI_BASE_URL", "https://example.test/v1", func(c *Config) { c.openAIBaseURL = "https://example.test/v1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			got, err := LoadFrom(map[string]string{tt.name: tt.value})
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, *got, allowConfig); diff != "" {
				t.Errorf("LoadFrom (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTable checks that the variables table documents every field of
// Config with its env tag and default, so docs/configuration.md cannot drift.
// TestDeprecatedNames checks that a variable's former name is still read
// when the variable is unset, that the variable wins when both are set, and
// that a bad value given under the former name is refused.
func TestDeprecatedNames(t *testing.T) {
	trigger := func(c Config) int { return c.TriggerPercent }
	trim := func(c Config) int { return c.TrimMaxChars }
	for _, tc := range []struct {
		name    string
		environ map[string]string
		got     func(Config) int
		want    int
		err     string
	}{
		{"former name", map[string]string{"ABRIDGE_THRESHOLD_PERCENT": "80"}, trigger, 80, ""},
		{"both: the new name wins", map[string]string{"ABRIDGE_THRESHOLD_PERCENT": "80", "ABRIDGE_TRIGGER_PERCENT": "60"}, trigger, 60, ""},
		{"former name empty", map[string]string{"ABRIDGE_THRESHOLD_PERCENT": " "}, trigger, 70, ""},
		{"former name, bad value", map[string]string{"ABRIDGE_THRESHOLD_PERCENT": "150"}, trigger, 0,
			`ABRIDGE_TRIGGER_PERCENT="150": out of range; accepted: an integer from 1 to 100`},
		{"trim: former name", map[string]string{"ABRIDGE_TRIM_CHARS": "500"}, trim, 500, ""},
		{"trim: both, the new name wins", map[string]string{"ABRIDGE_TRIM_CHARS": "500", "ABRIDGE_TRIM_MAX_CHARS": "300"}, trim, 300, ""},
		{"trim: neither", map[string]string{}, trim, 2000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadFrom(tc.environ)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.got(*c)); diff != "" {
				t.Errorf("the setting (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTable(t *testing.T) {
	typ := reflect.TypeFor[Config]()
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, ok := f.Tag.Lookup("env")
		if !ok {
			continue
		}
		v := byField(f.Name)
		if v == nil {
			t.Errorf("field %s (env %q) is missing from the variables table", f.Name, tag)
			continue
		}
		seen[f.Name] = true
		if v.Name != Prefix+tag {
			t.Errorf("field %s: table says %s, tag says %s", f.Name, v.Name, Prefix+tag)
		}
		if def, ok := f.Tag.Lookup("envDefault"); ok && v.Default != def {
			t.Errorf("%s: table default %q, tag default %q", v.Name, v.Default, def)
		}
		if _, ok := f.Tag.Lookup("envDefault"); !ok && !strings.HasPrefix(v.Default, "(") {
			t.Errorf("%s: has no envDefault but the table gives %q", v.Name, v.Default)
		}
	}
	for _, v := range variables {
		if v.field != "" && !seen[v.field] {
			t.Errorf("table variable %s names field %q, which has no env tag", v.Name, v.field)
		}
		if v.Accepted == "" || v.Description == "" || v.show == nil {
			t.Errorf("table variable %s is incomplete", v.Name)
		}
		if len(VariablesIn(v.Group)) == 0 || !oneOf(string(v.Group), string(GroupModel), string(GroupProcessors),
			string(GroupAgent), string(GroupSession), string(GroupServe), string(GroupLog)) {
			t.Errorf("table variable %s has no known group (%q)", v.Name, v.Group)
		}
	}
	if got, want := len(Variables()), len(variables); got != want {
		t.Errorf("Variables() has %d entries, want %d", got, want)
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name, value string
		want        string
	}{
		{"ABRIDGE_SUMMARY_BASE_URL", "localhost:8080", `ABRIDGE_SUMMARY_BASE_URL="localhost:8080": not an http or https URL; accepted: an http or https URL`},
		{"ABRIDGE_SUMMARY_BASE_URL", "ftp://host/v1", `ABRIDGE_SUMMARY_BASE_URL="ftp://host/v1": not an http or https URL; accepted: an http or https URL`},
		{"ABRIDGE_SUMMARY_BASE_URL", "htp://me:hunter2@gw/v1", `ABRIDGE_SUMMARY_BASE_URL="htp://me:[REDACTED]@gw/v1": not an http or https URL; accepted: an http or https URL`},
		{"OPENAI_BASE_URL", "example.test", `OPENAI_BASE_URL="example.test": not an http or https URL; accepted: an http or https URL`},
		{"ABRIDGE_SUMMARY_TIMEOUT", "90", `ABRIDGE_SUMMARY_TIMEOUT="90": not a duration; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_SUMMARY_TIMEOUT", "soon", `ABRIDGE_SUMMARY_TIMEOUT="soon": not a duration; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_SUMMARY_TIMEOUT", "-5s", `ABRIDGE_SUMMARY_TIMEOUT="-5s": out of range; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_SUMMARY_TIMEOUT", "0s", `ABRIDGE_SUMMARY_TIMEOUT="0s": out of range; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_REQUEST_TIMEOUT", "0s", `ABRIDGE_REQUEST_TIMEOUT="0s": out of range; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_REQUEST_TIMEOUT", "5", `ABRIDGE_REQUEST_TIMEOUT="5": not a duration; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_STREAM_IDLE_TIMEOUT", "-1s", `ABRIDGE_STREAM_IDLE_TIMEOUT="-1s": out of range; accepted: a positive duration with a unit (90s, 2m)`},
		{"ABRIDGE_TRIM_MAX_CHARS", "lots", `ABRIDGE_TRIM_MAX_CHARS="lots": not an integer; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_TRIM_MAX_CHARS", "2.5", `ABRIDGE_TRIM_MAX_CHARS="2.5": not an integer; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_TRIM_MAX_CHARS", "-2", `ABRIDGE_TRIM_MAX_CHARS="-2": out of range; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_TRIM_MAX_CHARS", "99", `ABRIDGE_TRIM_MAX_CHARS="99": out of range; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_TRIM_MAX_CHARS", "99999999999", `ABRIDGE_TRIM_MAX_CHARS="99999999999": out of range: larger than 2147483647; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_TRIM_MAX_CHARS", "-99999999999", `ABRIDGE_TRIM_MAX_CHARS="-99999999999": out of range; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming`},
		{"ABRIDGE_MAX_MESSAGES", "-40", `ABRIDGE_MAX_MESSAGES="-40": out of range; accepted: an integer ≥ 1, 0 for the default, or -1 to disable this trigger`},
		{"ABRIDGE_MAX_MESSAGES", "forty", `ABRIDGE_MAX_MESSAGES="forty": not an integer; accepted: an integer ≥ 1, 0 for the default, or -1 to disable this trigger`},
		{"ABRIDGE_KEEP_MESSAGES", "-3", `ABRIDGE_KEEP_MESSAGES="-3": out of range; accepted: an integer ≥ 0; 0 means max(4, N/2), N being ABRIDGE_MAX_MESSAGES (40 when it is -1)`},
		{"ABRIDGE_TRIGGER_TOKENS", "-1", `ABRIDGE_TRIGGER_TOKENS="-1": out of range; accepted: an integer ≥ 0; 0 disables this trigger`},
		{"ABRIDGE_TAIL_OUTPUTS", "-1", `ABRIDGE_TAIL_OUTPUTS="-1": out of range; accepted: an integer ≥ 0; 0 clears nothing`},
		{"ABRIDGE_STRATEGY", "cheap", `ABRIDGE_STRATEGY="cheap": unknown value; accepted: default, economy, budget, or budget-Nk (a budget of N thousand tokens)`},
		{"ABRIDGE_STRATEGY", "budget-lots", `ABRIDGE_STRATEGY="budget-lots": unknown value; accepted: default, economy, budget, or budget-Nk (a budget of N thousand tokens)`},
		{"ABRIDGE_FACTS_CHARS", "100", `ABRIDGE_FACTS_CHARS="100": out of range; accepted: an integer ≥ 200, 0 for the default, or -1 to leave the facts out`},
		{"ABRIDGE_SUMMARY_CLIP", "-2", `ABRIDGE_SUMMARY_CLIP="-2": out of range; accepted: an integer ≥ 1, 0 for the default, or -1 to give every text whole`},
		{"ABRIDGE_AHEAD", "0", `ABRIDGE_AHEAD="0": out of range; accepted: an integer ≥ 1, or -1 to write each summary when its compaction is due`},
		{"ABRIDGE_AHEAD", "-2", `ABRIDGE_AHEAD="-2": out of range; accepted: an integer ≥ 1, or -1 to write each summary when its compaction is due`},
		{"ABRIDGE_HARD_TOKENS", "-5", `ABRIDGE_HARD_TOKENS="-5": out of range; accepted: an integer ≥ 1, 0 for the default, or -1 for no bound but the provider's`},
		{"ABRIDGE_SUMMARY_WORKERS", "0", `ABRIDGE_SUMMARY_WORKERS="0": out of range; accepted: an integer from 1 to 1024`},
		{"ABRIDGE_SUMMARY_QUEUE", "many", `ABRIDGE_SUMMARY_QUEUE="many": not an integer; accepted: an integer from 1 to 1048576`},
		{"ABRIDGE_SUMMARY_CLAIM_TTL", "0s", `ABRIDGE_SUMMARY_CLAIM_TTL="0s": out of range; accepted: a positive duration with a unit (30s, 1m)`},
		{"ABRIDGE_CONTEXT_WINDOW", "-1", `ABRIDGE_CONTEXT_WINDOW="-1": out of range; accepted: an integer ≥ 0; 0 disables this trigger`},
		{"ABRIDGE_CONTEXT_WINDOW", "3000000000", `ABRIDGE_CONTEXT_WINDOW="3000000000": out of range: larger than 2147483647; accepted: an integer ≥ 0; 0 disables this trigger`},
		{"ABRIDGE_MAX_STEPS", "+9999999999", `ABRIDGE_MAX_STEPS="+9999999999": out of range: larger than 2147483647; accepted: an integer ≥ 1`},
		{"ABRIDGE_CONTEXT_WINDOW", "128k", `ABRIDGE_CONTEXT_WINDOW="128k": not an integer; accepted: an integer ≥ 0; 0 disables this trigger`},
		{"ABRIDGE_TRIGGER_PERCENT", "0", `ABRIDGE_TRIGGER_PERCENT="0": out of range; accepted: an integer from 1 to 100`},
		{"ABRIDGE_TRIGGER_PERCENT", "101", `ABRIDGE_TRIGGER_PERCENT="101": out of range; accepted: an integer from 1 to 100`},
		{"ABRIDGE_TRIGGER_PERCENT", "70%", `ABRIDGE_TRIGGER_PERCENT="70%": not an integer; accepted: an integer from 1 to 100`},
		{"ABRIDGE_KEEP_USER_TURNS", "-2", `ABRIDGE_KEEP_USER_TURNS="-2": out of range; accepted: an integer ≥ 0`},
		{"ABRIDGE_SUMMARIZER", "gpt", `ABRIDGE_SUMMARIZER="gpt": unknown value; accepted: auto, llm or digest`},
		{"ABRIDGE_MAX_STEPS", "0", `ABRIDGE_MAX_STEPS="0": out of range; accepted: an integer ≥ 1`},
		{"ABRIDGE_MAX_STEPS", "-3", `ABRIDGE_MAX_STEPS="-3": out of range; accepted: an integer ≥ 1`},
		{"ABRIDGE_SERVE_ADDR", "8787", `ABRIDGE_SERVE_ADDR="8787": not HOST:PORT; accepted: HOST:PORT, the port from 0 to 65535 (0: any free port; an empty HOST: every interface)`},
		{"ABRIDGE_SERVE_ADDR", "localhost:http", `ABRIDGE_SERVE_ADDR="localhost:http": not HOST:PORT; accepted: HOST:PORT, the port from 0 to 65535 (0: any free port; an empty HOST: every interface)`},
		{"ABRIDGE_SERVE_ADDR", "localhost:70000", `ABRIDGE_SERVE_ADDR="localhost:70000": not HOST:PORT; accepted: HOST:PORT, the port from 0 to 65535 (0: any free port; an empty HOST: every interface)`},
		{"ABRIDGE_SERVE_MAX_BODY_MB", "0", `ABRIDGE_SERVE_MAX_BODY_MB="0": out of range; accepted: an integer from 1 to 1024`},
		{"ABRIDGE_SERVE_MAX_BODY_MB", "2048", `ABRIDGE_SERVE_MAX_BODY_MB="2048": out of range; accepted: an integer from 1 to 1024`},
		{"ABRIDGE_SERVE_BODY_MEMORY_MB", "0", `ABRIDGE_SERVE_BODY_MEMORY_MB="0": out of range; accepted: an integer from 1 to 65536 (raised to twice ABRIDGE_SERVE_MAX_BODY_MB when smaller)`},
		{"ABRIDGE_SERVE_TIMEOUT", "0s", `ABRIDGE_SERVE_TIMEOUT="0s": out of range; accepted: a positive duration with a unit (90s, 10m)`},
		{"ABRIDGE_SERVE_SHUTDOWN_TIMEOUT", "30", `ABRIDGE_SERVE_SHUTDOWN_TIMEOUT="30": not a duration; accepted: a positive duration with a unit (30s, 2m)`},
		{"ABRIDGE_SERVE_SUMMARIZE_FOR", "anyone", `ABRIDGE_SERVE_SUMMARIZE_FOR="anyone": unknown value; accepted: accepted, credential or all`},
		{"ABRIDGE_LOG_LEVEL", "verbose", `ABRIDGE_LOG_LEVEL="verbose": unknown value; accepted: debug, info, warn or error`},
		{"ABRIDGE_LOG_LEVEL", "fatal", `ABRIDGE_LOG_LEVEL="fatal": unknown value; accepted: debug, info, warn or error`},
		{"ABRIDGE_LOG_FORMAT", "text", `ABRIDGE_LOG_FORMAT="text": unknown value; accepted: console or json`},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			c, err := LoadFrom(map[string]string{tt.name: tt.value})
			if err == nil {
				t.Fatalf("LoadFrom accepted %s=%q: %v", tt.name, tt.value, c)
			}
			if c != nil {
				t.Errorf("LoadFrom returned a Config with its error")
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not match ErrInvalid")
			}
			var ve *VarError
			if !errors.As(err, &ve) || ve.Var != tt.name {
				t.Errorf("errors.As VarError = %+v, want Var %s", ve, tt.name)
			}
		})
	}
}

func TestInvalidAllReported(t *testing.T) {
	_, err := LoadFrom(map[string]string{
		"ABRIDGE_TRIM_MAX_CHARS":  "abc",
		"ABRIDGE_MAX_MESSAGES":    "-2",
		"ABRIDGE_TRIGGER_PERCENT": "250",
		"ABRIDGE_SUMMARY_TIMEOUT": "ten",
		"ABRIDGE_LOG_LEVEL":       "loud",
		"ABRIDGE_LOG_FORMAT":      "xml",
		"ABRIDGE_MAX_STEPS":       "x",
		"ABRIDGE_MODEL":           "fine",
	})
	if err == nil {
		t.Fatal("LoadFrom accepted bad values")
	}
	var got []string
	for line := range strings.SplitSeq(err.Error(), "\n") {
		name, _, _ := strings.Cut(line, "=")
		got = append(got, name)
	}
	// In the table's order, each bad variable once, one per line.
	want := []string{
		"ABRIDGE_SUMMARY_TIMEOUT", "ABRIDGE_TRIM_MAX_CHARS", "ABRIDGE_MAX_MESSAGES",
		"ABRIDGE_TRIGGER_PERCENT", "ABRIDGE_MAX_STEPS", "ABRIDGE_LOG_LEVEL", "ABRIDGE_LOG_FORMAT",
	}
	sortByTable(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("variables named by the error (-want +got):\n%s\nerror:\n%v", diff, err)
	}
}

// sortByTable orders variable names as the table does.
func sortByTable(names []string) {
	pos := map[string]int{}
	for i, v := range variables {
		pos[v.Name] = i
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && pos[names[j]] < pos[names[j-1]]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}

func TestValidate(t *testing.T) {
	c := Default()
	c.TrimMaxChars = -5
	c.TriggerPercent = 0
	err := c.Validate()
	want := "ABRIDGE_TRIM_MAX_CHARS=\"-5\": out of range; accepted: an integer ≥ 100, 0 for the default, or -1 to disable trimming\n" +
		"ABRIDGE_TRIGGER_PERCENT=\"0\": out of range; accepted: an integer from 1 to 100"
	if err == nil {
		t.Fatal("Validate accepted bad values")
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
	var zero Config
	if err := zero.Validate(); err == nil || !strings.Contains(err.Error(), "ABRIDGE_MODEL=\"\": empty") {
		t.Errorf("zero Config: Validate = %v, want an ABRIDGE_MODEL error", err)
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("ABRIDGE_MAX_MESSAGES", "12")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMessages != 12 || c.openAIBaseURL != "http://127.0.0.1:9/v1" || !c.Endpoint() {
		t.Errorf("Load = %v", c)
	}
	t.Setenv("ABRIDGE_MAX_MESSAGES", "-12")
	if _, err := Load(); err == nil || !strings.HasPrefix(err.Error(), "ABRIDGE_MAX_MESSAGES=") {
		t.Errorf("Load with a bad value: %v", err)
	}
}

func TestLoadFromDoesNotModifyItsArgument(t *testing.T) {
	in := map[string]string{"ABRIDGE_MAX_STEPS": " 9 ", "ABRIDGE_LOG_LEVEL": "DEBUG"}
	want := map[string]string{"ABRIDGE_MAX_STEPS": " 9 ", "ABRIDGE_LOG_LEVEL": "DEBUG"}
	if _, err := LoadFrom(in); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("LoadFrom changed its argument (-want +got):\n%s", diff)
	}
}

func TestEndpointAndSummarizerKind(t *testing.T) {
	tests := []struct {
		name     string
		environ  map[string]string
		endpoint bool
		kind     string
	}{
		{"nothing", nil, false, "digest"},
		{"primary key", map[string]string{"OPENAI_API_KEY": "k"}, true, "llm"},
		{"primary URL", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, true, "llm"},
		{"summary URL", map[string]string{"ABRIDGE_SUMMARY_BASE_URL": "http://127.0.0.1:1/v1"}, true, "llm"},
		{"summary key alone", map[string]string{"ABRIDGE_SUMMARY_API_KEY": "k"}, false, "digest"},
		{"empty key", map[string]string{"OPENAI_API_KEY": ""}, false, "digest"},
		{"forced llm", map[string]string{"ABRIDGE_SUMMARIZER": "llm"}, false, "llm"},
		{"forced digest", map[string]string{"ABRIDGE_SUMMARIZER": "digest", "OPENAI_API_KEY": "k"}, true, "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadFrom(tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Endpoint(); got != tt.endpoint {
				t.Errorf("Endpoint() = %v, want %v", got, tt.endpoint)
			}
			if got := c.SummarizerKind(); got != tt.kind {
				t.Errorf("SummarizerKind() = %q, want %q", got, tt.kind)
			}
		})
	}
}

func TestSummaryFallbacks(t *testing.T) {
	tests := []struct {
		name            string
		environ         map[string]string
		model, url, key string
	}{
		{"primary", map[string]string{"ABRIDGE_MODEL": "m", "OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "ka"},
			"m", "http://a/v1", "ka"},
		{"own", map[string]string{
			"ABRIDGE_MODEL": "m", "OPENAI_BASE_URL": "http://a/v1", "OPENAI_API_KEY": "ka",
			"ABRIDGE_SUMMARY_MODEL": "s", "ABRIDGE_SUMMARY_BASE_URL": "http://b/v1", "ABRIDGE_SUMMARY_API_KEY": "kb",
		}, "s", "http://b/v1", "kb"},
		{"none", nil, "gpt-4.1-mini", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadFrom(tt.environ)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{c.summaryModel(), c.summaryBaseURL(), c.summaryKey()}
			if diff := cmp.Diff([]string{tt.model, tt.url, tt.key}, got); diff != "" {
				t.Errorf("summary model, URL, key (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStrategy checks that ABRIDGE_STRATEGY sets the defaults of the
// variables it covers to the strategy's settings, and that a variable set
// explicitly wins.
func TestStrategy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ map[string]string
		want    func(c *Config)
	}{
		{"economy", map[string]string{"ABRIDGE_STRATEGY": "economy"}, func(c *Config) {
			c.Strategy, c.TrimMaxChars, c.MaxMessages, c.KeepMessages, c.TailOutputs = "economy", 1000, 24, 6, 1
		}},
		{"economy, any case", map[string]string{"ABRIDGE_STRATEGY": " Economy"}, func(c *Config) {
			c.Strategy, c.TrimMaxChars, c.MaxMessages, c.KeepMessages, c.TailOutputs = "economy", 1000, 24, 6, 1
		}},
		{"economy with a variable set", map[string]string{"ABRIDGE_STRATEGY": "economy", "ABRIDGE_MAX_MESSAGES": "30", "ABRIDGE_TRIM_MAX_CHARS": "-1"}, func(c *Config) {
			c.Strategy, c.TrimMaxChars, c.MaxMessages, c.KeepMessages, c.TailOutputs = "economy", -1, 30, 6, 1
		}},
		{"budget", map[string]string{"ABRIDGE_STRATEGY": "budget"}, func(c *Config) {
			c.Strategy, c.MaxMessages, c.TriggerTokens = "budget", -1, 30000
		}},
		{"a budget of 60,000 tokens", map[string]string{"ABRIDGE_STRATEGY": "Budget-60k"}, func(c *Config) {
			c.Strategy, c.MaxMessages, c.TriggerTokens = "budget-60k", -1, 60000
		}},
		{"a budget of 100,000 tokens, its facts set", map[string]string{"ABRIDGE_STRATEGY": "budget-100000", "ABRIDGE_FACTS_CHARS": "-1"}, func(c *Config) {
			c.Strategy, c.MaxMessages, c.TriggerTokens, c.TrimMaxChars, c.FactsChars = "budget-100000", -1, 100000, 4000, -1
		}},
		{"default", map[string]string{"ABRIDGE_STRATEGY": "default"}, func(c *Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadFrom(tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tc.want(&want)
			if diff := cmp.Diff(&want, got, allowConfig); diff != "" {
				t.Errorf("LoadFrom (-want +got):\n%s", diff)
			}
		})
	}
}
