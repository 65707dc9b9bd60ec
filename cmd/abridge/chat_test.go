package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestChat(t *testing.T) {
	f := newFakeOpenAI(t)
	input := strings.Join([]string{
		"hello there",
		"what is a kiwi",
		"/history",
		"/usage",
		"/compact keep the greeting",
		"/history",
		"/bogus",
		"/quit",
		"this line is never read",
	}, "\n") + "\n"
	r := runCLI(t, f.env(), input, "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{
		"reply to: hello there\n", // the answer, streamed or not
		"user: hello there",       // /history before compacting
		"reply to: what is a kiwi\n",
		"turns: 2, requests: 2", // /usage
		"tokens: ",
		"history: 4 messages",
		"SUMMARY: the user is fixing", // /history after compacting
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout does not hold %q:\n%s", w, r.stdout)
		}
	}
	for _, w := range []string{"… summarizing 4 messages", "compacted 4 → 3 messages", "abridge: unknown command /bogus"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not hold %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "never read") {
		t.Errorf("chat went on after /quit:\n%s", r.stdout)
	}
	reqs := f.Requests()
	var summaries int
	for _, req := range reqs {
		if !req.summary() && !req.Stream {
			t.Errorf("a turn's request did not ask to stream")
		}
		if req.summary() {
			summaries++
			if last := req.text(len(req.Messages) - 1); !strings.Contains(last, "keep the greeting") {
				t.Errorf("the /compact summary request does not carry the focus:\n%s", last)
			}
		}
	}
	if len(reqs) != 3 || summaries != 1 {
		t.Errorf("the server received %d requests, %d of them summaries; want two turns and a summary", len(reqs), summaries)
	}
}

// TestChatWindow runs enough turns through a small window that it
// summarizes, and checks the status lines show it.
func TestChatWindow(t *testing.T) {
	f := newFakeOpenAI(t)
	var lines []string
	// Messages long enough that a summary is smaller than what it
	// replaces: the window never compacts into a bigger request.
	for i := range 6 {
		lines = append(lines, "message number "+string(rune('a'+i))+strings.Repeat(" with some padding", 60))
	}
	f.summary = "SUMMARY: short."
	r := runCLI(t, f.env("ABRIDGE_MAX_MESSAGES", "4"), strings.Join(lines, "\n"), "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "reply to: message number f") {
		t.Errorf("the last turn got no answer:\n%s", r.stdout)
	}
	for _, w := range []string{"… summarizing ", "compacted "} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not show %q:\n%s", w, r.stderr)
		}
	}
}

// TestChatOverflow has the server refuse long prompts as too long for its
// context window, with the window's own trigger off: the agent forces a
// compaction and the chat shows it.
func TestChatOverflow(t *testing.T) {
	f := newFakeOpenAI(t)
	f.summary = "SUMMARY: short."
	f.rejectOver = 6
	input := "one\ntwo\nthree\nfour\n"
	r := runCLI(t, f.env("ABRIDGE_MAX_MESSAGES", "0"), input, "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "reply to: four\n") {
		t.Errorf("the last turn got no answer:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "the prompt was too long: compacted 7 → ") {
		t.Errorf("stderr does not show the forced compaction:\n%s", r.stderr)
	}
}

// TestChatFailedTurn has the server fail: the chat reports each failed
// turn on one line and carries on.
func TestChatFailedTurn(t *testing.T) {
	f := newFakeOpenAI(t)
	f.fail = true
	r := runCLI(t, f.env(), "hello\n/usage\nagain\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "abridge: ") || !strings.Contains(lines[0], "401") {
		t.Errorf("stderr = %q; want one error line per failed turn", r.stderr)
	}
	if !strings.Contains(r.stdout, "turns: 0, requests: 0") {
		t.Errorf("/usage after a failed turn:\n%s", r.stdout)
	}
}

// TestChatSession runs two chats on one session: the second resumes the
// first, and the sessions command lists and shows it.
func TestChatSession(t *testing.T) {
	f := newFakeOpenAI(t)
	env := f.env("ABRIDGE_SESSION_DB", filepath.Join(t.TempDir(), "sessions.db"))

	r := runCLI(t, env, "", "sessions")
	if r.code != 0 || !strings.Contains(r.stdout, "no sessions yet") {
		t.Fatalf("sessions on an empty store: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, env, "remember the word kiwi\n/quit\n", "chat", "--session", "fruit")
	if r.code != 0 {
		t.Fatalf("first chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `new session "fruit"`) {
		t.Errorf("first chat does not say the session is new:\n%s", r.stderr)
	}

	r = runCLI(t, env, "/history\nand the word fig\n/compact\n/quit\n", "chat", "--session", "fruit")
	if r.code != 0 {
		t.Fatalf("second chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `resumed session "fruit": 2 messages`) {
		t.Errorf("second chat does not say it resumed:\n%s", r.stderr)
	}
	for _, w := range []string{"user: remember the word kiwi", "assistant: reply to: remember the word kiwi"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("/history of the resumed session does not show %q:\n%s", w, r.stdout)
		}
	}

	r = runCLI(t, env, "", "sessions")
	if r.code != 0 {
		t.Fatalf("sessions: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("sessions lists:\n%s\nwant a header and one session", r.stdout)
	}
	// name, all messages, working messages, compactions
	if got := strings.Fields(lines[1])[:4]; strings.Join(got, " ") != "fruit 4 3 1" {
		t.Errorf("session row = %q, want fruit 4 3 1 (4 messages, 3 working: system prompt, summary, acknowledgement; 1 compaction)", lines[1])
	}

	r = runCLI(t, env, "", "sessions", "show", "fruit")
	if r.code != 0 {
		t.Fatalf("sessions show: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{"remember the word kiwi", "and the word fig", "compaction 1: covered 1-4"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("sessions show does not show %q:\n%s", w, r.stdout)
		}
	}

	r = runCLI(t, env, "", "sessions", "show", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, `abridge: sessions show: no session "nope" (have: fruit)`) {
		t.Errorf("sessions show nope: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestChatInterrupt ends a chat waiting for input when its context is
// cancelled (what an interrupt does), without any input arriving.
func TestChatInterrupt(t *testing.T) {
	f := newFakeOpenAI(t)
	stdin, w := io.Pipe() // never written: the chat waits for input
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	code := make(chan int)
	go func() { code <- run(ctx, []string{"chat"}, stdin, &stdout, &stderr, f.env()) }()
	cancel()
	if got := <-code; got != 0 {
		t.Errorf("exit %d after an interrupt, want 0; stderr:\n%s", got, stderr.String())
	}
	if len(f.Requests()) != 0 {
		t.Errorf("the server received %d requests, want none", len(f.Requests()))
	}
}
