package replay

import (
	"context"
	"sync"
	"time"
)

// Defaults of the replay's virtual time (see Options.Turn and
// Options.SummaryLatency).
const (
	// DefaultTurn is the time a request's model call takes before the
	// next request.
	DefaultTurn = 500 * time.Millisecond
	// DefaultSummaryLatency is the time a summary takes to write.
	DefaultSummaryLatency = 2 * time.Second
)

// vclock is the replay's virtual time: it moves by a turn between
// requests and by a summary's latency while a request waits for one, so
// that a replay tells which requests would have waited without waiting.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vclock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *vclock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// vrunner is the window's Runner in virtual time: a summary written ahead
// is written when the clock reaches its start plus the summary latency
// (as many at once as need be), before the request that comes then.
type vrunner struct {
	clock   *vclock
	latency time.Duration

	mu         sync.Mutex
	pending    []vjob // in the order they were started, so of their due time
	background bool   // a job is running: its summarizer call is no request's wait
}

type vjob struct {
	due time.Time
	run func(context.Context)
}

// Go starts run now: it is run when the clock reaches now + latency.
func (v *vrunner) Go(_ string, run func(context.Context)) bool {
	v.mu.Lock()
	v.pending = append(v.pending, vjob{due: v.clock.now().Add(v.latency), run: run})
	v.mu.Unlock()
	return true
}

// advance runs the jobs due by the clock's time; all of them when all is
// set (the conversation has ended: what was started is paid for).
func (v *vrunner) advance(all bool) {
	now := v.clock.now()
	for {
		v.mu.Lock()
		if len(v.pending) == 0 || (!all && v.pending[0].due.After(now)) {
			v.mu.Unlock()
			return
		}
		j := v.pending[0]
		v.pending = v.pending[1:]
		v.background = true
		v.mu.Unlock()
		j.run(context.Background())
		v.mu.Lock()
		v.background = false
		v.mu.Unlock()
	}
}

// inBackground reports whether the summarizer is being called from a job.
func (v *vrunner) inBackground() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.background
}
