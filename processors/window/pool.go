package window

import (
	"context"
	"sync"
)

// Runner runs the work a window does in the background: the summaries it
// writes ahead of the compactions that will need them (see Options.Ahead).
// Go is given each job with the payer it is for (see [WithPayer]); it
// calls run exactly once, from any goroutine, or reports false without
// calling it when it cannot take the job (its queue is full, it is
// closed). A job is told to give up through the context run receives:
// the window then abandons the summary cleanly. [Pool] is the Runner
// windows use unless given another; a test or a replay in virtual time
// gives one of its own that runs each job when its clock says the
// summary would be ready.
type Runner interface {
	Go(payer string, run func(ctx context.Context)) bool
}

// Defaults of [PoolOptions].
const (
	// DefaultWorkers is the number of summaries a Pool writes at once:
	// each waits on a model for seconds, using no CPU meanwhile.
	DefaultWorkers = 64
	// DefaultQueue bounds the jobs a Pool holds waiting.
	DefaultQueue = 1024
	// DefaultQueuePerPayer bounds the jobs one payer has waiting in a
	// Pool.
	DefaultQueuePerPayer = 64
)

// PoolOptions configures a [Pool]. The zero value means the defaults.
type PoolOptions struct {
	// Workers is the number of jobs run at once; 0 means
	// DefaultWorkers.
	Workers int
	// Queue bounds the jobs waiting for a worker, all payers together;
	// 0 means DefaultQueue.
	Queue int
	// QueuePerPayer bounds the jobs one payer has waiting, so that one
	// payer's conversations cannot fill the queue; 0 means
	// DefaultQueuePerPayer.
	QueuePerPayer int
}

// Pool is a [Runner] with a fixed number of workers and a bounded queue,
// fair between payers: the workers take the payers that have jobs waiting
// in turn, one job each, so a payer with many conversations cannot delay
// another's summaries by more than one job per worker. Every job runs paid
// as its request was (the context it runs under is the one the window gave
// it, which carries the payer's credential). It is safe for concurrent
// use.
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

// Close stops taking jobs, gives the jobs still waiting an ended context
// (so they abandon their summaries at once), and waits for the running
// ones to finish until ctx ends; then it ends their context too and waits
// for them to give up. It returns ctx's error when the running jobs had to
// be abandoned. A window whose Pool is closed writes its summaries in the
// foreground, as it does when a Pool's queue is full.
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
	done := make(chan struct{})
	go func() { p.workers.Wait(); close(done) }()
	select {
	case <-done:
		p.abandon()
		return nil
	case <-ctx.Done():
		p.abandon()
		<-done
		return ctx.Err()
	}
}
