package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// liveChat is abridge chat running in-process, fed one line at a time.
type liveChat struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr syncBuffer
	done   chan int
}

// syncBuffer is a buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startChat(t *testing.T, env map[string]string, args ...string) *liveChat {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &liveChat{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan int, 1)}
	go func() {
		code := run(context.Background(), nil, append([]string{"chat"}, args...), inR, outW, &c.stderr, foreground(env))
		outW.Close()
		c.done <- code
	}()
	t.Cleanup(func() { inW.Close(); io.Copy(io.Discard, outR) })
	return c
}

// say sends a line and returns the line the chat prints for it: the
// answer, printed once the turn is over, or "" when the chat printed
// nothing before the next line's answer (a failed turn prints on stderr).
func (c *liveChat) say(line string) string {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("send %q: %v", line, err)
	}
	return c.answer(line)
}

// answer reads the line the chat prints for the prompt sent.
func (c *liveChat) answer(prompt string) string {
	c.t.Helper()
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := c.out.ReadString('\n')
		got <- read{line, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			c.t.Fatalf("answer to %q: %v; stderr:\n%s", prompt, r.err, c.stderr.String())
		}
		return strings.TrimSuffix(r.line, "\n")
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no answer to %q in 30s; stderr:\n%s", prompt, c.stderr.String())
		return ""
	}
}

// quit ends the chat and returns its exit code.
func (c *liveChat) quit() int {
	c.t.Helper()
	c.in.Close()
	select {
	case code := <-c.done:
		return code
	case <-time.After(30 * time.Second):
		c.t.Fatal("the chat did not end")
		return -1
	}
}

// errorLines returns the lines the chat printed on stderr as errors.
func (c *liveChat) errorLines() []string {
	var out []string
	for _, l := range strings.Split(c.stderr.String(), "\n") {
		if strings.HasPrefix(l, "abridge: ") {
			out = append(out, l)
		}
	}
	return out
}

// padded makes a prompt long enough that a summary is smaller than it.
func padded(s string) string { return s + strings.Repeat(" and some padding", 40) }

// turnRequests returns the turn requests (not summaries) the server got
// whose last message is prompt.
func turnRequests(f *fakeOpenAI, prompt string) []chatRequest {
	var out []chatRequest
	for _, r := range f.Requests() {
		if !r.summary() && r.text(len(r.Messages)-1) == prompt {
			out = append(out, r)
		}
	}
	return out
}

// userTexts returns the text of every user message of a request.
func userTexts(r chatRequest) []string {
	var out []string
	for i, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, strings.Fields(r.text(i))[0])
		}
	}
	return out
}

// TestChatSessionTwoChats runs two chats on one session, taking turns:
// each reloads the session the other wrote to before its next turn, says
// so, and sends a history that holds the other's turns. No turn fails.
func TestChatSessionTwoChats(t *testing.T) {
	f := newFakeOpenAI(t)
	f.summary = "SUMMARY: short."
	env := f.env("ABRIDGE_SESSION_DB", filepath.Join(t.TempDir(), "sessions.db"), "ABRIDGE_MAX_MESSAGES", "6")
	b := startChat(t, env, "--session", "demo")
	if got := b.say(padded("b1")); got != "reply to: "+padded("b1") {
		t.Fatalf("b1: %q", got)
	}
	a := startChat(t, env, "--session", "demo")
	for _, turn := range []struct {
		chat   *liveChat
		prompt string
		users  []string // the first word of each user message sent
	}{
		{a, "a1", []string{"b1", "a1"}},
		{b, "b2", []string{"b1", "a1", "b2"}}, // b reloads: a1 is in it
		{b, "b3", []string{"b1", "a1", "b2", "b3"}},
		{a, "a2", nil}, // a reloads; the window compacts
		{b, "b4", nil},
		{a, "a3", nil},
	} {
		if got := turn.chat.say(padded(turn.prompt)); got != "reply to: "+padded(turn.prompt) {
			t.Fatalf("%s: answer %q; stderr:\n%s", turn.prompt, got, turn.chat.stderr.String())
		}
		reqs := turnRequests(f, padded(turn.prompt))
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", turn.prompt, len(reqs))
		}
		sent, err := reqs[0].history()
		if err != nil {
			t.Fatal(err)
		}
		if err := processor.Validate(sent); err != nil {
			t.Errorf("%s: the request is invalid: %v", turn.prompt, err)
		}
		if turn.users != nil {
			if diff := cmp.Diff(turn.users, userTexts(reqs[0])); diff != "" {
				t.Errorf("%s: user messages sent (-want +got):\n%s", turn.prompt, diff)
			}
		}
	}
	for name, c := range map[string]*liveChat{"a": a, "b": b} {
		if code := c.quit(); code != 0 {
			t.Errorf("chat %s: exit %d", name, code)
		}
		if lines := c.errorLines(); len(lines) != 0 {
			t.Errorf("chat %s printed errors:\n%s", name, strings.Join(lines, "\n"))
		}
		if !strings.Contains(c.stderr.String(), `session "demo" was changed by another chat: reloaded it (`) {
			t.Errorf("chat %s does not say it reloaded the session:\n%s", name, c.stderr.String())
		}
	}
}

