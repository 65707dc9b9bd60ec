package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"golang.org/x/sync/semaphore"
)

// Errors a processed body's read ends with, besides the client's own: the
// proxy answers them 503 and 408.
var (
	// errBusy: the requests in flight hold the proxy's memory budget: a
	// body's first bytes found no room before its deadline, or a request
	// holding some found no more free.
	errBusy = errors.New("the proxy holds as many request bodies as its memory budget allows")
	// errBodyTimeout: the body did not arrive before its deadline.
	errBodyTimeout = errors.New("request body not received in time")
)

// A memoryError is why a request is refused 413: its body and what
// processing it takes would never fit in the proxy's memory budget.
type memoryError struct{ need, budget int64 }

func (e *memoryError) Error() string {
	return fmt.Sprintf("this request would take about %s of memory (its body and what decoding and processing its history take), more than the proxy's whole budget of %s: raise %s (BodyMemory), or send a shorter history",
		size(e.need), size(e.budget), envBodyMemory)
}

// size returns n bytes as a count of bytes, and of MiB from 1 MiB.
func size(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
}

// readChunk is the most of a body read at once: the budget is taken for
// it before the read and what the read did not fill is given back.
const readChunk = 64 << 10

// bodyReader reads a processed request's body within the proxy's memory
// budget and before its deadline. Each read takes from the budget twice
// what it may fill (at most readChunk): the middleware holds a body it
// receives twice for an instant, in the pieces it arrives in and in the
// slice they are joined into. It gives back what the read did not fill,
// so what a request holds is twice the bytes that arrived; free gives it
// back once the request is served. A request waits for the budget only
// while it holds none of it (until its deadline, then errBusy), and
// starts once there is room for its whole body (as its length declares,
// not holding it: a client that announces much and sends little holds
// little); once it holds some, it takes more only if it is free at once,
// else its read fails with errBusy. No request waits while holding what
// another waits for. A read past the deadline fails with errBodyTimeout.
// What the body costs once it has arrived is taken by reserve.
type bodyReader struct {
	body   io.ReadCloser
	budget *semaphore.Weighted // nil: no bound
	chunk  int64               // the most read, and taken twice, at once
	// declared is the body's declared length (-1: none), whole what it
	// will hold then, arrived how much of it has.
	declared, whole, arrived int64
	// wait ends at the body's deadline or with the client's request.
	wait     context.Context
	stop     context.CancelFunc
	deadline time.Time
	rc       *http.ResponseController // to lift the connection's read deadline at the end
	held     int64
	// reserved is what the request's processing holds of the budget
	// beside its body (Proxy.reserve): taken and given back on the
	// goroutine that serves the request.
	reserved int64
}

func (r *bodyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.body.Read(p)
	}
	size := min(int64(len(p)), r.chunk)
	if r.declared >= 0 {
		// Once the declared bytes have arrived, the read finds the end
		// (the server reads no further): there is nothing to take.
		size = max(min(size, r.declared-r.arrived), 1)
	}
	p = p[:size]
	take := 2 * size
	if r.declared >= 0 && r.arrived == r.declared {
		take = 0
	}
	if r.budget != nil && take > 0 {
		if err := r.take(take); err != nil {
			return 0, err
		}
	}
	n, err := r.body.Read(p)
	r.give(take - 2*int64(n))
	r.held += 2 * int64(n)
	r.arrived += int64(n)
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

// take takes n bytes of the budget: while the request holds none, once
// there is room for what its whole body will hold (twice its declared
// length, when it has one), waiting for it until the body's deadline
// (then errBusy); else only if they are free at once (else errBusy).
func (r *bodyReader) take(n int64) error {
	if r.held > 0 {
		if !r.budget.TryAcquire(n) {
			return errBusy
		}
		return nil
	}
	room := max(n, r.whole)
	if err := r.budget.Acquire(r.wait, room); err != nil {
		if errors.Is(context.Cause(r.wait), errBusy) {
			return errBusy
		}
		return err
	}
	r.give(room - n)
	return nil
}

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

// reserve takes n bytes of the memory budget for processing the request
// ctx is for, beside what its body holds (middleware.Options.Reserve), as
// the body takes more of it (see bodyReader.take); it refuses with a
// *memoryError what would not fit in the whole budget.
func (p *Proxy) reserve(ctx context.Context, n int64) (func(), error) {
	ex := exchangeOf(ctx)
	if p.bodies == nil || ex == nil || ex.body == nil {
		return func() {}, nil
	}
	body := ex.body
	if need := body.held + body.reserved + n; need > p.memory {
		return nil, &memoryError{need: need, budget: p.memory}
	}
	if err := body.take(n); err != nil {
		return nil, err
	}
	body.reserved += n
	return func() {
		body.reserved -= n
		p.bodies.Release(n)
	}, nil
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
		declared: r.ContentLength, wait: wait, stop: stop, deadline: deadline, rc: rc}
	if p.bodies != nil {
		// A quarter of the budget at most, so that a lone request can
		// always take its next read.
		br.chunk = min(readChunk, p.memory/4)
		br.whole = min(2*max(r.ContentLength, 0), p.memory)
	}
	r.Body = br
	return br
}
