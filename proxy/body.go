package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/semaphore"
)

// Errors a processed body's read ends with, besides the client's own: the
// proxy answers them 503 and 408.
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

// bodyReader reads a processed request's body within the proxy's memory
// budget and before its deadline: each read takes from the budget what it
// may fill (at most readChunk), waiting while others hold it, and gives
// back what it did not fill, so the bytes a request holds are what
// arrived; free gives them back once the request is served. A read past
// the deadline fails with errBodyTimeout, a wait for the budget past it
// with errBusy.
type bodyReader struct {
	body   io.ReadCloser
	budget *semaphore.Weighted // nil: no bound
	chunk  int64               // the most taken at once
	// wait ends at the body's deadline or with the client's request.
	wait     context.Context
	stop     context.CancelFunc
	deadline time.Time
	rc       *http.ResponseController // to lift the connection's read deadline at the end
	held     int64
}

func (r *bodyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.body.Read(p)
	}
	p = p[:min(int64(len(p)), r.chunk)]
	if r.budget != nil {
		if err := r.budget.Acquire(r.wait, int64(len(p))); err != nil {
			if errors.Is(context.Cause(r.wait), errBusy) {
				return 0, errBusy
			}
			return 0, err
		}
	}
	n, err := r.body.Read(p)
	r.give(int64(len(p) - n))
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

// give gives n bytes back to the budget.
func (r *bodyReader) give(n int64) {
	if r.budget != nil && n > 0 {
		r.budget.Release(n)
	}
}

// free gives back the bytes the request held.
func (r *bodyReader) free() {
	r.stop()
	r.give(r.held)
	r.held = 0
}

// limitBody puts r's body behind the proxy's limits: at most p.maxBody
// bytes (a larger body fails with *http.MaxBytesError), read before
// deadline, within p's budget. The body's connection stops reading at
// deadline where w allows it (an http.Server's does). Call free on the
// result once the request is served.
func (p *Proxy) limitBody(w http.ResponseWriter, r *http.Request, deadline time.Time) *bodyReader {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(deadline) // not every ResponseWriter can: then the wait for the budget is bounded
	wait, stop := context.WithDeadlineCause(r.Context(), deadline, errBusy)
	br := &bodyReader{body: http.MaxBytesReader(w, r.Body, p.maxBody), budget: p.bodies, chunk: readChunk,
		wait: wait, stop: stop, deadline: deadline, rc: rc}
	if p.bodies != nil {
		br.chunk = min(readChunk, p.memory)
	}
	r.Body = br
	return br
}
