package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
)

// The agent crash helper is this test binary run again with these variables
// set: it runs one agent turn on the session of the store at the DSN,
// against the Chat Completions endpoint at the URL, with the session as the
// agent's store.
const (
	envAgentCrashDSN     = "ABRIDGE_SESSION_AGENT_CRASH_DSN"
	envAgentCrashSession = "ABRIDGE_SESSION_AGENT_CRASH_SESSION"
	envAgentCrashURL     = "ABRIDGE_SESSION_AGENT_CRASH_URL"
	envAgentCrashMode    = "ABRIDGE_SESSION_AGENT_CRASH_MODE"  // "run" (until killed) or "resume"
	envAgentCrashBlock   = "ABRIDGE_SESSION_AGENT_CRASH_BLOCK" // the echo call that blocks, 0 for none
)

// agentCrashTimeout bounds every wait of the agent crash test, so that a
// hang fails the test instead of blocking it.
const agentCrashTimeout = time.Minute

// TestAgentCrashHelper is the helper process of TestAgentCrash; it does
// nothing in a normal test run.
func TestAgentCrashHelper(t *testing.T) {
	dsn := os.Getenv(envAgentCrashDSN)
	if dsn == "" {
		t.Skip("helper process of TestAgentCrash: runs only when TestAgentCrash starts it")
	}
	block, err := strconv.Atoi(os.Getenv(envAgentCrashBlock))
	if err == nil {
		err = agentCrashHelper(dsn, os.Getenv(envAgentCrashSession), os.Getenv(envAgentCrashURL), os.Getenv(envAgentCrashMode), block)
	}
	exitHelper(err)
}

// agentCrashHelper runs one turn as a host would. In "run" mode the turn
// starts from the stored working history with the prompt "start"; the echo
// tool answers {"n":N} with "echo N", except for N == block, where it prints
// "tool started N" and waits for the end of its context (the parent kills
// the process first). In "resume" mode the host repairs the stored working
// history (printing "repaired F" with the number of fixes) and runs a turn
// with the prompt "resume".
func agentCrashHelper(dsn, name, url, mode string, block int) error {
	ctx, cancel := context.WithTimeout(context.Background(), agentCrashTimeout)
	defer cancel()
	st, err := Open(ctx, driver(dsn), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := st.Session(ctx, name)
	if err != nil {
		return err
	}
	w, err := s.Working(ctx)
	if err != nil {
		return err
	}
	prompt := "start"
	if mode == "resume" {
		prompt = "resume"
		var fixes []processor.Fix
		if w, fixes, err = s.Resume(ctx); err != nil {
			return err
		}
		fmt.Println("repaired", len(fixes))
	}
	echo := agent.Tool{
		Name:       "echo",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ N int }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			if a.N == block {
				fmt.Println("tool started", a.N)
				<-ctx.Done()
				return "", ctx.Err()
			}
			return fmt.Sprintf("echo %d", a.N), nil
		},
	}
	m := openai.New(openai.WithBaseURL(url), openai.WithAPIKey("test"), openai.WithMaxRetries(0))
	res, err := agent.New(m, agent.WithStore(s), agent.WithTools(echo)).Run(ctx, w, prompt)
	if err != nil {
		return err
	}
	fmt.Println("text", res.Text)
	return nil
}

// agentCrashServer is a Chat Completions endpoint. Under /run/ it answers
// request N with one call of echo with {"n":N}, except that from request
// killAt on (when killAt > 0) it reports the request on arrived and answers
// nothing until dead is closed. Under /resume/ it answers with the text
// "resumed". It records the messages of every request, by path prefix.
type agentCrashServer struct {
	*httptest.Server
	killAt  int
	arrived chan int
	dead    chan struct{}

	mu       sync.Mutex
	requests map[string][][]any
}

func newAgentCrashServer(t *testing.T, killAt int) *agentCrashServer {
	srv := &agentCrashServer{killAt: killAt, arrived: make(chan int, 1), dead: make(chan struct{}), requests: map[string][][]any{}}
	srv.Server = httptest.NewServer(http.HandlerFunc(srv.serve))
	t.Cleanup(srv.Close)
	return srv
}

