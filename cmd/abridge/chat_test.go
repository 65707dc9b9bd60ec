package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

func TestChat(t *testing.T) {
	f := newFakeOpenAI(t)
	// Prompts long enough that a summary is shorter than the turns.
	input := strings.Join([]string{
		padded("hello there"),
		padded("what is a kiwi"),
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
		"reply to: " + padded("hello there") + "\n", // the answer, streamed or not
		"user: hello there",                         // /history before compacting
		"reply to: " + padded("what is a kiwi") + "\n",
		"turns: 2, requests: 2", // /usage
		"tokens: ",
		"history: 5 messages",         // system prompt, two prompts, two answers
		"SUMMARY: the user is fixing", // /history after compacting
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout does not hold %q:\n%s", w, r.stdout)
		}
	}
	for _, w := range []string{"… summarizing 5 messages", "compacted 5 → 3 messages", "abridge: unknown command /bogus"} {
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
	if r.code != 1 {
		t.Errorf("exit %d, want 1: a piped chat whose turns failed fails; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "abridge: ") || !strings.Contains(lines[0], "401") ||
		lines[2] != "abridge: chat: 2 of 2 turns failed" {
		t.Errorf("stderr = %q; want one error line per failed turn, then how many failed", r.stderr)
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

	for _, args := range [][]string{{"sessions"}, {"sessions", "show", "fruit"}} {
		r := runCLI(t, env, "", args...)
		if !strings.Contains(r.stdout+r.stderr, "no session") {
			t.Errorf("%s on no store: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		// Listing creates nothing.
		if _, err := os.Stat(env["ABRIDGE_SESSION_DB"]); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s created the store: %v", args, err)
		}
	}
	r := runCLI(t, env, "", "sessions", "show", "fruit")
	if r.code != 1 || r.stderr != "abridge: sessions show: no session \"fruit\" (there are none yet)\n" {
		t.Errorf("sessions show on no store: exit %d, stderr %q", r.code, r.stderr)
	}

	r = runCLI(t, env, padded("remember the word kiwi")+"\n/quit\n", "chat", "--session", "fruit")
	if r.code != 0 {
		t.Fatalf("first chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `new session "fruit"`) {
		t.Errorf("first chat does not say the session is new:\n%s", r.stderr)
	}

	r = runCLI(t, env, "/history\n"+padded("and the word fig")+"\n/compact\n/quit\n", "chat", "--session", "fruit")
	if r.code != 0 {
		t.Fatalf("second chat: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `resumed session "fruit": 3 messages`) {
		t.Errorf("second chat does not say it resumed:\n%s", r.stderr)
	}
	for _, w := range []string{"  1  system: ", "  2  user: remember the word kiwi", "  3  assistant: reply to: remember the word kiwi"} {
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
	if got := strings.Fields(lines[1])[:5]; strings.Join(got, " ") != "fruit 4 3 1 0" {
		t.Errorf("session row = %q, want fruit 4 3 1 0 (4 messages, 3 working: system prompt, summary, acknowledgement; 1 compaction, no withdrawn turn)", lines[1])
	}

	r = runCLI(t, env, "", "sessions", "show", "fruit")
	if r.code != 0 {
		t.Fatalf("sessions show: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, w := range []string{`session "fruit": 4 messages saved and 3 added by compactions, 3 in the working history; 1 compaction, 0 withdrawn turns`,
		"remember the word kiwi", "and the word fig", "compaction 1: messages 1-4 (4) replaced by messages 5-7 (3)"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("sessions show does not show %q:\n%s", w, r.stdout)
		}
	}

	r = runCLI(t, env, "", "sessions", "show", "nope")
	if r.code != 1 || !strings.Contains(r.stderr, `abridge: sessions show: no session "nope" (have: fruit)`) {
		t.Errorf("sessions show nope: exit %d, stderr %q", r.code, r.stderr)
	}
}

// chatStops are the ways to stop a chat: an interrupt, sent on an
// unbuffered channel (the send returns once the chat has taken it), or the
// end of its context (what SIGTERM does).
var chatStops = []struct {
	name string
	stop func(cancel context.CancelFunc, interrupts chan<- os.Signal)
}{
	{"interrupt", func(_ context.CancelFunc, interrupts chan<- os.Signal) { interrupts <- os.Interrupt }},
	{"terminate", func(cancel context.CancelFunc, _ chan<- os.Signal) { cancel() }},
}

// TestChatInterrupt ends a chat waiting for input with an interrupt, or
// with the end of its context (what SIGTERM does), without any input
// arriving: the chat leaves with exit code 0 and sends nothing.
func TestChatInterrupt(t *testing.T) {
	for _, tt := range chatStops {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			stdin, w := io.Pipe() // never written: the chat waits for input
			defer w.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interrupts := make(chan os.Signal)
			done := startCLI(ctx, interrupts, f.env(), stdin, "chat")
			tt.stop(cancel, interrupts)
			r := <-done
			if r.code != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
			}
			if r.stdout != "" || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q; want nothing", r.stdout, r.stderr)
			}
			if len(f.Requests()) != 0 {
				t.Errorf("the server received %d requests, want none", len(f.Requests()))
			}
		})
	}
}

// TestChatInterruptWhileOpening interrupts a chat, or ends its context,
// while it opens its session on a PostgreSQL server that never answers:
// the chat gives up at once and fails on one line.
func TestChatInterruptWhileOpening(t *testing.T) {
	for _, tt := range chatStops {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			// A server that takes connections and never says a word.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			connected := make(chan net.Conn, 1)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close()
					select {
					case connected <- c:
					default:
					}
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interrupts := make(chan os.Signal)
			dsn := "postgres://abridge@" + ln.Addr().String() + "/abridge?sslmode=disable"
			done := startCLI(ctx, interrupts, f.env("ABRIDGE_SESSION_DB", dsn), strings.NewReader("hello\n"), "chat", "--session", "s")
			select {
			case <-connected:
			case r := <-done:
				t.Fatalf("chat ended before it connected: exit %d; stderr:\n%s", r.code, r.stderr)
			}
			tt.stop(cancel, interrupts)
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				ln.Close()
				t.Fatalf("chat still opening its session 10s after it was stopped")
			}
			if r.code != 1 || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "abridge: chat: ABRIDGE_SESSION_DB: open session store: ") {
				t.Errorf("stderr = %q; want one line saying the session store was not opened", r.stderr)
			}
			if len(f.Requests()) != 0 {
				t.Errorf("the server received %d requests, want none", len(f.Requests()))
			}
		})
	}
}