// TestChatSessionConflictDuringTurn has another chat write to the session
// while a turn's summary is being written: the turn cannot save its
// compaction, and the chat says so in one line, reloads the session, and
// takes the turn back, so that its prompt is not sent again, by this chat
// or by one that resumes the session later. (The other chat, which
// reloaded the session while the turn was under way, saw its prompt
// unanswered: two chats on one session share what they write.)
func TestChatSessionConflictDuringTurn(t *testing.T) {
	f := newFakeOpenAI(t)
	f.summary = "SUMMARY: short."
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	f.intercept = func(w http.ResponseWriter, r *http.Request, req chatRequest) bool {
		if !req.summary() {
			return false
		}
		first := false
		once.Do(func() { first = true })
		if first {
			held <- struct{}{}
			<-release
		}
		return false // answered as usual
	}
	env := f.env("ABRIDGE_SESSION_DB", filepath.Join(t.TempDir(), "sessions.db"), "ABRIDGE_MAX_MESSAGES", "4")
	b := startChat(t, env, "--session", "demo")
	for _, p := range []string{"b1", "b2", "b3", "b4"} {
		if got := b.say(padded(p)); got != "reply to: "+padded(p) {
			t.Fatalf("%s: %q", p, got)
		}
	}
	a := startChat(t, env, "--session", "demo")
	// b's fifth turn makes the window summarize; while it does, a turn
	// of a's is saved.
	go io.WriteString(b.in, padded("b5")+"\n")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatalf("b5's turn did not summarize; stderr:\n%s", b.stderr.String())
	}
	got := a.say(padded("a1"))
	close(release)
	if got != "reply to: "+padded("a1") {
		t.Fatalf("a1: %q; stderr:\n%s", got, a.stderr.String())
	}
	// b goes on with its next prompt.
	if got := b.say(padded("b6")); got != "reply to: "+padded("b6") {
		t.Fatalf("b6: %q; stderr:\n%s", got, b.stderr.String())
	}
	if code := b.quit(); code != 1 {
		t.Errorf("b: exit %d, want 1 (its input is not a terminal, and a turn failed)", code)
	}
	want := []string{`abridge: session "demo" was changed by another chat during this turn, so your message was not answered: send it again`,
		"abridge: chat: 1 of 6 turns failed"}
	if diff := cmp.Diff(want, b.errorLines()); diff != "" {
		t.Errorf("b's errors (-want +got):\n%s\nstderr:\n%s", diff, b.stderr.String())
	}
	if len(turnRequests(f, padded("b5"))) != 0 {
		t.Errorf("the model was asked to answer b5")
	}
	// Neither b's next turn nor a chat resuming the session sends b5.
	c := startChat(t, env, "--session", "demo")
	c.say(padded("c1"))
	c.quit()
	for _, prompt := range []string{"b6", "c1"} {
		reqs := turnRequests(f, padded(prompt))
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", prompt, len(reqs))
		}
		users := userTexts(reqs[0])
		if slices.Contains(users, "b5") || !slices.Contains(users, prompt) {
			t.Errorf("%s's request sends the user messages %v: want %s and not b5", prompt, users, prompt)
		}
	}
	a.quit()
}
