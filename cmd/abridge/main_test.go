package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

// result is what one run of the CLI produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs abridge in-process with the given arguments, input and
// environment.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	return <-startCLI(context.Background(), nil, env, strings.NewReader(stdin), args...)
}

// startCLI runs abridge in-process on its own goroutine, with ctx and the
// interrupts the test sends, and returns a channel that receives the result
// once abridge returns.
func startCLI(ctx context.Context, interrupts <-chan os.Signal, env map[string]string, stdin io.Reader, args ...string) <-chan result {
	env = foreground(env)
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(ctx, interrupts, args, stdin, &stdout, &stderr, env)
		done <- result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	return done
}

// foreground returns env with ABRIDGE_AHEAD=-1 unless it sets the
// variable: the tests of this package, but those of the summaries written
// ahead, count compactions and summaries at the requests where they fall
// due, which a summary written in the background on its own goroutine
// would make depend on timing. The tests that set ABRIDGE_AHEAD cover
// that path.
func foreground(env map[string]string) map[string]string {
	if _, ok := env["ABRIDGE_AHEAD"]; ok {
		return env
	}
	out := map[string]string{"ABRIDGE_AHEAD": "-1"}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// fakeOpenAI is an OpenAI Chat Completions server for tests. It answers a
// summary request (tool_choice "none") with summary, and any other request
// with "reply to: " and the last user message. It streams (SSE) when the
// request asks for it.
type fakeOpenAI struct {
	srv     *httptest.Server
	summary string
	// rejectOver, when positive, makes the server answer a turn's request
	// of more messages than this with a context overflow error.
	rejectOver int
	// fail, when set, makes the server refuse every turn (401, which the
	// client does not retry).
	fail bool
	// intercept, when set, sees every request first and answers it itself
	// when it returns true. It runs on the server's goroutines.
	intercept func(w http.ResponseWriter, r *http.Request, req chatRequest) bool

	mu       sync.Mutex
	requests []chatRequest
}

type chatRequest struct {
	Model      string          `json:"model"`
	Stream     bool            `json:"stream"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Messages   []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`

	body []byte // the request as sent
}

// history returns the request's messages as the model package reads them.
func (r chatRequest) history() ([]processor.Message, error) {
	return transcript.Load(bytes.NewReader(r.body))
}

// roles returns "role: text" for each of the request's messages.
func (r chatRequest) roles() []string {
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Role + ": " + r.text(i)
	}
	return out
}