// TestChatTurnFails has the third of four inputs fail: a turn interrupted
// while the model answers or refused by the provider, or a /compact
// interrupted while the summary is written, with and without a session.
// The chat says so on one line and goes on with the fourth prompt from the
// conversation as it was before; the session stores that conversation too,
// with a failed turn's prompt kept in its transcript only.
func TestChatTurnFails(t *testing.T) {
	tests := []struct {
		name      string
		third     string // the input that fails
		interrupt bool   // else the server refuses its request
		session   bool
		note      string   // the chat's one line on stderr
		compacted []string // the stored transcript's messages out of the working history
		record    string   // how sessions show records the failed turn
	}{
		{"interrupted", "three", true, false, "abridge: turn interrupted", nil, ""},
		{"interrupted with a session", "three", true, true, "abridge: turn interrupted", []string{"three"},
			"\n  --- turn withdrawn (interrupted): message 5 taken out of the working history\n"},
		{"refused with a session", "three", false, true,
			"abridge: model request 1: model provider status 401 (invalid_api_key): Incorrect API key provided.", []string{"three"},
			"\n  --- turn withdrawn (failed: model request 1: model provider status 401 (invalid_api_key): Incorrect API key provided.): message 5 taken out of the working history\n"},
		{"compact interrupted with a session", "/compact", true, true, "abridge: /compact interrupted", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI(t)
			held := make(chan struct{})
			f.intercept = func(w http.ResponseWriter, r *http.Request, req chatRequest) bool {
				if tt.third == "/compact" && !req.summary() ||
					tt.third != "/compact" && (req.summary() || req.text(len(req.Messages)-1) != tt.third) {
					return false
				}
				if !tt.interrupt {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`)
					return true
				}
				// Hold the request until the client gives it up.
				held <- struct{}{}
				<-r.Context().Done()
				return true
			}
			db := filepath.Join(t.TempDir(), "sessions.db")
			env := f.env("ABRIDGE_SESSION_DB", db)
			args := []string{"chat"}
			if tt.session {
				args = append(args, "--session", "fruit")
			}
			interrupts := make(chan os.Signal)
			input := "one\ntwo\n" + tt.third + "\nfour\n"
			done := startCLI(context.Background(), interrupts, env, strings.NewReader(input), args...)
			var r result
			if tt.interrupt {
				select {
				case <-held:
				case r = <-done:
					t.Fatalf("the chat ended before the request of %q arrived: exit %d; stderr:\n%s", tt.third, r.code, r.stderr)
				}
				// Taken by the turn or /compact: the chat reads no input
				// while one runs.
				interrupts <- os.Interrupt
			}
			r = <-done
			wantCode, wantNotes := 0, []string{tt.note}
			if !tt.interrupt { // a failed turn, not one the user stopped
				wantCode, wantNotes = 1, append(wantNotes, "abridge: chat: 1 of 4 turns failed")
			}
			if r.code != wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, wantCode, r.stderr)
			}
			if !strings.Contains(r.stdout, "reply to: two\n") || !strings.Contains(r.stdout, "reply to: four\n") || strings.Contains(r.stdout, "reply to: three") {
				t.Errorf("stdout holds the wrong answers:\n%s", r.stdout)
			}
			var notes []string
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(l, "abridge: ") {
					notes = append(notes, l)
				}
			}
			if diff := cmp.Diff(wantNotes, notes); diff != "" {
				t.Errorf("lines from the chat on stderr (-want +got):\n%s", diff)
			}

			// What the last turn sent: the first two turns, then the
			// fourth prompt, with nothing of the third input.
			var turns []chatRequest
			for _, req := range f.Requests() {
				if !req.summary() {
					turns = append(turns, req)
				}
			}
			wantTurns := 4
			if strings.HasPrefix(tt.third, "/") {
				wantTurns = 3
			}
			if len(turns) != wantTurns {
				t.Fatalf("the server received %d turn requests, want %d", len(turns), wantTurns)
			}
			last := turns[len(turns)-1]
			want := []string{"system: " + systemPrompt, "user: one", "assistant: reply to: one",
				"user: two", "assistant: reply to: two", "user: four"}
			if diff := cmp.Diff(want, last.roles()); diff != "" {
				t.Errorf("last request (-want +got):\n%s", diff)
			}
			sent, err := last.history()
			if err != nil {
				t.Fatal(err)
			}
			if err := processor.Validate(sent); err != nil {
				t.Errorf("last request: %v", err)
			}
			if !tt.session {
				return
			}

			// The stored conversation is the one the chat went on with,
			// the second prompt kept in the transcript only.
			store, err := session.Open(context.Background(), sqlite.Driver{Path: db}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			sess, err := store.Session(context.Background(), "fruit")
			if err != nil {
				t.Fatal(err)
			}
			working, err := sess.Working(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := processor.Validate(append(working, processor.UserMessage("five"))); err != nil {
				t.Errorf("the stored working history does not take a next prompt: %v", err)
			}
			var stored strings.Builder
			writeHistory(&stored, working)
			wantStored := "  1  system: " + systemPrompt + "\n  2  user: one\n  3  assistant: reply to: one\n" +
				"  4  user: two\n  5  assistant: reply to: two\n  6  user: four\n  7  assistant: reply to: four\n"
			if diff := cmp.Diff(wantStored, stored.String()); diff != "" {
				t.Errorf("stored working history (-want +got):\n%s", diff)
			}
			transcript, err := sess.Transcript(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var compacted []string
			for _, e := range transcript {
				if e.Compacted {
					compacted = append(compacted, e.Message.Text())
				}
			}
			if diff := cmp.Diff(tt.compacted, compacted); diff != "" {
				t.Errorf("transcript messages out of the working history (-want +got):\n%s", diff)
			}
			// A failed turn is shown as what it is, not as a compaction.
			r = runCLI(t, env, "", "sessions", "show", "fruit")
			if !strings.Contains(r.stdout, tt.record) || strings.Contains(r.stdout, "--- compaction") {
				t.Errorf("sessions show records the turn as\n%s\nwant a line %q and no compaction", r.stdout, tt.record)
			}
			want1 := "1 withdrawn turn"
			if tt.record == "" {
				want1 = "0 withdrawn turns"
			}
			if !strings.Contains(r.stdout, "0 compactions, "+want1) {
				t.Errorf("sessions show counts\n%s\nwant 0 compactions, %s", r.stdout, want1)
			}
		})
	}
}

// TestChatResumesInterruptedSession resumes a session that a killed chat
// left with a tool call nobody answered: the chat says so, answers the
// call as interrupted, and sends a valid history.
func TestChatResumesInterruptedSession(t *testing.T) {
	f := newFakeOpenAI(t)
	db := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	st, err := session.Open(ctx, sqlite.Driver{Path: db}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.Session(ctx, "killed")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx,
		processor.UserMessage("run the tests"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"cmd":"go test ./..."}`}),
	); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, f.env("ABRIDGE_SESSION_DB", db), "what happened?\n", "chat", "--session", "killed")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if want := `session "killed" was left in the middle of a turn: 1 tool call answered as interrupted`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "tool", "user"}, roles); diff != "" {
		t.Errorf("roles of the request (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(reqs[0].body), processor.InterruptedContent) {
		t.Errorf("the request does not answer the call as interrupted:\n%s", reqs[0].body)
	}
}

