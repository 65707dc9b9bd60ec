package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/abridge-go/abridge/processors/window"
)

// indicator shows on a terminal that abridge is waiting for something
// (the model, a summary): one line, a spinner, what it waits for and for
// how long, redrawn a few times a second until it stops. It draws nothing
// when its writer is not a terminal. Output from elsewhere that shares the
// terminal calls clear first; the next tick draws the line again.
type indicator struct {
	w  io.Writer
	on bool

	mu    sync.Mutex
	label string
	hint  string
	since time.Time
	frame int
	drawn bool
	done  chan struct{} // closed by stop; nil while stopped
	now   func() time.Time
}

// indicatorTick is how often the indicator redraws.
const indicatorTick = 200 * time.Millisecond

// newIndicator returns an indicator drawing on w when w is a terminal.
func newIndicator(w io.Writer) *indicator {
	return &indicator{w: w, on: isTerminal(w), now: time.Now}
}

// start shows label (and hint after the time waited), from now on, until
// stop. Starting a running indicator changes its label and restarts its
// clock.
func (in *indicator) start(label, hint string) {
	if in == nil || !in.on {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.label, in.hint, in.since = label, hint, in.now()
	if in.done == nil {
		in.done = make(chan struct{})
		go in.run(in.done)
	}
	in.draw()
}

// stop erases the line and ends the redrawing.
func (in *indicator) stop() {
	if in == nil || !in.on {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.done != nil {
		close(in.done)
		in.done = nil
	}
	in.erase()
}

// clear erases the line, if one is drawn, so that other output can take
// its place; a running indicator draws it again at its next tick.
func (in *indicator) clear() {
	if in == nil || !in.on {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.erase()
}

func (in *indicator) run(done chan struct{}) {
	t := time.NewTicker(indicatorTick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			in.mu.Lock()
			if in.done == done {
				in.draw()
			}
			in.mu.Unlock()
		}
	}
}

var spinner = [...]string{"-", "\\", "|", "/"}

// draw writes the line over the current one. in.mu is held.
func (in *indicator) draw() {
	elapsed := in.now().Sub(in.since).Truncate(time.Second)
	line := fmt.Sprintf("\r\x1b[K%s %s… %s", spinner[in.frame%len(spinner)], in.label, elapsed)
	if in.hint != "" {
		line += " (" + in.hint + ")"
	}
	in.frame++
	io.WriteString(in.w, line)
	in.drawn = true
}

// erase removes the line. in.mu is held.
func (in *indicator) erase() {
	if in.drawn {
		io.WriteString(in.w, "\r\x1b[K")
		in.drawn = false
	}
}

// clearingWriter is a stream that shares a terminal with an indicator:
// each write erases the indicator's line first.
type clearingWriter struct {
	w   io.Writer
	ind *indicator
}

func (c clearingWriter) Write(p []byte) (int, error) {
	c.ind.clear()
	return c.w.Write(p)
}

// Unwrap returns the stream written to, so that isTerminal sees it.
func (c clearingWriter) Unwrap() io.Writer { return c.w }

// waitLine returns an indicator drawing on w, and makes what the command
// writes to stderr erase its line first.
func (c *cli) waitLine(w io.Writer) *indicator {
	in := newIndicator(w)
	c.stderr = clearingWriter{w: c.stderr, ind: in}
	return in
}

// summarizing says what a compaction that started summarizes.
func summarizing(ev window.Event) string {
	n := ev.Summarized
	if n == 0 {
		n = ev.MessagesBefore
	}
	return "summarizing " + plural(n, "message")
}

// follow shows the window's compactions: it starts when one starts (with
// hint) and stops when it ends.
func (in *indicator) follow(ev window.Event, hint string) {
	switch ev.Type {
	case window.EventStarted:
		in.start(summarizing(ev), hint)
	case window.EventFinished, window.EventFailed:
		in.stop()
	}
}
