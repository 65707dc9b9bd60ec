package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/skipnote"
)

// term drives abridge in real terminals: panes of a tmux server of the
// test's own, whose keys it sends and whose screens it reads.
type term struct {
	t    *testing.T
	sock string
	conf string
	env  []string // the environment of every pane's command
}

// newTerm starts nothing yet: the tmux server starts with the first pane.
// The test skips when tmux is not installed, except under CI=true, where
// it fails (.ci/run installs tmux).
func newTerm(t *testing.T, env map[string]string) *term {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no tmux on Windows")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed, and CI=true: the end-to-end terminal test must run in CI (.ci/run installs tmux)")
		}
		const msg = "tmux is not installed: skipping the end-to-end terminal tests (apt-get install tmux, or run .ci/run)"
		skipnote.Say("cmd/abridge: " + msg)
		t.Skip(msg)
	}
	dir := t.TempDir()
	x := &term{t: t, sock: filepath.Join(dir, "tmux.sock"), conf: filepath.Join(dir, "tmux.conf")}
	// Keep a pane once its command exits, to read its last screen.
	if err := os.WriteFile(x.conf, []byte("set -g remain-on-exit on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test binary runs main (see TestMain) with this environment and
	// nothing of the test's own.
	x.env = []string{runMainEnv + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"XDG_DATA_HOME=" + t.TempDir(), "TERM=screen", "LANG=C.UTF-8", "GOCOVERDIR=" + t.TempDir()}
	for k, v := range env {
		x.env = append(x.env, k+"="+v)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	return x
}

// tmux runs a tmux command on the test's server.
func (x *term) tmux(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.sock, "-f", x.conf}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start opens a pane called name running command.
func (x *term) start(name string, command ...string) {
	x.t.Helper()
	cmd := append(append([]string{"env", "-i"}, x.env...), command...)
	x.tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50", shellJoin(cmd))
}

// selfArgs is the command running abridge with args: the test binary,
// which runs main in a pane's environment.
func selfArgs(args ...string) []string { return append([]string{os.Args[0]}, args...) }

// target names the pane of session name and nothing else (a bare name
// may match a window's name in another session).
func target(name string) string { return "=" + name + ":" }

// send types text into the pane and presses Enter.
func (x *term) send(name, text string) {
	x.t.Helper()
	x.tmux("send-keys", "-t", target(name), "-l", text)
	x.tmux("send-keys", "-t", target(name), "Enter")
}

// screen returns what the pane shows, its scrollback included.
func (x *term) screen(name string) string {
	x.t.Helper()
	return x.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", target(name))
}

// waitFor waits until the pane shows text n times, and returns the
// screen. It fails the test after 30 seconds.
func (x *term) waitFor(name, text string, n int) string {
	x.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := x.screen(name)
		if strings.Count(s, text) >= n {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("pane %s does not show %q (%d times) after 30s; it shows:\n%s", name, text, n, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exitStatus waits for the pane's command to end and returns its exit
// status, or "" when tmux did not record it (it sometimes misses it when
// the process ends as its terminal closes).
func (x *term) exitStatus(name string) string {
	x.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := strings.Fields(x.tmux("display-message", "-p", "-t", target(name), "#{pane_dead} #{pane_dead_status}"))
		if len(out) > 0 && out[0] == "1" {
			if len(out) == 2 {
				return out[1]
			}
			const dead = "Pane is dead (status "
			if s := x.screen(name); strings.Contains(s, dead) {
				status, _, _ := strings.Cut(s[strings.Index(s, dead)+len(dead):], ",")
				return status
			}
			return ""
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("pane %s still runs after 30s; it shows:\n%s", name, x.screen(name))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestChatTerminal runs abridge chat in real terminals against a streaming
// fake OpenAI server: a turn answered, a server that never answers (the
// waiting line, then the request timeout), an interrupt (Ctrl-C) during a
// turn, /compact, and a second chat on the same session.
func TestChatTerminal(t *testing.T) {
	f := newFakeOpenAI(t)
	f.summary = "SUMMARY: the user greeted and waited."
	f.intercept = func(w http.ResponseWriter, r *http.Request, req chatRequest) bool {
		switch req.text(len(req.Messages) - 1) {
		case "hang", "slow": // accepted, never answered
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return true
		}
		return false
	}
	db := filepath.Join(t.TempDir(), "sessions.db")
	x := newTerm(t, map[string]string{"OPENAI_BASE_URL": f.srv.URL, "OPENAI_API_KEY": "test",
		"ABRIDGE_SESSION_DB": db, "ABRIDGE_REQUEST_TIMEOUT": "3s"})

	x.start("a", selfArgs("chat", "--session", "demo")...)
	x.waitFor("a", `new session "demo"`, 1)
	x.waitFor("a", "> ", 1)

	// A turn answered, streamed onto the terminal.
	x.send("a", padded("hello there")) // long enough that /compact gains
	x.waitFor("a", "reply to: hello there", 1)

	// A server that never answers: the waiting line, then the timeout.
	x.send("a", "hang")
	x.waitFor("a", "waiting for the model… ", 1)
	x.waitFor("a", "gives up after 3s", 1)
	s := x.waitFor("a", "abridge: model request 1: model provider: request timed out after 3s", 1)
	if strings.Contains(s, "waiting for the model") {
		t.Errorf("the waiting line is still shown after the timeout:\n%s", s)
	}

	// Ctrl-C while the model is waited for: the turn only is stopped.
	x.send("a", "slow")
	x.waitFor("a", "waiting for the model… ", 1)
	x.tmux("send-keys", "-t", target("a"), "C-c")
	x.waitFor("a", "abridge: turn interrupted", 1)
	x.send("a", padded("still there?"))
	x.waitFor("a", "reply to: still there?", 1)

	// /compact.
	x.send("a", "/compact")
	x.waitFor("a", "compacted 5 → ", 1)

	// A second chat on the session: each reloads what the other wrote.
	x.start("b", selfArgs("chat", "--session", "demo")...)
	x.waitFor("b", `resumed session "demo"`, 1)
	x.send("b", "from b")
	x.waitFor("b", "reply to: from b", 1)
	x.send("a", "from a")
	x.waitFor("a", "reply to: from a", 1)
	x.waitFor("a", `session "demo" was changed by another chat: reloaded it`, 1)

	for _, name := range []string{"a", "b"} {
		x.send(name, "/quit")
		if status := x.exitStatus(name); status != "0" && status != "" {
			t.Errorf("chat %s exited with %s; it shows:\n%s", name, status, x.screen(name))
		}
	}

	// What the server was sent: "from a" with b's turn before it, and no
	// prompt of a failed turn.
	var last chatRequest
	for _, r := range f.Requests() {
		if !r.summary() && r.text(len(r.Messages)-1) == "from a" {
			last = r
		}
	}
	if last.Messages == nil {
		t.Fatalf("no request for \"from a\"")
	}
	var texts []string
	for i, m := range last.Messages {
		if m.Role == "user" {
			texts = append(texts, last.text(i))
		}
	}
	for _, failed := range []string{"hang", "slow"} {
		if slices.Contains(texts, failed) {
			t.Errorf("the last request sends %q, the prompt of a failed turn: %q", failed, texts)
		}
	}
	if !slices.Contains(texts, "from b") {
		t.Errorf("the last request does not send b's turn: %q", texts)
	}
	sent, err := last.history()
	if err != nil {
		t.Fatal(err)
	}
	if err := processor.Validate(sent); err != nil {
		t.Errorf("the last request is invalid: %v", err)
	}

	// The session shows the failed turns as withdrawn, the /compact as a
	// compaction.
	r := runCLI(t, map[string]string{"ABRIDGE_SESSION_DB": db}, "", "sessions", "show", "demo")
	for _, w := range []string{
		"--- turn withdrawn (failed: model request 1: model provider: request timed out after 3s)",
		"--- turn withdrawn (interrupted)",
		"--- compaction 1: messages 1-2, 5-6 (4)",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("sessions show does not show %q:\n%s", w, r.stdout)
		}
	}
}

// TestCompactTerminal runs abridge compact and process in a terminal
// against a summarizer that takes its time: a line on the terminal shows
// the summary being written until it is done.
func TestCompactTerminal(t *testing.T) {
	f := newFakeOpenAI(t)
	release := make(chan struct{})
	f.intercept = func(w http.ResponseWriter, r *http.Request, req chatRequest) bool {
		if req.summary() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return false
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "history.json")
	var history []processor.Message
	for i := range 12 {
		history = append(history, processor.UserMessage(fmt.Sprintf("question %d%s", i, strings.Repeat(" with padding", 30))),
			processor.TextMessage(fmt.Sprintf("answer %d%s", i, strings.Repeat(" with padding", 30))))
	}
	history = append(history, processor.UserMessage("and now?"))
	saveFile(t, file, history)
	x := newTerm(t, map[string]string{"OPENAI_BASE_URL": f.srv.URL, "OPENAI_API_KEY": "test", "ABRIDGE_MAX_MESSAGES": "8"})
	for _, cmd := range [][]string{{"compact", file}, {"process", file}} {
		name := cmd[0]
		// stdout, the compacted history, goes nowhere; stderr is the
		// terminal.
		x.start(name, append([]string{"sh", "-c", `"$0" "$@" >/dev/null; echo "exit status $?"`}, selfArgs(cmd...)...)...)
		x.waitFor(name, "summarizing ", 1)
		x.waitFor(name, "… 1s", 1)
		release <- struct{}{}
		s := x.waitFor(name, "exit status ", 1)
		if !strings.Contains(s, "exit status 0") {
			t.Fatalf("%s failed; it shows:\n%s", name, s)
		}
		if strings.Contains(s, "summarizing ") && strings.Contains(s, "… ") {
			t.Errorf("%s: the waiting line is still shown:\n%s", name, s)
		}
	}
}

// shellJoin joins args with spaces, quoting those a shell would split.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?;&|<>()") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