func TestDescribeFixes(t *testing.T) {
	answered := processor.Fix{Action: processor.ActionAnsweredCall}
	dropped := processor.Fix{Action: processor.ActionDroppedOrphan}
	empty := processor.Fix{Action: processor.ActionDroppedRequest}
	tests := []struct {
		fixes []processor.Fix
		want  string
	}{
		{[]processor.Fix{answered}, "1 tool call answered as interrupted"},
		{[]processor.Fix{answered, answered, dropped}, "2 tool calls answered as interrupted, 1 stray tool result dropped"},
		{[]processor.Fix{dropped, dropped, empty}, "2 stray tool results dropped"},
		{[]processor.Fix{empty}, "repaired"},
	}
	for _, tt := range tests {
		if got := describeFixes(tt.fixes); got != tt.want {
			t.Errorf("describeFixes(%v) = %q, want %q", tt.fixes, got, tt.want)
		}
	}
}

// TestChatHangingServer has the server accept a turn's request and never
// answer: the turn fails once ABRIDGE_REQUEST_TIMEOUT has passed, saying
// so, and the chat goes on. With stdout not a terminal, no waiting line is
// drawn.
func TestChatHangingServer(t *testing.T) {
	f := newFakeOpenAI(t)
	f.intercept = func(w http.ResponseWriter, r *http.Request, req chatRequest) bool {
		if req.text(len(req.Messages)-1) != "hang" {
			return false
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		return true
	}
	r := runCLI(t, f.env("ABRIDGE_REQUEST_TIMEOUT", "500ms"), "hang\nafter\n", "chat")
	if r.code != 1 {
		t.Errorf("exit %d, want 1 (a turn of a piped chat failed); stderr:\n%s", r.code, r.stderr)
	}
	if want := "abridge: model request 1: model provider: request timed out after 500ms\nabridge: chat: 1 of 2 turns failed\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if r.stdout != "reply to: after\n" {
		t.Errorf("stdout = %q, want only the answer to the second prompt", r.stdout)
	}
}

