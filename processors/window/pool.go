package window

import (
	"context"
	"sync"
)

// Runner runs a window's background work (see Options.Ahead). Go is given
// each job with its payer (see [Request.Payer]); it calls run exactly once,
// from any goroutine, or reports false without calling it. A job gives up
// when the context run receives ends. [Pool] is the default.
type Runner interface {
	Go(payer string, run func(ctx context.Context)) bool
}

// Defaults of [PoolOptions].
const (
	// DefaultWorkers is how many summaries a Pool writes at once: each
	// waits on a model, using no CPU meanwhile.
	DefaultWorkers = 64
	// DefaultQueue bounds the jobs a Pool holds waiting.
	DefaultQueue = 1024
	// DefaultQueuePerPayer bounds the jobs one payer has waiting in a
	// Pool.
	DefaultQueuePerPayer = 64
)

// PoolOptions configures a [Pool]. The zero value means the defaults.
type PoolOptions struct {
	// Workers is how many jobs run at once; 0 means DefaultWorkers.
	Workers int
	// Queue bounds the jobs waiting for a worker, all payers together;
	// 0 means DefaultQueue.
	Queue int
	// QueuePerPayer bounds the jobs one payer has waiting; 0 means
	// DefaultQueuePerPayer.
	QueuePerPayer int
}

// Pool is a [Runner] with a fixed number of workers and a bounded queue,
// fair between payers: the workers serve the payers with jobs waiting in
// turn, one job each, so one payer's many conversations cannot hold up
// another's summaries. It is safe for concurrent use.
type Pool struct {
	perPayer, size int

	mu      sync.Mutex
	wake    *sync.Cond
	queues  map[string][]func(context.Context) // waiting jobs by payer, oldest first
	turns   []string                           // payers with jobs waiting, in the order they are served
	waiting int
	closed  bool

	ctx     context.Context // ended by Close to abandon running jobs
	abandon context.CancelFunc
	workers sync.WaitGroup
}

var _ Runner = (*Pool)(nil)

// NewPool returns a Pool whose workers run until Close.
func NewPool(opts PoolOptions) *Pool {
	workers := positiveOr(opts.Workers, DefaultWorkers)
	p := &Pool{
		perPayer: positiveOr(opts.QueuePerPayer, DefaultQueuePerPayer),
		size:     positiveOr(opts.Queue, DefaultQueue),
		queues:   map[string][]func(context.Context){},
	}
	p.wake = sync.NewCond(&p.mu)
	p.ctx, p.abandon = context.WithCancel(context.Background())
	p.workers.Add(workers)
	for range workers {
		go p.work()
	}
	return p
}

// Go queues run for payer. It reports false, without calling run, when
// the queue or the payer's share of it is full, or the pool is closed.
func (p *Pool) Go(payer string, run func(ctx context.Context)) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[payer]
	if p.closed || p.waiting >= p.size || len(q) >= p.perPayer {
		return false
	}
	if len(q) == 0 {
		p.turns = append(p.turns, payer)
	}
	p.queues[payer] = append(q, run)
	p.waiting++
	p.wake.Signal()
	return true
}

// next takes the job of the payer whose turn it is, waiting for one; it
// returns nil once the pool is closed and nothing waits.
func (p *Pool) next() func(context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.turns) == 0 {
		if p.closed {
			return nil
		}
		p.wake.Wait()
	}
	payer := p.turns[0]
	q := p.queues[payer]
	run := q[0]
	q[0] = nil
	p.turns = p.turns[1:]
	if q = q[1:]; len(q) > 0 {
		p.queues[payer] = q
		p.turns = append(p.turns, payer) // its next job waits for the others' turns
	} else {
		delete(p.queues, payer)
	}
	p.waiting--
	return run
}

func (p *Pool) work() {
	defer p.workers.Done()
	for run := p.next(); run != nil; run = p.next() {
		run(p.ctx)
	}
}

// Close stops taking jobs, runs those still waiting with an ended context
// (they give up at once), and waits for the running ones until ctx ends;
// then it ends their context too, waits for them to give up and returns
// ctx's error.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.workers.Wait()
		return nil
	}
	p.closed = true
	var dropped []func(context.Context)
	for _, payer := range p.turns {
		dropped = append(dropped, p.queues[payer]...)
	}
	p.turns, p.queues, p.waiting = nil, map[string][]func(context.Context){}, 0
	p.wake.Broadcast()
	p.mu.Unlock()

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, run := range dropped {
		run(ended)
	}
	stop := context.AfterFunc(ctx, p.abandon)
	p.workers.Wait()
	if !stop() {
		return ctx.Err() // the running jobs were abandoned
	}
	p.abandon()
	return nil
}
