package window

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/abridge-go/abridge/processor"
)

// memoLimit bounds each map of a memo; a full map is emptied.
const memoLimit = 4096

// remember sets m[k] to v, emptying m first when it is full (memoLimit).
// The memo's lock must be held.
func remember[K comparable, V any](m map[K]V, k K, v V) {
	if len(m) >= memoLimit {
		clear(m)
	}
	m[k] = v
}

// memo holds what a window remembers outside its store, every entry keyed
// by content: the references of markers it may trust (so that a request
// asks the store once), the size a conversation's middle must reach
// before it is compacted again, and the fallback spans it asked the
// summarizer for again. Each map is bounded and emptied when full; losing
// an entry costs work, never a wrong result.
type memo struct {
	mu      sync.Mutex
	trusted map[string]struct{}
	waits   map[Key]int
	retried map[Digest]time.Time // fallback spans the summarizer was asked again for, and when
}

func (m *memo) init() {
	m.trusted = map[string]struct{}{}
	m.waits = map[Key]int{}
	m.retried = map[Digest]time.Time{}
}

// trust records that markers with reference ref were written by a window.
func (m *memo) trust(ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	remember(m.trusted, ref, struct{}{})
}

// trusts reports whether trust(ref) was called (and not forgotten since).
func (m *memo) trusts(ref string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.trusted[ref]
	return ok
}

// wait returns the size a middle must reach before the conversation k is
// compacted again (0: no wait).
func (m *memo) wait(k Key) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waits[k]
}

// setWait records that a middle smaller than n characters is not worth
// compacting in conversation k.
func (m *memo) setWait(k Key, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	remember(m.waits, k, n)
}

// result is what writing one summary gave.
type result struct {
	summary string
	failure *failure
	err     error
	usage   processor.Usage // what the summarizer's model calls used
}

// flights lets concurrent requests that need the same summary (the same
// content to cover, told by its digest) share one summarizer call.
type flights struct {
	mu sync.Mutex
	m  map[Digest]*flight
}

type flight struct {
	done chan struct{}
	res  result
}

func (f *flights) init() { f.m = map[Digest]*flight{} }

// do runs fn for d unless a call for d is under way, in which case it
// waits for that call's result and reports it as shared. A result that
// failed because the first caller's context ended (or fn panicked) is not
// shared: the waiting caller runs fn itself. do returns ctx's error when
// ctx ends while it waits.
func (f *flights) do(ctx context.Context, d Digest, fn func() result) (result, bool, error) {
	for {
		f.mu.Lock()
		fl, busy := f.m[d]
		if !busy {
			break // with the lock held
		}
		f.mu.Unlock()
		select {
		case <-fl.done:
		case <-ctx.Done():
			return result{}, false, ctx.Err()
		}
		if fl.res.err == nil {
			return fl.res, true, nil
		}
	}
	fl := &flight{done: make(chan struct{}), res: result{err: errFlightAborted}}
	f.m[d] = fl
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.m, d)
		f.mu.Unlock()
		close(fl.done)
	}()
	fl.res = fn()
	return fl.res, false, nil
}

// errFlightAborted is the result of a flight whose function panicked: the
// callers waiting for it write their own summary.
var errFlightAborted = errors.New("summary not written")

// mayRetry reports whether a fallback span with digest d may be written
// again by the summarizer now: not when this window tried within the last
// cooldown. It records the try.
func (m *memo) mayRetry(d Digest, now time.Time, cooldown time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.retried[d]; ok && now.Sub(last) < cooldown {
		return false
	}
	remember(m.retried, d, now)
	return true
}