func (srv *agentCrashServer) serve(w http.ResponseWriter, r *http.Request) {
	phase, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var body struct {
		Messages []any `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || rest != "chat/completions" || r.Method != http.MethodPost {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"bad request %s %s: %v"}}`, r.Method, r.URL.Path, err), http.StatusBadRequest)
		return
	}
	srv.mu.Lock()
	srv.requests[phase] = append(srv.requests[phase], body.Messages)
	n := len(srv.requests[phase])
	srv.mu.Unlock()

	var msg string
	switch {
	case phase == "resume":
		msg = `{"role":"assistant","content":"resumed"}`
	case srv.killAt > 0 && n >= srv.killAt:
		select {
		case srv.arrived <- n:
		default:
		}
		// The parent kills the client now: nothing is answered.
		select {
		case <-srv.dead:
		case <-r.Context().Done():
		case <-time.After(agentCrashTimeout):
		}
		http.Error(w, `{"error":{"message":"the client should be dead"}}`, http.StatusServiceUnavailable)
		return
	default:
		msg = fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"echo","arguments":"{\"n\":%d}"}}]}`, n, n)
	}
	finish := "stop"
	if strings.Contains(msg, "tool_calls") {
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"finish_reason":%q,"message":%s}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, finish, msg)
}

// recorded returns the messages of the requests received under phase.
func (srv *agentCrashServer) recorded(phase string) [][]any {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.requests[phase]
}

// runAgentHelper runs the helper in mode and returns its output lines. In
// "run" mode it kills the helper with SIGKILL as soon as the server reports
// the request it must not answer or the helper prints "tool started", and
// fails the test unless the helper died of that kill; in "resume" mode the
// helper must end by itself, saying "done".
func runAgentHelper(t *testing.T, srv *agentCrashServer, dsn, name, mode string, block int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentCrashTimeout)
	defer cancel()
	h := startHelper(ctx, t, "TestAgentCrashHelper",
		envAgentCrashDSN+"="+dsn, envAgentCrashSession+"="+name, envAgentCrashURL+"="+srv.URL+"/"+mode,
		envAgentCrashMode+"="+mode, envAgentCrashBlock+"="+strconv.Itoa(block))
	lineCh := h.lines
	var (
		lines        []string
		killed, done bool
	)
	kill := func() {
		if !killed {
			killed = true
			if err := h.kill(); err != nil {
				t.Errorf("kill the helper: %v", err)
			}
		}
	}
	arrived := srv.arrived
	if mode != "run" {
		arrived = nil
	}
	timeout := time.After(agentCrashTimeout)
	for lineCh != nil {
		select {
		case line, ok := <-lineCh:
			if !ok {
				lineCh = nil
				continue
			}
			lines = append(lines, line)
			switch {
			case strings.HasPrefix(line, "tool started ") && mode == "run":
				kill()
			case line == "done":
				done = true
			case strings.HasPrefix(line, "error"):
				t.Errorf("helper (%s): %s", mode, line)
			}
		case <-arrived:
			kill()
		case <-timeout:
			t.Errorf("helper (%s) still running after %v: killed", mode, agentCrashTimeout)
			kill()
			timeout = nil
		}
	}
	byKill, err := h.wait()
	if mode == "run" {
		close(srv.dead)
		if !killed || !byKill {
			t.Fatalf("helper was to be killed mid-turn; it ended with %v, printing %q", err, lines)
		}
	} else if err != nil || !done {
		t.Fatalf("helper (%s): %v, done=%v, printing %q", mode, err, done, lines)
	}
	return lines
}

// openAIMessages returns msgs as the messages of a Chat Completions request
// body, decoded as generic JSON.
func openAIMessages(t *testing.T, msgs []processor.Message) []any {
	t.Helper()
	params, err := openai.ToParams(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, params)
}

// decodeJSON marshals v and decodes it back as generic JSON.
func decodeJSON(t *testing.T, v any) []any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wireJSON decodes a JSON array written in the test.
func wireJSON(t *testing.T, s string) []any {
	t.Helper()
	var out []any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return out
}

func entryMessages(es []Entry) []processor.Message {
	out := make([]processor.Message, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

var agentCrashSessions atomic.Int64

// TestAgentCrash kills an agent's process with SIGKILL in the middle of a
// turn that persists to a session, checks that the session holds every
// message the process had received or produced, restarts the process to
// resume the session with a new turn, and checks that nothing was lost or
// altered and that the history the resumed turn sent was valid. The kill
// lands while the model request of one step is unanswered (the first, or
// one after three tool calls), or while a tool runs (so that its call is
// stored without a return, which the resuming host must repair).
func TestAgentCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	tests := []struct {
		name   string
		killAt int // the model request the process is killed waiting for; 0 for none
		block  int // the echo call the process is killed running; 0 for none
	}{
		{"waiting for the first response", 1, 0},
		{"waiting for the fourth response", 4, 0},
		{"running the third tool call", 0, 3},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dsn := newDSN(t)
				name := fmt.Sprintf("agent-crash-%d-%d", os.Getpid(), agentCrashSessions.Add(1))
				srv := newAgentCrashServer(t, tt.killAt)

				// The crash.
				runAgentHelper(t, srv, dsn, name, "run", tt.block)
				sent := srv.recorded("run")
				if len(sent) == 0 {
					t.Fatal("the helper sent no request")
				}
				// Everything received and produced before the kill: the
				// messages of the last request sent, and when a tool was
				// running, the response calling it.
				want := sent[len(sent)-1]
				var interrupted []any
				if tt.block > 0 {
					if len(sent) != tt.block {
						t.Fatalf("%d requests before the tool call %d ran; want %d", len(sent), tt.block, tt.block)
					}
					want = append(want[:len(want):len(want)], wireJSON(t, fmt.Sprintf(
						`[{"role":"assistant","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"echo","arguments":"{\"n\":%d}"}}]}]`,
						tt.block, tt.block))...)
					interrupted = wireJSON(t, fmt.Sprintf(`[{"role":"tool","tool_call_id":"call_%d","content":%q}]`, tt.block, processor.InterruptedContent))
				} else if len(sent) != tt.killAt {
					t.Fatalf("killed after %d requests; want %d", len(sent), tt.killAt)
				}
				st := openStore(t, dsn)
				s := openSession(t, st, name)
				pre := transcript(t, s)
				if diff := cmp.Diff(want, openAIMessages(t, entryMessages(pre))); diff != "" {
					t.Fatalf("transcript after the kill (-received and produced +stored):\n%s", diff)
				}
				if diff := cmp.Diff(entryMessages(pre), working(t, s), eq); diff != "" {
					t.Errorf("working history after the kill (-transcript +working):\n%s", diff)
				}

				// The resume.
				lines := runAgentHelper(t, srv, dsn, name, "resume", 0)
				wantFixes := 0
				if tt.block > 0 {
					wantFixes = 1
				}
				if !slices.Contains(lines, fmt.Sprintf("repaired %d", wantFixes)) || !slices.Contains(lines, "text resumed") {
					t.Errorf("resumed helper printed %q; want \"repaired %d\" and \"text resumed\"", lines, wantFixes)
				}
				resent := srv.recorded("resume")
				if len(resent) != 1 {
					t.Fatalf("the resumed turn made %d requests; want 1", len(resent))
				}
				// It sent everything stored before the kill, the answer
				// to an interrupted call, and its prompt.
				wantSent := append(append(openAIMessages(t, entryMessages(pre)), interrupted...), wireJSON(t, `[{"role":"user","content":"resume"}]`)...)
				if diff := cmp.Diff(wantSent, resent[0]); diff != "" {
					t.Errorf("the resumed turn's request (-want +sent):\n%s", diff)
				}
				// The transcript kept every message stored before the kill,
				// unchanged, and added the answer to the interrupted call (so
				// that it stays a valid sequence) and the resumed turn's.
				s = openSession(t, st, name)
				post := transcript(t, s)
				if len(post) < len(pre) {
					t.Fatalf("the transcript shrank from %d to %d messages", len(pre), len(post))
				}
				if diff := cmp.Diff(pre, post[:len(pre)], eq); diff != "" {
					t.Errorf("transcript before the kill, after the resume (-before +after):\n%s", diff)
				}
				if diff := cmp.Diff(append(interrupted, wireJSON(t, `[{"role":"user","content":"resume"},{"role":"assistant","content":"resumed"}]`)...),
					openAIMessages(t, entryMessages(post[len(pre):]))); diff != "" {
					t.Errorf("transcript of the resumed turn (-want +stored):\n%s", diff)
				}
				// The working history is what the resumed turn sent plus its
				// answer, and it is valid to continue from.
				w := working(t, s)
				if diff := cmp.Diff(append(resent[0][:len(resent[0]):len(resent[0])], wireJSON(t, `[{"role":"assistant","content":"resumed"}]`)...),
					openAIMessages(t, w)); diff != "" {
					t.Errorf("working history after the resume (-sent and received +stored):\n%s", diff)
				}
				if err := processor.Validate(append(w[:len(w):len(w)], processor.UserMessage("next"))); err != nil {
					t.Errorf("working history after the resume: %v", err)
				}
				if err := processor.Validate(append(entryMessages(post), processor.UserMessage("next"))); err != nil {
					t.Errorf("transcript after the resume: %v", err)
				}
				if n := len(compactions(t, s)); n != 0 {
					t.Errorf("%d compactions recorded; want none (the repair is in the transcript)", n)
				}
			})
		}
	})
}