// text returns message i's content as text.
func (r chatRequest) text(i int) string {
	var s string
	if json.Unmarshal(r.Messages[i].Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(r.Messages[i].Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (r chatRequest) summary() bool { return string(r.ToolChoice) == `"none"` }

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{summary: "SUMMARY: the user is fixing a nil map panic in the store package."}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// env returns an environment pointing the CLI at the server.
func (f *fakeOpenAI) env(extra ...string) map[string]string {
	m := map[string]string{"OPENAI_BASE_URL": f.srv.URL, "OPENAI_API_KEY": "test"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// Requests returns the requests received so far.
func (f *fakeOpenAI) Requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.requests...)
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":null}}`, err.Error())
		return
	}
	req.body = body
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if f.intercept != nil && f.intercept(w, r, req) {
		return
	}

	if !req.summary() && (f.fail || f.rejectOver > 0 && len(req.Messages) > f.rejectOver) {
		w.Header().Set("Content-Type", "application/json")
		if f.fail {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is exceeded (%d messages).","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, len(req.Messages))
		return
	}
	answer := f.summary
	if !req.summary() {
		answer = "reply to: "
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				answer += req.text(i)
				break
			}
		}
	}
	promptTokens := len(body) / 4
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0}}`,
		promptTokens, len(answer)/4+1, promptTokens+len(answer)/4+1)
	text, _ := json.Marshal(answer)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":%s}`,
			req.Model, text, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,"+
			"\"choices\":[{\"index\":0,\"delta\":%s,\"logprobs\":null,\"finish_reason\":%s}]}\n\n", req.Model, delta, fin)
	}
	chunk(`{"role":"assistant","content":""}`, "")
	words := strings.SplitAfter(answer, " ")
	for _, word := range words {
		piece, _ := json.Marshal(word)
		chunk(`{"content":`+string(piece)+`}`, "")
	}
	chunk(`{}`, "stop")
	fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", req.Model, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"Usage:", "abridge replay", "abridge chat", "OPENAI_API_KEY", "ABRIDGE_MAX_MESSAGES"}},
		{[]string{"--help"}, []string{"Usage:", "abridge sessions"}},
		{[]string{"-h"}, []string{"Usage:", "abridge process FILE"}},
		{[]string{"help", "compact"}, []string{"abridge compact [--focus TEXT] FILE", "--focus"}},
		{[]string{"help", "help"}, []string{"Usage: abridge help [COMMAND]", "abridge COMMAND --help"}},
		{[]string{"help", "--help"}, []string{"Usage: abridge help [COMMAND]"}},
		{[]string{"help", "-h"}, []string{"Usage: abridge help [COMMAND]"}},
		{[]string{"help", "replay", "--help"}, []string{"Usage: abridge replay", "--mode processed|full|fresh"}},
		{[]string{"replay", "--help"}, []string{"--json", "--wide", "--plot FILE", ".png", "--mode processed|full|fresh", "OPENAI_BASE_URL", "ABRIDGE_TRIM_MAX_CHARS"}},
		{[]string{"replay", "-h"}, []string{"--json", "those last seen more than 20 messages", "largest and mean estimated tokens"}},
		{[]string{"process", "--help"}, []string{"abridge process FILE", "ABRIDGE_MAX_MESSAGES"}},
		{[]string{"compact", "--help"}, []string{"\n  --focus TEXT\n", "leading system prompts", "ABRIDGE_MODEL"}},
		{[]string{"chat", "--help"}, []string{"--session NAME", "/compact", "/history", "/usage", "/quit", "ABRIDGE_SESSION_DB"}},
		{[]string{"sessions", "--help"}, []string{"abridge sessions [show NAME]", "ABRIDGE_SESSION_DB"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, nil, "", tt.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
			}
			words := strings.Join(strings.Fields(r.stdout), " ") // phrases wrapped across lines
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) && !strings.Contains(words, w) {
					t.Errorf("help does not mention %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "abridge (no build information)"},
		{"a tagged module", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.4.0"}}, "abridge v0.4.0, go1.26.0"},
		{"a checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "cf95614"}, {Key: "vcs.time", Value: "2026-11-24T19:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"abridge (devel), commit cf95614 of 2026-11-24T19:00:00Z, with uncommitted changes, go1.26.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := version(tt.info, tt.info != nil); got != tt.want {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
		})
	}
	r := runCLI(t, nil, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "abridge ") || r.stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want 0 and a line naming the build", r.code, r.stdout, r.stderr)
	}
}

// TestHelpVariables checks that the help of each command that runs the
// processors lists every variable that changes what they do, and that the
// log level it gives as the default is the one the command uses.
func TestHelpVariables(t *testing.T) {
	processors := []string{"ABRIDGE_STRATEGY", "ABRIDGE_KEEP_MESSAGES", "ABRIDGE_TAIL_OUTPUTS", "ABRIDGE_TRIGGER_TOKENS"}
	for _, v := range config.VariablesIn(config.GroupProcessors) {
		processors = append(processors, v.Name)
	}
	tests := []struct {
		cmd   string
		want  []string
		level string
	}{
		{"replay", processors, "warn"},
		{"process", processors, "warn"},
		{"chat", append([]string{"ABRIDGE_MAX_STEPS", "ABRIDGE_REQUEST_TIMEOUT"}, processors...), "warn"},
		{"serve", append([]string{"ABRIDGE_SERVE_ADDR", "ABRIDGE_SUMMARY_API_KEY"}, processors...), "info"},
		{"sessions", []string{"ABRIDGE_SESSION_DB"}, "warn"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			r := runCLI(t, nil, "", "help", tt.cmd)
			for _, name := range tt.want {
				if !strings.Contains(r.stdout, "\n  "+name+" (default: ") {
					t.Errorf("help %s does not list %s:\n%s", tt.cmd, name, r.stdout)
				}
			}
			if want := "\n  ABRIDGE_LOG_LEVEL (default: " + tt.level + ")\n"; !strings.Contains(r.stdout, want) {
				t.Errorf("help %s does not give %q:\n%s", tt.cmd, want, r.stdout)
			}
		})
	}
}

