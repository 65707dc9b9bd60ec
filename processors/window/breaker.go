package window

import (
	"context"
	"sync"
	"time"
)

type payerKey struct{}

// WithPayer returns a copy of ctx that names who pays for the summaries
// written for a request: an identity of the credential the summarizer's
// calls will carry (a hash of it, never the credential itself), for a host
// that serves several (a proxy whose clients pay for their own summaries).
// The window keeps one circuit breaker per payer, so failures on one
// payer's credential (a key refused, a rate limit) never stop the
// summaries of another. Requests that name no payer (an empty id) share
// one breaker.
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
// neither its summarizer nor its fallback, and saves nothing in its store:
// it still applies the summaries its store has for the history, and when a
// compaction is due it uses the offline digest (reported as a fallback
// with Reason "unpaid"), which costs nobody anything. A host uses it for
// requests it will not pay summaries for, such as those whose credential
// the upstream has not yet accepted.
func WithoutSummarizer(ctx context.Context) context.Context {
	return context.WithValue(ctx, unpaidKey{}, true)
}

// unpaid reports whether ctx comes from WithoutSummarizer.
func unpaid(ctx context.Context) bool {
	u, _ := ctx.Value(unpaidKey{}).(bool)
	return u
}

// breakerLimit bounds the payers whose failures a window remembers; a
// payer forgotten starts again with a closed breaker.
const breakerLimit = 4096

// breakers holds a circuit breaker per payer. Only payers with a failure
// since their last success have an entry.
type breakers struct {
	mu sync.Mutex
	m  map[string]*breaker
}

type breaker struct {
	failures  int
	openUntil time.Time
}

// breakerOpen reports whether payer's summarizer calls are resting after repeated
// failures. Once the cool-down has passed, one caller is let through to
// try again; the breaker stays open for the others until that call has
// been recorded, or for the timeout at most, so they do not all wait on a
// summarizer that may still hang.
func (w *Window) breakerOpen(payer string) bool {
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	b := w.breakers.m[payer]
	if b == nil {
		return false
	}
	now := w.now()
	if now.Before(b.openUntil) {
		return true
	}
	if b.failures >= w.breakerFailures {
		b.openUntil = now.Add(w.timeout)
	}
	return false
}

// tally counts the outcome of a summarizer call toward payer's breaker: a
// success closes it; a failure, unless Options.RequestFault blames the
// request, opens it once BreakerFailures come in a row. After the
// cool-down one more failure opens it again: only a success resets the
// count.
func (w *Window) tally(payer string, err error) {
	if err != nil && w.requestFault != nil && w.requestFault(err) {
		return
	}
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	if err == nil {
		delete(w.breakers.m, payer)
		return
	}
	now := w.now()
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
	if b.failures >= w.breakerFailures {
		b.openUntil = now.Add(w.breakerCooldown)
	}
}

// breakerResting reports whether payer's breaker is open and resting,
// without letting a caller through to try again.
func (w *Window) breakerResting(payer string) bool {
	w.breakers.mu.Lock()
	defer w.breakers.mu.Unlock()
	b := w.breakers.m[payer]
	return b != nil && w.now().Before(b.openUntil)
}
