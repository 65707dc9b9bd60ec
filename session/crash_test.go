package session

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/abridge-go/abridge/processor"
)

// The crash helper is this test binary run again with these variables set:
// it appends to the session "crash" of the store at the DSN, printing
// "ack N" once the message with serial N is stored.
const (
	envCrashDSN  = "ABRIDGE_SESSION_CRASH_DSN"
	envCrashMode = "ABRIDGE_SESSION_CRASH_MODE" // "run" (until killed) or "resume"
)

// crashMessage returns the message of serial k. Serials go in cycles of
// four: a user prompt, a tool call, its return and a closing text; the
// return and the text are appended together, in one Append.
func crashMessage(k int) processor.Message {
	id := "c" + strconv.Itoa(k-k%4+1)
	switch k % 4 {
	case 0:
		return processor.UserMessage(fmt.Sprintf("u %d", k))
	case 1:
		return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "echo", Args: fmt.Sprintf(`{"k":%d}`, k)})
	case 2:
		return processor.NewRequest(processor.ToolReturn{ToolName: "echo", ToolCallID: id, Content: fmt.Sprintf("r %d", k)})
	}
	return processor.TextMessage(fmt.Sprintf("t %d", k))
}

// crashSerial is the serial of a message crashMessage made.
func crashSerial(m processor.Message) (int, bool) {
	var k int
	var s string
	switch p := m.Parts[0].(type) {
	case processor.UserPrompt:
		s = p.Content
	case processor.ToolCall:
		if _, err := fmt.Sscanf(p.Args, `{"k":%d}`, &k); err != nil {
			return 0, false
		}
		return k, true
	case processor.ToolReturn:
		s = p.Content
	case processor.Text:
		s = p.Content
	default:
		return 0, false
	}
	if len(s) < 3 {
		return 0, false
	}
	k, err := strconv.Atoi(s[2:])
	return k, err == nil
}

// TestCrashHelper is the helper process of TestCrash; it does nothing in a
// normal test run.
func TestCrashHelper(t *testing.T) {
	dsn := os.Getenv(envCrashDSN)
	if dsn == "" {
		t.Skip("helper process of TestCrash: runs only when TestCrash starts it")
	}
	exitHelper(crashHelper(dsn, os.Getenv(envCrashMode)))
}