// TestChatLongLine sends a line longer than the chat takes: it says so
// and answers the lines after it.
func TestChatLongLine(t *testing.T) {
	f := newFakeOpenAI(t)
	input := "hello\n" + strings.Repeat("x", maxInputLine+1) + "\r\nafter\nlast line without a newline"
	r := runCLI(t, f.env(), input, "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if want := "abridge: input line 2 is longer than 16 MiB: not sent; the chat goes on with the next line\n"; r.stderr != want {
		t.Errorf("stderr = %q, want %q", r.stderr, want)
	}
	if want := "reply to: hello\nreply to: after\nreply to: last line without a newline\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		input string
		max   int
		want  []inputLine // n unused
	}{
		{"a\nbb\r\n\nccc", 3, []inputLine{{text: "a"}, {text: "bb"}, {text: ""}, {text: "ccc"}}},
		{"abcd\nab\n", 3, []inputLine{{tooLong: true}, {text: "ab"}}},
		{"abc\r\n", 3, []inputLine{{text: "abc"}}},
		{"abcd", 3, []inputLine{{tooLong: true}}},
		{"", 3, nil},
		// Longer than the reader's buffer of 16 bytes.
		{"0123456789abcdefghij\nx", 20, []inputLine{{text: "0123456789abcdefghij"}, {text: "x"}}},
		{"0123456789abcdefghijk\r\nx", 20, []inputLine{{tooLong: true}, {text: "x"}}},
		{strings.Repeat("y", 100) + "\nx\n", 20, []inputLine{{tooLong: true}, {text: "x"}}},
	}
	for _, tt := range tests {
		r := bufio.NewReaderSize(strings.NewReader(tt.input), 16)
		var got []inputLine
		for {
			text, tooLong, err := readLine(r, tt.max)
			if err == nil || text != "" || tooLong {
				got = append(got, inputLine{text: text, tooLong: tooLong})
			}
			if err != nil {
				break
			}
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(inputLine{})); diff != "" {
			t.Errorf("readLine(%q) (-want +got):\n%s", tt.input, diff)
		}
	}
}