// TestHelpCommand checks that "abridge help COMMAND" prints exactly what
// "abridge COMMAND --help" prints, every flag of the command included.
func TestHelpCommand(t *testing.T) {
	for _, cmd := range commands() {
		t.Run(cmd.name, func(t *testing.T) {
			help := runCLI(t, nil, "", "help", cmd.name)
			if help.code != 0 || help.stderr != "" {
				t.Fatalf("help %s: exit %d, stderr %q; want 0 and nothing", cmd.name, help.code, help.stderr)
			}
			flagHelp := runCLI(t, nil, "", cmd.name, "--help")
			if diff := cmp.Diff(flagHelp.stdout, help.stdout); diff != "" {
				t.Errorf("help %s differs from %s --help (-%s --help +help %s):\n%s", cmd.name, cmd.name, cmd.name, cmd.name, diff)
			}
			commandFlags(cmd).VisitAll(func(f *flag.Flag) {
				if !strings.Contains(help.stdout, "\n  --"+f.Name) {
					t.Errorf("help %s does not list --%s:\n%s", cmd.name, f.Name, help.stdout)
				}
			})
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"no command", nil, nil, 2, "Usage:"},
		{"unknown command", nil, []string{"frobnicate"}, 2, `abridge: unknown command "frobnicate"`},
		{"flag before command", nil, []string{"--json"}, 2, "abridge: unknown flag --json"},
		{"help for unknown command", nil, []string{"help", "frobnicate"}, 2, `unknown command "frobnicate"`},
		{"help for two commands", nil, []string{"help", "replay", "chat"}, 2, "abridge: help: want at most one COMMAND, got 2: replay chat"},
		{"help with a bad flag", nil, []string{"help", "--json"}, 2, "abridge: help: flag provided but not defined: --json"},
		{"bad flag", nil, []string{"replay", "--bogus"}, 2, "abridge: replay: flag provided but not defined: -bogus"},
		{"bad mode", nil, []string{"replay", "--mode", "half"}, 2, `--mode is "half"`},
		{"wide and json", nil, []string{"replay", "--wide", "--json"}, 2, "abridge: replay: --wide and --json: choose one"},
		{"replay missing file", nil, []string{"replay", "testdata/missing.json"}, 1, "missing.json"},
		{"process without file", nil, []string{"process"}, 2, "abridge: process: missing FILE"},
		{"process two files", nil, []string{"process", "a.json", "b.json"}, 2, "want one FILE"},
		{"process missing file", nil, []string{"process", "testdata/missing.json"}, 1, "abridge: load testdata/missing.json"},
		{"process broken JSON", nil, []string{"process", "testdata/broken.json"}, 1, "abridge: load testdata/broken.json"},
		{"compact broken JSON", nil, []string{"compact", "testdata/broken.json"}, 1, "abridge: load testdata/broken.json"},
		{"process broken stdin", nil, []string{"process", "-"}, 1, "abridge: load stdin"},
		{"compact missing file", nil, []string{"compact", "--focus", "x", "testdata/missing.json"}, 1, "missing.json"},
		{"bad env value", map[string]string{"ABRIDGE_MAX_MESSAGES": "-3"}, []string{"process", "testdata/history.json"}, 1, "ABRIDGE_MAX_MESSAGES"},
		{"two bad env values", map[string]string{"ABRIDGE_MAX_MESSAGES": "x", "ABRIDGE_TRIGGER_PERCENT": "200"}, []string{"replay"}, 1, "ABRIDGE_TRIGGER_PERCENT"},
		{"chat without endpoint", nil, []string{"chat"}, 1, "abridge: chat: no model endpoint configured"},
		{"chat with only the summarizer's endpoint", map[string]string{"ABRIDGE_SUMMARY_BASE_URL": "http://127.0.0.1:1/v1"}, []string{"chat"}, 1,
			"abridge: chat: no model endpoint configured"},
		{"sessions with a misspelt DSN", map[string]string{"ABRIDGE_SESSION_DB": "postgress://abridge:pw@db/abridge"}, []string{"sessions"}, 1,
			`abridge: sessions: ABRIDGE_SESSION_DB: open session store: unknown scheme "postgress"`},
		{"chat with a misspelt DSN", map[string]string{"OPENAI_API_KEY": "k", "ABRIDGE_SESSION_DB": "postgress://abridge:pw@db/abridge"}, []string{"chat", "--session", "s"}, 1,
			`abridge: chat: ABRIDGE_SESSION_DB: open session store: unknown scheme "postgress"`},
		{"process broken JSON, the file named once", nil, []string{"process", "testdata/broken.json"}, 1, "abridge: load testdata/broken.json: message 1: "},
		{"process missing file, the file named once", nil, []string{"process", "testdata/missing.json"}, 1, "abridge: load testdata/missing.json: no such file or directory"},
		{"chat arguments", nil, []string{"chat", "hello"}, 2, "unexpected arguments"},
		{"sessions unknown subcommand", nil, []string{"sessions", "frob"}, 2, `unknown subcommand "frob"`},
		{"sessions show without name", nil, []string{"sessions", "show"}, 2, "want one NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.env, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr does not mention %q:\n%s", tt.want, r.stderr)
			}
			if tt.args == nil {
				return // the bare command prints its usage
			}
			if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) != 1 {
				t.Errorf("stderr has %d lines, want one:\n%s", len(lines), r.stderr)
			}
		})
	}
}

