package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrStalled is the cause of a stream attempt the idle timeout ended.
var ErrStalled = errors.New("stream idle timeout")

// Watch returns a context for one streamed attempt that the idle timeout
// cancels (with cause [ErrStalled]), the StreamWatch that restarts it, and
// the function that stops both.
func Watch(ctx context.Context, idle time.Duration) (context.Context, *StreamWatch, func()) {
	attemptCtx, cancel := context.WithCancelCause(ctx)
	w := &StreamWatch{idle: idle}
	if idle > 0 {
		w.timer = time.AfterFunc(idle, func() { cancel(ErrStalled) })
	}
	return attemptCtx, w, func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		cancel(nil)
	}
}

// StreamWatch watches the body of a streamed response: it restarts the
// idle timer whenever bytes arrive, keeps the first bytes for error
// messages, and notes a [DONE] event. Its methods run on the goroutine
// reading the stream.
type StreamWatch struct {
	idle  time.Duration
	timer *time.Timer // nil without an idle timeout
	head  []byte      // the body's first bytes (none: nothing came)
	line  []byte      // the start of the current line
	done  bool        // a "data: [DONE]" line arrived
}

// streamHeadLen bounds what a StreamWatch keeps of a body.
const streamHeadLen = 120

// Middleware watches the response of each attempt the SDK makes: give it
// to the SDK's option.WithMiddleware.
func (w *StreamWatch) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	w.touch()
	if res != nil && res.Body != nil {
		res.Body = &watchedBody{ReadCloser: res.Body, w: w}
	}
	return res, err
}

// Head returns the body's first bytes (none when nothing came).
func (w *StreamWatch) Head() []byte { return w.head }

// Done reports whether a "data: [DONE]" line arrived.
func (w *StreamWatch) Done() bool { return w.done }

func (w *StreamWatch) touch() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

// saw takes note of bytes of the body.
func (w *StreamWatch) saw(p []byte) {
	w.touch()
	if n := streamHeadLen - len(w.head); n > 0 {
		w.head = append(w.head, p[:min(n, len(p))]...)
	}
	for _, b := range p {
		if b == '\n' || b == '\r' {
			// As the event stream decoder reads it: "data:", an
			// optional space, then data starting with [DONE].
			if rest, ok := bytes.CutPrefix(w.line, []byte("data:")); ok {
				rest = bytes.TrimPrefix(rest, []byte(" "))
				w.done = w.done || bytes.HasPrefix(rest, []byte("[DONE]"))
			}
			w.line = w.line[:0]
			continue
		}
		if len(w.line) < 16 {
			w.line = append(w.line, b)
		}
	}
}

// watchedBody is a response body whose reads a StreamWatch sees.
type watchedBody struct {
	io.ReadCloser
	w *StreamWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.saw(p[:n])
	}
	return n, err
}

// Snippet returns the start of a body (as a StreamWatch keeps it) as one
// line of valid UTF-8.
func Snippet(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if len(b) >= streamHeadLen {
		s += "…"
	}
	return s
}
