package window

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// sized is a summarizer answering a summary of a fixed size, counting its
// calls.
type sized struct {
	chars int
	mu    sync.Mutex
	calls int
}

func (s *sized) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return strings.Repeat("s", s.chars), nil
}

func (s *sized) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func chars(h []processor.Message) int {
	n := 0
	for _, m := range h {
		n += processor.Chars(m)
	}
	return n
}

// TestCompactionNeverGrows checks that the marker, framing included, is
// always smaller than the messages it replaces, whether the summary comes
// from the summarizer, the fallback or a digest sized to fit.
func TestCompactionNeverGrows(t *testing.T) {
	framing := processor.Chars(summary.Marker(""))
	for _, tc := range []struct {
		name     string
		size     int // payload of each tool return
		summary  int // size of the summarizer's summary
		fallback bool
	}{
		{"summary fits", 300, 100, false},
		{"summary smaller than the middle but not with its framing", 40, 0, true},
		{"default digest too large, sized digest fits", 300, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := conversation(10, tc.size)
			w := New(Options{Ahead: -1, MaxMessages: 12})
			head := w.split(h, false).head
			middle := chars(h[head:w.tailStart(h, head, false)])
			n := tc.summary
			if n == 0 {
				// Smaller than the middle alone, larger with the framing.
				n = middle - framing/2
			}
			sum := &sized{chars: n}
			var ev events
			w = New(Options{Ahead: -1, MaxMessages: 12, Summarizer: sum, OnEvent: ev.on})
			out, err := w.Process(context.Background(), h)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(roles(out), "M") {
				t.Fatalf("not compacted: %s", roles(out))
			}
			if got, before := chars(out), chars(h); got >= before {
				t.Errorf("compacted request has %d chars, not fewer than the %d of the history", got, before)
			}
			if fin := ev.last(EventFinished); fin.Fallback != tc.fallback {
				t.Errorf("fallback = %v, want %v", fin.Fallback, tc.fallback)
			}
		})
	}
}

// TestTinyMiddleNotCompacted checks that a middle smaller than any marker
// is left alone without a word (no compaction is announced that cannot
// happen) and never sent to the summarizer until it has grown.
func TestTinyMiddleNotCompacted(t *testing.T) {
	sum := &sized{chars: 10}
	var ev events
	w := New(Options{Ahead: -1, MaxMessages: 8, Summarizer: sum, OnEvent: ev.on})
	h := conversation(4, 10) // 12 messages, a middle of about 100 chars
	out, err := w.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := processortest.Diff(h, out); err != nil {
		t.Errorf("history changed: %v", err)
	}
	if got := ev.types(); len(got) != 0 {
		t.Errorf("events %v for a middle no marker can undercut, want none", got)
	}
	if sum.count() != 0 {
		t.Errorf("summarizer called %d times for a middle smaller than a marker", sum.count())
	}

	// The next requests: the middle grows a little, nothing is tried.
	h = append(h, toolLoop(100, 1, 10)...)
	if _, err := w.Process(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if got := ev.types(); len(got) != 0 || sum.count() != 0 {
		t.Errorf("events %v and %d summarizer calls after a request with about the same middle, want none", got, sum.count())
	}

	// Once the middle has grown past what a marker costs, it is compacted.
	h = append(h, toolLoop(200, 4, 300)...)
	out, err = w.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]EventType{EventStarted, EventFinished}, ev.types()); diff != "" {
		t.Errorf("events of the grown middle (-want +got):\n%s", diff)
	}
	if !strings.Contains(roles(out), "M") || sum.count() != 1 {
		t.Errorf("grown middle: roles %s, %d summarizer calls, want a marker and 1 call", roles(out), sum.count())
	}
	if chars(out) >= chars(h) {
		t.Errorf("compacted request has %d chars, not fewer than %d", chars(out), chars(h))
	}
}

// TestSizedDigestFallback checks the last resort: when the summarizer's
// and the fallback's summaries are both too large, a digest bounded by the
// middle is used.
func TestSizedDigestFallback(t *testing.T) {
	big := &sized{chars: 1 << 20}
	var ev events
	w := New(Options{Ahead: -1, MaxMessages: 12, Summarizer: big, Fallback: big, OnEvent: ev.on})
	h := conversation(10, 200)
	out, err := w.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := markerOf(out)
	if !ok || !strings.HasPrefix(s, summarizer.DigestHeader) {
		t.Fatalf("marker %q, want a digest", s)
	}
	if chars(out) >= chars(h) {
		t.Errorf("compacted request has %d chars, not fewer than %d", chars(out), chars(h))
	}
	if f := ev.last(EventFailed); f.Reason != "summary too large" {
		t.Errorf("failed reason %q", f.Reason)
	}
}

// TestCompactForcesTinyMiddle checks that Compact, asked explicitly,
// compacts a middle smaller than any marker, and says so.
func TestCompactForcesTinyMiddle(t *testing.T) {
	var ev events
	w := New(Options{Ahead: -1, OnEvent: ev.on})
	h := conversation(4, 10)
	out, err := w.Compact(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(roles(out), "M") || len(out) >= len(h) {
		t.Errorf("roles %s: want a marker and fewer than %d messages", roles(out), len(h))
	}
	if diff := cmp.Diff([]EventType{EventStarted, EventFailed, EventFinished}, ev.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if f := ev.last(EventFailed); !errors.Is(f.Err, ErrNoSmallerSummary) {
		t.Errorf("failed event error %v", f.Err)
	}
}