// digestNote is the line saying the offline digest summarizes, for want
// of a model endpoint.
const digestNote = "abridge: no model endpoint configured (OPENAI_API_KEY, OPENAI_BASE_URL): summarizing with the offline digest"

// TestReplayErrors checks that replay's errors name what went wrong once,
// on the one line stderr holds (no line saying the digest would have
// summarized), and that a replay of nothing fails.
func TestReplayErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"broken JSON", []string{"replay", "testdata/broken.json"}, "abridge: replay: load history testdata/broken.json: message 1: "},
		{"no answer", []string{"replay", "testdata/unanswered.json"}, "abridge: replay: nothing replayed: the transcript has no assistant message"},
		{"no answer in either", []string{"replay", "testdata/unanswered.json", "testdata/unanswered.json"},
			"abridge: replay: nothing replayed: none of the 2 transcripts has an assistant message"},
		{"a directory of transcripts, each read", []string{"replay", "testdata"}, "abridge: replay: load history testdata/broken.json: message 1: "},
	}
	empty := t.TempDir()
	tests = append(tests, struct {
		name string
		args []string
		want string
	}{"a directory without transcripts", []string{"replay", empty}, "abridge: replay: " + empty + ": a directory with no .json transcript"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, "", tt.args...)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if r.code != 1 || r.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 1, nothing, and one line starting %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}

// TestDigestNoteOnlyWhenUsed checks that a command failing before the
// offline digest writes a summary does not say the digest summarizes: its
// error is the one line on stderr.
func TestDigestNoteOnlyWhenUsed(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"replay load error", "", []string{"replay", "testdata/broken.json"}, "abridge: replay: load history testdata/broken.json: "},
		{"process load error", "", []string{"process", "testdata/broken.json"}, "abridge: load testdata/broken.json: "},
		{"compact load error", "", []string{"compact", "testdata/broken.json"}, "abridge: load testdata/broken.json: "},
		{"compact too short", `[{"role":"user","content":"hi"}]`, []string{"compact", "-"}, "abridge: compact -: 1 messages, 1 to summarize: history too short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.stdin, tt.args...)
			if r.code != exitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 1, nothing, and one line starting %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}

// TestInterruptCancelsCommand interrupts commands other than chat while
// they wait for the model: the first interrupt cancels the command, which
// fails on one line.
func TestInterruptCancelsCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the start of stderr
	}{
		{"compact", []string{"compact", "testdata/history.json"}, "abridge: compact testdata/history.json: "},
		{"process", []string{"process", "testdata/history.json"}, "abridge: process testdata/history.json: "},
		{"replay", []string{"replay", "testdata/history.json"}, "abridge: replay: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			held := make(chan struct{})
			f.intercept = func(_ http.ResponseWriter, r *http.Request, _ chatRequest) bool {
				held <- struct{}{}
				<-r.Context().Done() // until the client gives the request up
				return true
			}
			interrupts := make(chan os.Signal)
			// A window of 4 messages summarizes the 18 of the history.
			env := f.env("ABRIDGE_MAX_MESSAGES", "4")
			done := startCLI(context.Background(), interrupts, env, strings.NewReader(""), tt.args...)
			select {
			case <-held:
			case r := <-done:
				t.Fatalf("%s ended before its request arrived: exit %d; stderr:\n%s", tt.name, r.code, r.stderr)
			}
			interrupts <- os.Interrupt
			r := <-done
			if r.code != 1 || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) || !strings.Contains(lines[0], context.Canceled.Error()) {
				t.Errorf("stderr = %q; want one line starting %q and saying %q", r.stderr, tt.want, context.Canceled)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("the server received %d requests, want 1", n)
			}
		})
	}
}

func TestEnviron(t *testing.T) {
	got := environ([]string{"A=1", "B=x=y", "C=", "broken"})
	want := map[string]string{"A": "1", "B": "x=y", "C": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environ (-want +got):\n%s", diff)
	}
}

// saveFile writes history to path as OpenAI JSON.
func saveFile(t *testing.T, path string, history []processor.Message) {
	t.Helper()
	var b bytes.Buffer
	if err := transcript.Save(&b, history); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelpSessionDefault checks that the help names the file sessions are
// stored in by default.
func TestHelpSessionDefault(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	want := "ABRIDGE_SESSION_DB (default: a SQLite file, " + filepath.Join(dir, "abridge", "sessions.db") + ")"
	for _, args := range [][]string{{"help"}, {"help", "sessions"}, {"chat", "--help"}} {
		r := runCLI(t, nil, "", args...)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("%s does not say %q:\n%s", args, want, r.stdout)
		}
	}
}
