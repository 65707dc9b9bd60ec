package window

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// counting wraps a Summarizer and counts the messages sent to it, and how
// many distinct ones.
type counting struct {
	inner summarizer.Summarizer
	mu    sync.Mutex
	sent  int
	seen  map[string]bool
	calls int
}

func (c *counting) Summarize(ctx context.Context, ms []processor.Message, previous, focus string) (string, error) {
	c.mu.Lock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.calls++
	c.sent += len(ms)
	for _, m := range ms {
		// Messages of a transcript are told apart by their content and
		// position-bearing IDs; identical repeats count once, which only
		// makes the bound stricter.
		c.seen[llm.Render([]processor.Message{m}, 0)] = true
	}
	c.mu.Unlock()
	return c.inner.Summarize(ctx, ms, previous, focus)
}

// requestPoints returns the indexes of the requests a model was sent: the
// last request before each response, and the final message when it is a
// request.
func requestPoints(h []processor.Message) []int {
	var out []int
	for i, m := range h {
		if m.Kind != processor.Request {
			continue
		}
		if i+1 == len(h) || h[i+1].Kind == processor.Response {
			out = append(out, i)
		}
	}
	return out
}

type replayResult struct {
	requests, compactions int
}

// replay sends the transcript to w request by request, as an agent would:
// with full=false it stores each processed history and appends to it (the
// agent's way); with full=true it keeps the full history and runs the
// window on it before every request. It checks every output and the
// stability of outputs between compactions.
func replay(t *testing.T, w *Window, ev *events, msgs []processor.Message, full bool, contextWindow int) replayResult {
	t.Helper()
	var res replayResult
	var stored, prev []processor.Message
	next := 0
	for _, i := range requestPoints(msgs) {
		var h []processor.Message
		if full {
			h = msgs[:i+1]
		} else {
			h = append(append([]processor.Message(nil), stored...), msgs[next:i+1]...)
		}
		before := len(ev.types())
		out, err := w.Process(context.Background(), h)
		if err != nil {
			t.Fatalf("request at message %d: %v", i, err)
		}
		if err := processor.Validate(out); err != nil {
			t.Fatalf("request at message %d: invalid output: %v", i, err)
		}
		if !processor.Equal(out[len(out)-1], msgs[i]) {
			t.Fatalf("request at message %d: last request altered", i)
		}
		if contextWindow > 0 {
			// The head and the last 4 messages are never compacted: only
			// what exceeds the window beyond them is the window's fault.
			kept := processor.ContentTokens(out[:w.split(out, false).head]) + processor.ContentTokens(out[max(0, len(out)-4):])
			if got := processor.EstimateTokens(out); got > contextWindow+kept {
				t.Errorf("request at message %d: %d estimated tokens, over the context window %d plus the %d tokens of head and last messages", i, got, contextWindow, kept)
			}
		}
		res.requests++
		compacted := len(ev.types()) > before
		if compacted {
			res.compactions++
		} else if prev != nil {
			if len(out) < len(prev) {
				t.Fatalf("request at message %d: output shrank from %d to %d messages without a compaction", i, len(prev), len(out))
			}
			if err := processortest.Diff(prev, out[:len(prev)]); err != nil {
				t.Fatalf("request at message %d: output changed without a compaction: %v", i, err)
			}
		}
		prev = out
		if !full {
			stored = append([]processor.Message(nil), out...)
			if i+1 < len(msgs) {
				stored = append(stored, msgs[i+1])
			}
		}
		next = i + 2
	}
	return res
}

// replaySubset is how many of the shared transcripts (the longest) are
// replayed under the race detector or in -short mode.
const replaySubset = 3

// replayFiles returns the shared transcripts to replay: all of them, or,
// under the race detector or in -short mode, the replaySubset longest (by
// size), which keeps the run proportionate while still replaying the
// conversations that compact the most.
func replayFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !raceBuild && !testing.Short() {
		return files
	}
	size := func(f string) int64 {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	slices.SortFunc(files, func(a, b string) int { return cmp.Compare(size(b), size(a)) })
	files = files[:min(replaySubset, len(files))]
	t.Logf("race detector or -short: replaying the %d longest shared transcripts only", len(files))
	return files
}

// TestReplayCost replays real transcripts in both modes and checks that
// each message is summarized about once, that outputs are stable between
// compactions, and that every request is valid.
func TestReplayCost(t *testing.T) {
	type set struct {
		name  string
		files []string
		max   int
		ctx   int
	}
	sets := []set{{"count", transcripts.Shipped(t), 6, 0}}
	if dir, ok := transcripts.SharedDir(); ok {
		files := replayFiles(t, dir)
		sets = append(sets, set{"count", files, 0, 0}, set{"tokens", files, -1, 20000})
	} else {
		t.Logf("shared transcripts not found at %s: replaying the shipped ones only", dir)
	}
	for _, s := range sets {
		for _, file := range s.files {
			msgs, err := transcript.LoadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []struct {
				name string
				full bool
			}{{"stored", false}, {"full", true}} {
				t.Run(s.name+"/"+filepath.Base(file)+"/"+mode.name, func(t *testing.T) {
					llm, rec := recorder(model.RespondText("Summary: the work so far, in brief."))
					sum := &counting{inner: llm}
					var ev events
					w := New(Options{Ahead: -1, MaxMessages: s.max, ContextWindow: s.ctx, Summarizer: sum, OnEvent: ev.on})
					res := replay(t, w, &ev, msgs, mode.full, s.ctx)
					distinct := len(sum.seen)
					t.Logf("%d messages, %d requests, %d compactions, %d summary calls, %d messages sent to the summarizer, %d distinct",
						len(msgs), res.requests, res.compactions, len(rec.Calls()), sum.sent, distinct)
					if limit := max(s.max, DefaultMaxMessages); s.ctx == 0 && len(msgs) > 3*limit && res.compactions == 0 {
						t.Errorf("no compaction over %d messages", len(msgs))
					}
					if float64(sum.sent) > 1.3*float64(distinct) {
						t.Errorf("%d messages sent to the summarizer for %d distinct ones: over 1.3x", sum.sent, distinct)
					}
					for _, e := range ev.all {
						if e.Type == EventFailed {
							t.Errorf("unexpected failure: %s: %v", e.Reason, e.Err)
						}
					}
				})
			}
		}
	}
}