// TestChatWindowEventsOnce runs a chat whose window compacts during its
// turns, the summary failing: each of the window's events is told once, as
// the chat's own line (no log line repeats it), the start first.
func TestChatWindowEventsOnce(t *testing.T) {
	f := newFakeOpenAI(t)
	f.intercept = func(w http.ResponseWriter, _ *http.Request, req chatRequest) bool {
		if !req.summary() {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"summaries are refused","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return true
	}
	var input strings.Builder
	for i := range 6 {
		input.WriteString(padded(fmt.Sprintf("message %d", i)) + "\n")
	}
	r := runCLI(t, f.env("ABRIDGE_MAX_MESSAGES", "6", "ABRIDGE_LOG_LEVEL", "warn"), input.String()+"/quit\n", "chat")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// Each compaction: its start, its failure, its end, one line each.
	n := strings.Count(r.stderr, "… summarizing ")
	if n == 0 || strings.Count(r.stderr, "summary failed (") != n || strings.Count(r.stderr, "compacted ") != n {
		t.Errorf("not one line per event of each compaction:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "WARN") || strings.Contains(r.stderr, "window: summary not used") {
		t.Errorf("a log line repeats the window's event:\n%s", r.stderr)
	}
	if strings.Index(r.stderr, "… summarizing") > strings.Index(r.stderr, "summary failed") {
		t.Errorf("the failure is told before the start:\n%s", r.stderr)
	}
}
