package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Errors a chat completions body read ends with, besides the client's
// own: the proxy answers them 503 and 408.
var (
	// errBusy: the bodies in flight hold the proxy's whole budget, and
	// none released enough of it before the body's deadline.
	errBusy = errors.New("the proxy holds as many request bodies as it may")
	// errBodyTimeout: the body did not arrive before its deadline.
	errBodyTimeout = errors.New("request body not received in time")
)

// readChunk is the most of a body read at once: the budget is taken for
// it before the read and what the read did not fill is given back.
const readChunk = 64 << 10

// budget bounds the bytes of the chat completions bodies the proxy holds
// at once. A nil *budget bounds nothing.
type budget struct {
	mu   sync.Mutex
	free int64
	wake chan struct{} // closed, and replaced, whenever bytes are released
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		return nil
	}
	return &budget{free: limit, wake: make(chan struct{})}
}

// acquire takes up to n bytes of the budget, as many as are free, waiting
// while none is, until ctx ends (its error) or deadline passes (errBusy).
// It returns how many it took.
func (b *budget) acquire(ctx context.Context, n int64, deadline time.Time) (int64, error) {
	if b == nil {
		return n, nil
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.free > 0 {
			got := min(n, b.free)
			b.free -= got
			b.mu.Unlock()
			return got, nil
		}
		wake := b.wake
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timeout:
			return 0, errBusy
		}
	}
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.wake)
	b.wake = make(chan struct{})
	b.mu.Unlock()
}

// bodyReader reads a chat completions body within the proxy's budget and
// before its deadline: each read takes from the budget what it may fill
// (at most readChunk, and no more than is free; it waits while nothing
// is) and gives back what it did not fill, so the bytes a request holds
// are what arrived; they are released by free, once the request is
// served. A read past the deadline fails with errBodyTimeout.
type bodyReader struct {
	body     io.ReadCloser
	ctx      context.Context
	budget   *budget
	deadline time.Time
	rc       *http.ResponseController // to lift the connection's read deadline at the end
	held     int64
}

func (r *bodyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.body.Read(p)
	}
	if len(p) > readChunk {
		p = p[:readChunk]
	}
	got, err := r.budget.acquire(r.ctx, int64(len(p)), r.deadline)
	if err != nil {
		return 0, err
	}
	p = p[:got]
	n, err := r.body.Read(p)
	r.budget.release(int64(len(p) - n))
	r.held += int64(n)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || (err != nil && !time.Now().Before(r.deadline)):
		return n, errBodyTimeout
	case err == io.EOF:
		// The whole body arrived: the connection's deadline is for the
		// body only.
		_ = r.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (r *bodyReader) Close() error { return r.body.Close() }

// free gives back the bytes the request held.
func (r *bodyReader) free() {
	r.budget.release(r.held)
	r.held = 0
}

// limitBody puts r's body behind the proxy's limits: at most maxBody
// bytes (a larger body fails with *http.MaxBytesError), read before
// deadline, within the budget. The body's connection stops reading at
// deadline where w allows it (an http.Server's does). Call free on the
// result once the request is served.
func limitBody(w http.ResponseWriter, r *http.Request, maxBody int64, b *budget, deadline time.Time) *bodyReader {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(deadline) // not every ResponseWriter can: then the request's context bounds the wait
	br := &bodyReader{body: http.MaxBytesReader(w, r.Body, maxBody), ctx: r.Context(), budget: b, deadline: deadline, rc: rc}
	r.Body = br
	return br
}
