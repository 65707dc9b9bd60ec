package window

import (
	"context"
	"sync"
	"time"
)

type payerKey struct{}

// WithPayer returns a copy of ctx that names who pays for a request's
// summaries: an identity (a hash, never the credential itself) of the
// credential the summarizer's calls will carry, for a host that serves
// several. Each payer has its own circuit breaker, so failures on one
// credential never stop another's summaries, and its own share of the
// background work (see [Pool]); requests naming none share one.
func WithPayer(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, payerKey{}, id)
}

// payerOf returns the payer ctx names, or "".
func payerOf(ctx context.Context) string {
	id, _ := ctx.Value(payerKey{}).(string)
	return id
}

type unpaidKey struct{}

// WithoutSummarizer returns a copy of ctx under which the window calls
// neither its summarizer nor its fallback and saves nothing: it applies
// the summaries its store has, and a compaction due uses the offline
// digest (a fallback with Reason "unpaid"). A host uses it for requests
// it will not pay summaries for, such as those whose credential the
// upstream has not yet accepted.
func WithoutSummarizer(ctx context.Context) context.Context {
	return context.WithValue(ctx, unpaidKey{}, true)
}

// unpaid reports whether ctx comes from WithoutSummarizer.
func unpaid(ctx context.Context) bool {
	u, _ := ctx.Value(unpaidKey{}).(bool)
	return u
}

// breakerLimit bounds the payers whose failures a window remembers.
const breakerLimit = 4096

// breakers holds a circuit breaker per payer with a failure since its
// last success.
type breakers struct {
	mu sync.Mutex
	m  map[string]*breaker
}

type breaker struct {
	failures  int
	openUntil time.Time
}

// breakerOpen reports whether payer's breaker is open, resting after
// repeated failures. With probe, once the cool-down has passed, the caller
// is let through to try again, and the others find the breaker open until
// its call has been counted, or for the timeout at most.
func (w *Window) breakerOpen(payer string, probe bool) bool {
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	b := w.breakers.m[payer]
	if b == nil {
		return false
	}
	now := w.opts.Now()
	if now.Before(b.openUntil) {
		return true
	}
	if probe && b.failures >= w.opts.BreakerFailures {
		b.openUntil = now.Add(w.opts.Timeout)
	}
	return false
}

// tally counts the outcome of a summarizer call toward payer's breaker: a
// success closes it; a failure, unless Options.RequestFault blames the
// request, opens it once BreakerFailures came in a row, and after the
// cool-down one more opens it again.
func (w *Window) tally(payer string, err error) {
	if err != nil && w.opts.RequestFault != nil && w.opts.RequestFault(err) {
		return
	}
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	if err == nil {
		delete(w.breakers.m, payer)
		return
	}
	now := w.opts.Now()
	b := w.breakers.m[payer]
	if b == nil {
		if w.breakers.m == nil {
			w.breakers.m = map[string]*breaker{}
		}
		if len(w.breakers.m) >= breakerLimit {
			// Forget a breaker that is not open, or else any one.
			var any string
			for id, e := range w.breakers.m {
				any = id
				if !now.Before(e.openUntil) {
					break
				}
			}
			delete(w.breakers.m, any)
		}
		b = &breaker{}
		w.breakers.m[payer] = b
	}
	b.failures++
	if b.failures >= w.opts.BreakerFailures {
		b.openUntil = now.Add(w.opts.BreakerCooldown)
	}
}
