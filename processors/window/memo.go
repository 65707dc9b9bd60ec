package window

import (
	"context"
	"errors"
	"sync"

	"github.com/abridge-go/abridge/processor"
)

// memoLimit bounds the entries of a memo.
const memoLimit = 4096

// memo is a map safe for concurrent use that is emptied when it reaches
// memoLimit entries: losing an entry must cost work, never a wrong result.
type memo[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

// get returns k's value, or V's zero value.
func (m *memo[K, V]) get(k K) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[k]
}

// put sets k's value to v, unless keep (when not nil) holds of the value
// it has; it reports whether it set it.
func (m *memo[K, V]) put(k K, v V, keep func(old V) bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.m[k]; ok && keep != nil && keep(old) {
		return false
	}
	if m.m == nil || len(m.m) >= memoLimit {
		m.m = map[K]V{}
	}
	m.m[k] = v
	return true
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
	if f.m == nil {
		f.m = map[Digest]*flight{}
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
