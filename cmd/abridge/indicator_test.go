package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestIndicator draws the indicator on a writer taken for a terminal: a
// line that shows the time waited, redrawn in place, and erased when it
// stops or when other output needs the line.
func TestIndicator(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	in := &indicator{w: &buf, on: true, now: func() time.Time { return clock }}
	steps := []struct {
		do   func()
		want string
	}{
		{func() { in.start("waiting for the model", "Ctrl-C stops it") }, "\r\x1b[K- waiting for the model… 0s (Ctrl-C stops it)"},
		{func() { clock = clock.Add(3500 * time.Millisecond); in.mu.Lock(); in.draw(); in.mu.Unlock() },
			"\r\x1b[K\\ waiting for the model… 3s (Ctrl-C stops it)"},
		{func() { in.clear() }, "\r\x1b[K"},
		{func() { in.clear() }, ""}, // nothing drawn: nothing to erase
		{func() { in.start("summarizing 4 messages", "") }, "\r\x1b[K| summarizing 4 messages… 0s"},
		{func() { in.stop() }, "\r\x1b[K"},
		{func() { in.stop() }, ""},
	}
	for i, st := range steps {
		buf.Reset()
		st.do()
		if diff := cmp.Diff(st.want, buf.String()); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestIndicatorNotTerminal checks that nothing is drawn on a writer that
// is not a terminal.
func TestIndicatorNotTerminal(t *testing.T) {
	var buf bytes.Buffer
	in := newIndicator(&buf)
	in.start("waiting for the model", "")
	time.Sleep(2 * indicatorTick)
	in.clear()
	in.stop()
	if buf.Len() != 0 {
		t.Errorf("wrote %q to a writer that is not a terminal", buf.String())
	}
	var none *indicator
	none.start("x", "") // a nil indicator does nothing
	none.stop()
}