func crashHelper(dsn, mode string) error {
	ctx := context.Background()
	st, err := Open(ctx, driver(dsn), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := st.Session(ctx, "crash")
	if err != nil {
		return err
	}
	start, end := 0, 100000 // "run" goes on until killed (the end is a backstop)
	if mode == "resume" {
		// A host resuming: repair what the crash left, record that, and
		// go on from the next cycle.
		w, err := s.Working(ctx)
		if err != nil {
			return err
		}
		if repaired, fixes := processor.RepairHistory(w); len(fixes) > 0 {
			if err := s.Replace(ctx, repaired); err != nil {
				return err
			}
		}
		tr, err := s.Transcript(ctx)
		if err != nil {
			return err
		}
		last, _ := crashSerial(tr[len(tr)-1].Message)
		start = (last + 4) / 4 * 4
		end = start + 8
	}
	for k := start; k < end; k++ {
		msgs := []processor.Message{crashMessage(k)}
		if k%4 == 2 {
			msgs = append(msgs, crashMessage(k+1))
			k++
		}
		if err := s.Append(ctx, msgs...); err != nil {
			return err
		}
		fmt.Println("ack", k)
		if k%12 == 11 {
			// Every third cycle, compact: a marker, then the last cycle.
			w, err := s.Working(ctx)
			if err != nil {
				return err
			}
			next := append([]processor.Message{processor.UserMessage(fmt.Sprintf("marker after %d", k))}, w[len(w)-4:]...)
			if err := s.Replace(ctx, next); err != nil {
				return err
			}
		}
	}
	return nil
}

// runHelper starts the helper in mode and returns the highest serial it
// acknowledged. With killAfter > 0 it kills the helper with SIGKILL as soon
// as that many acknowledgements arrived.
func runHelper(t *testing.T, dsn, mode string, killAfter int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := startHelper(ctx, t, "TestCrashHelper", envCrashDSN+"="+dsn, envCrashMode+"="+mode)
	acked, acks, done := -1, 0, false
	for line := range h.lines {
		switch {
		case strings.HasPrefix(line, "ack "):
			k, err := strconv.Atoi(line[4:])
			if err != nil {
				t.Fatalf("helper said %q", line)
			}
			acked, acks = k, acks+1
			if acks == killAfter {
				if err := h.kill(); err != nil {
					t.Fatal(err)
				}
			}
		case line == "done":
			done = true
		case strings.HasPrefix(line, "error"):
			t.Errorf("helper: %s", line)
		}
	}
	killed, err := h.wait()
	if killAfter > 0 {
		if !killed {
			t.Fatalf("helper was to be killed after %d acknowledgements; it ended with %v after %d", killAfter, err, acks)
		}
	} else if err != nil || !done {
		t.Fatalf("helper (%s): %v, done=%v", mode, err, done)
	}
	return acked
}

// checkCrashSession checks the session after a crash: the transcript holds
// the serials 0..last, then from..to, each once and in order, with every
// acknowledged one; a return never stored without its closing text; every
// message in the working history or compacted; and the working history,
// repaired, is valid.
func checkCrashSession(t *testing.T, s *Session, acked int, runs [][2]int) (last int) {
	t.Helper()
	var want []int
	for _, r := range runs {
		for k := r[0]; k <= r[1]; k++ {
			want = append(want, k)
		}
	}
	tr := transcript(t, s)
	var got []int
	for _, e := range tr {
		k, ok := crashSerial(e.Message)
		if !ok {
			t.Fatalf("seq %d: not a helper message: %+v", e.Seq, e.Message)
		}
		got = append(got, k)
	}
	if len(got) == 0 {
		t.Fatal("nothing stored")
	}
	last = got[len(got)-1]
	if runs[len(runs)-1][1] < 0 { // the last run's end is what was stored
		want = append(want[:len(want):len(want)], seqRange(runs[len(runs)-1][0], last)...)
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("transcript serials\n got %v\nwant %v", got, want)
	}
	if last < acked {
		t.Errorf("acknowledged serial %d is lost: the transcript ends at %d", acked, last)
	}
	if last%4 == 2 {
		t.Errorf("the transcript ends with the tool return %d without the text appended with it", last)
	}
	inWorking := map[int64]bool{}
	for _, seq := range workingSeqs(t, s.st, s) {
		inWorking[seq] = true
	}
	for _, e := range tr {
		if e.Compacted == inWorking[e.Seq] {
			t.Errorf("seq %d: compacted %v, in the working history %v", e.Seq, e.Compacted, inWorking[e.Seq])
		}
	}
	w := working(t, s)
	repaired, _ := processor.RepairHistory(w)
	if err := processor.Validate(append(repaired[:len(repaired):len(repaired)], processor.UserMessage("next"))); err != nil {
		t.Errorf("the working history, repaired, is not valid: %v", err)
	}
	return last
}

func seqRange(from, to int) []int {
	var out []int
	for k := from; k <= to; k++ {
		out = append(out, k)
	}
	return out
}

// TestCrash kills a process with SIGKILL while it appends to a session
// (and compacts it), checks what survived, resumes the session in a new
// process, and checks again. The kill lands right after an acknowledgement,
// while the next write is under way; the kill points leave the transcript
// ending with each kind of message of a cycle (the last one also interrupts
// a compaction).
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts helper processes")
	}
	tests := []struct {
		name      string
		killAfter int // acknowledgements; each cycle of 4 serials has 3
	}{
		{"after a user prompt", 43},
		{"after a tool call", 44},
		{"after a closing text, compacting", 45},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dsn := newDSN(t)
				acked := runHelper(t, dsn, "run", tt.killAfter)
				st := openStore(t, dsn)
				last := checkCrashSession(t, openSession(t, st, "crash"), acked, [][2]int{{0, -1}})
				t.Logf("killed after acknowledging serial %d; the transcript ends at serial %d (%s)",
					acked, last, []string{"user prompt", "tool call", "tool return", "text"}[last%4])

				resumedFrom := (last + 4) / 4 * 4
				acked = runHelper(t, dsn, "resume", 0)
				s := openSession(t, st, "crash")
				checkCrashSession(t, s, acked, [][2]int{{0, last}, {resumedFrom, resumedFrom + 7}})
				// After the resume the stored working history is valid as it is.
				w := working(t, s)
				if err := processor.Validate(append(w, processor.UserMessage("next"))); err != nil {
					t.Errorf("working history after the resume: %v", err)
				}
				if last%4 == 1 && !repairRecorded(compactions(t, s)) {
					t.Errorf("the repair of the dangling call %d is not recorded", last)
				}
			})
		}
	})
}

// repairRecorded reports whether a compaction inserted an interrupted-call
// return.
func repairRecorded(comps []Compaction) bool {
	for _, c := range comps {
		for _, e := range c.Inserted {
			if r, ok := e.Message.Parts[0].(processor.ToolReturn); ok && r.Content == processor.InterruptedContent {
				return true
			}
		}
	}
	return false
}
