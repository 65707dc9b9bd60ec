package window

import (
	"context"
	"sync"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// Defaults of writing ahead.
const (
	// DefaultAhead is how many requests ahead of a trigger the summary
	// its compaction will need starts being written.
	DefaultAhead = 5
	// DefaultClaimTTL is how long an unrenewed claim lasts.
	DefaultClaimTTL = 30 * time.Second
	// aheadIdle is how long a summary written ahead is kept while its
	// conversation is silent.
	aheadIdle = 30 * time.Minute
	// aheadJobs bounds the summaries written ahead a window keeps; past
	// it the least recently needed are abandoned.
	aheadJobs = 4096
)

// Claimer is a [Store] shared by processes that lets one of them write
// each summary: the holder of a claim on the span's digest writes and
// saves it; the others defer their compaction (under the hard limits)
// until it is saved, and take over if the claim expires unrenewed.
// Package session's store implements it; with a store that does not, each
// process writes what it needs.
type Claimer interface {
	// Claim claims the span with digest d for holder until ttl from now.
	// It reports true when holder now holds the claim (nobody did, it
	// renews its own, or another's expired).
	Claim(ctx context.Context, d Digest, holder string, ttl time.Duration) (bool, error)
	// Release ends holder's claim on d, if it holds it.
	Release(ctx context.Context, d Digest, holder string) error
}

// job is a summary written ahead, and the state of its writing.
type job struct {
	key    Key
	digest Digest
	head   int
	count  int // messages the summary stands for after the head, in the input history
	last   Key // the key of the span's last message
	// plan is what the summary is written from (its fresh messages the
	// job's own copy, dropped once it ends): the job makes the brief when
	// it runs, and sets input, the characters given to the summarizer
	// (guarded by mu).
	plan   plan
	input  int
	values context.Context // the request's values (payer, credential), not its end
	queued time.Time

	mu sync.Mutex
	// committed is set once a compaction that came due waits for it: it
	// is then used wherever the deferred requests moved the cut, not only
	// when its cut is close to the compaction's.
	committed bool
	state     jobState
	seen      time.Time          // when a request last looked for it (guarded by jobs.mu)
	cancel    context.CancelFunc // while running
	done      chan struct{}      // closed once written or abandoned
	prose     string             // the summarizer's summary
	failure   *failure           // why it wrote none
	usage     processor.Usage
	used      bool
}

type jobState uint8

const (
	jobQueued jobState = iota
	jobRunning
	jobDone
	jobAbandoned
)

// take moves a queued job to running, for the caller to write; false when
// it was not queued.
func (j *job) take() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != jobQueued {
		return false
	}
	j.state = jobRunning
	return true
}

// end ends a running job in state, with what writing it gave.
func (j *job) end(state jobState, prose string, f *failure, usage processor.Usage) {
	j.mu.Lock()
	j.state, j.prose, j.failure, j.usage = state, prose, f, usage
	j.plan.fresh, j.cancel = nil, nil
	close(j.done)
	j.mu.Unlock()
}

// written reports whether the job is done (its prose, failure and usage
// set for good).
func (j *job) written() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state == jobDone
}

// abandon stops the job, a queued one for good, a running one by
// cancelling its call, and reports the state it was in.
func (j *job) abandon() jobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	was := j.state
	switch was {
	case jobQueued:
		j.state, j.plan.fresh = jobAbandoned, nil
		close(j.done)
	case jobRunning:
		if j.cancel != nil {
			j.cancel()
		}
	}
	return was
}

// jobs are the summaries a window writes ahead, by digest.
type jobs struct {
	mu  sync.Mutex
	all map[Digest]*job
}

// of returns the jobs of the conversation k, marking them seen at now.
func (js *jobs) of(k Key, now time.Time) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []*job
	for _, j := range js.all {
		if j.key == k {
			j.seen = now
			out = append(out, j)
		}
	}
	return out
}

// add adds j and returns the jobs it forgets: idle too long, or the least
// recently seen past the bound.
func (js *jobs) add(j *job, now time.Time) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.all == nil {
		js.all = map[Digest]*job{}
	}
	j.seen = now
	js.all[j.digest] = j
	var out []*job
	var oldest *job
	for d, o := range js.all {
		switch {
		case now.Sub(o.seen) > aheadIdle:
			out = append(out, o)
			delete(js.all, d)
		case oldest == nil || o.seen.Before(oldest.seen):
			oldest = o
		}
	}
	if len(js.all) > aheadJobs && oldest != nil {
		out = append(out, oldest)
		delete(js.all, oldest.digest)
	}
	return out
}

// remove removes j.
func (js *jobs) remove(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.all[j.digest] == j {
		delete(js.all, j.digest)
	}
}

// take removes and returns the jobs of conversation k (all of them when k
// is nil).
func (js *jobs) take(k *Key) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	var out []*job
	for d, j := range js.all {
		if k == nil || j.key == *k {
			out = append(out, j)
			delete(js.all, d)
		}
	}
	return out
}

// aheadOn reports whether ctx's request has its summaries written ahead:
// writing ahead is on, the window open, the request paid for, the
// summarizer not the offline digest (it takes microseconds) and the
// payer's breaker not resting.
func (w *Window) aheadOn(ctx context.Context) bool {
	if _, digest := w.opts.Summarizer.(*summarizer.Digest); digest {
		return false
	}
	return w.opts.Ahead > 0 && !w.closed.Load() && !RequestOf(ctx).Unpaid && !w.breakerOpen(RequestOf(ctx).Payer, false)
}

// near reports whether h is within Ahead requests of a trigger, a request
// adding two messages of the size of its recent ones.
func (w *Window) near(h []processor.Message) bool {
	if w.maxMessages > 0 && len(h)+2*w.opts.Ahead > w.maxMessages {
		return true
	}
	return w.tokenTrigger > 0 && processor.EstimateTokens(h)+w.opts.Ahead*2*perMessage(h) > w.tokenTrigger
}

// perMessage returns the mean tokens of h's last ten messages.
func perMessage(h []processor.Message) int {
	recent := h[max(0, len(h)-10):]
	if len(recent) == 0 {
		return 1
	}
	return max(1, processor.ContentTokens(recent)/len(recent))
}

// projected returns the cut the next compaction of h will make, the same
// for every request until then: the tail rule applied to the history as
// it will be when the trigger fires, growing two messages a request. Its
// start is len(h) while the span is not known yet. With a tail of user
// turns, or when that cut would leave h over a trigger, it is the cut a
// compaction makes now.
func (w *Window) projected(h []processor.Message) cut {
	c := w.split(h, false)
	if w.opts.KeepUserTurns > 0 {
		return c
	}
	p := c
	switch {
	case w.maxMessages > 0:
		// The first length past MaxMessages that the history reaches, or
		// reached.
		at := len(h) + 2*((w.maxMessages+2-len(h))/2)
		if len(h) > w.maxMessages {
			at = len(h) - 2*((len(h)-w.maxMessages-1)/2)
		}
		p.start = backToPair(h, max(c.head, at-w.keep), c.head)
	case w.tokenTrigger > 0:
		// The history will pass the trigger by half a request, on
		// average; the tail is shortened to fit in half of it.
		if len(h) <= c.head {
			return c
		}
		per := perMessage(h)
		growth := max(0, w.tokenTrigger-processor.EstimateTokens(h)) + per
		at := len(h) + 2*((growth/per+1)/2)
		p.start = backToPair(h, max(c.head, at-w.keep), c.head)
		if p.start < len(h) {
			p.start = max(p.start, w.shrink(h, p.start, len(h)-1, max(0, w.tokenTrigger/2-growth)))
		}
	}
	switch {
	case !w.triggered(h) && p.start >= len(h):
		p.start = len(h)
	case w.triggered(h) && (p.start >= len(h) || !w.usable(h, p)):
		return c
	}
	return p
}

// prepare starts writing the summary the next compaction of v will need
// when v is near a trigger.
func (w *Window) prepare(ctx context.Context, history []processor.Message, v view) {
	if !w.aheadOn(ctx) || !w.near(v.msgs) {
		return
	}
	w.prepareAt(ctx, history, v, w.projected(v.msgs), false)
}

// prepareAt starts writing, in the background, the summary of v's span
// at c, unless it is written or being written, here or by another process
// (see job.committed).
func (w *Window) prepareAt(ctx context.Context, history []processor.Message, v view, c cut, committed bool) {
	h := v.msgs
	if c.middle() < 2 || c.start >= len(h) {
		return
	}
	p := w.planAt(ctx, v, c, c.start)
	if len(p.fresh) == 0 || p.replaced <= w.framing {
		return // only markers, whose merging costs nothing, or too little to replace
	}
	end := p.end()
	last := keyOf("", history[end-1:end])
	now := w.opts.Now()
	for _, j := range w.jobs.of(v.key, now) {
		// Being written or written, at this cut or one close to it (a
		// token trigger's projection moves as the history grows).
		if js := startIn(v, c.head, j.count); j.head == c.head && js >= 0 && js < len(h) && !w.tooEarly(h, js, c.start) {
			return
		}
	}
	for _, s := range v.prepared {
		if s.Count == p.covered && s.Last == last {
			return // written by another process
		}
	}
	d := digestOf(history[:end])
	if cl, ok := w.opts.Store.(Claimer); ok {
		mine, err := cl.Claim(ctx, d, w.holder, w.opts.ClaimTTL)
		if err != nil {
			w.storeFailed(ctx, "claim", err)
			return
		}
		if !mine {
			return // another process writes it
		}
	}
	// The job outlives the request's history: it keeps its own copy of
	// the messages to summarize, and makes their brief (the facts, the
	// texts clipped) when it runs, not in the request.
	p.fresh = processor.Clone(p.fresh)
	j := &job{
		key: v.key, digest: d, head: c.head, count: p.covered, last: last, plan: p,
		values: context.WithoutCancel(ctx), queued: now, done: make(chan struct{}), committed: committed,
	}
	for _, old := range w.jobs.add(j, now) {
		w.drop(old, "idle")
	}
	w.emit(ctx, EventAheadStarted, Event{
		MessagesBefore: len(h), TokensBefore: processor.ContentTokens(h),
		Summarized: len(p.fresh), From: c.head, To: c.head + p.covered,
		Key: v.key, Span: d,
	})
	if !w.runner().Go(RequestOf(ctx).Payer, func(rctx context.Context) { w.runJob(rctx, j) }) && j.take() {
		// No room: the compaction writes it when it comes.
		w.giveUp(j, "queue full", Event{})
	}
}

// runJob writes j's summary unless a request took it first. It gives up a
// job queued for longer than aheadIdle, or whose runner stopped.
func (w *Window) runJob(rctx context.Context, j *job) {
	if !j.take() {
		return
	}
	if rctx.Err() != nil || w.opts.Now().Sub(j.queued) > aheadIdle {
		w.giveUp(j, "abandoned", Event{})
		return
	}
	w.write(rctx, j)
}

// giveUp ends j, taken by the caller, unwritten, and reports it wasted
// for reason; ev says what writing it cost.
func (w *Window) giveUp(j *job, reason string, ev Event) {
	j.end(jobAbandoned, "", nil, ev.SummarizerUsage)
	w.jobs.remove(j)
	w.release(j.values, j.digest)
	ev.Reason, ev.Key, ev.Span = reason, j.key, j.digest
	w.emit(j.values, EventAheadWasted, ev)
}

// write writes j's summary, taken by the caller, unless rctx ends first,
// with the values of the request that started it (who pays). It renews
// the claim meanwhile and saves the summary as a prepared span.
func (w *Window) write(rctx context.Context, j *job) {
	ctx, cancel := context.WithCancel(j.values)
	defer context.AfterFunc(rctx, cancel)()
	defer cancel()
	b := w.briefOf(j.plan)
	j.mu.Lock()
	j.cancel, j.input = cancel, b.chars()
	j.mu.Unlock()
	w.keepClaim(ctx, j.digest) // until cancel

	began := w.opts.Now()
	mctx, meter := processor.WithUsageMeter(ctx)
	prose, f := w.ask(mctx, b)
	usage, _ := meter.Usage()
	ev := Event{Duration: w.opts.Now().Sub(began), SummarizerUsage: usage, SummaryInput: b.chars(), Key: j.key, Span: j.digest,
		From: j.head, To: j.head + j.count, SummaryChars: len(prose)}
	if ctx.Err() != nil {
		w.giveUp(j, "abandoned", ev)
		return
	}
	if f == nil {
		w.save(ctx, j.key, Span{Head: j.head, Count: j.count, Digest: j.digest, Last: j.last, Summary: prose, Prepared: true})
	} else {
		ev.Err, ev.Reason = f.err, f.reason
	}
	w.release(j.values, j.digest)
	j.end(jobDone, prose, f, usage)
	w.emit(j.values, EventAheadFinished, ev)
}

// keepClaim renews this window's claim on d every third of its TTL, when
// the store has claims, until ctx ends.
func (w *Window) keepClaim(ctx context.Context, d Digest) {
	cl, ok := w.opts.Store.(Claimer)
	if !ok {
		return
	}
	go func() {
		t := time.NewTicker(max(w.opts.ClaimTTL/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if _, err := cl.Claim(ctx, d, w.holder, w.opts.ClaimTTL); err != nil && ctx.Err() == nil {
					w.storeFailed(ctx, "claim", err)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
}

// release releases this window's claim on d, when the store has claims.
func (w *Window) release(ctx context.Context, d Digest) {
	if cl, ok := w.opts.Store.(Claimer); ok {
		if err := cl.Release(context.WithoutCancel(ctx), d, w.holder); err != nil {
			w.storeFailed(ctx, "claim", err)
		}
	}
}

// drop abandons j unused, reporting what writing it cost.
func (w *Window) drop(j *job, reason string) {
	was := j.abandon()
	if was == jobQueued {
		w.release(j.values, j.digest)
	}
	j.mu.Lock()
	used, input := j.used, 0
	if was == jobDone && j.failure == nil {
		input = j.input
	}
	j.mu.Unlock()
	if used {
		return
	}
	w.dropped.put(j.digest, true, nil)
	if was != jobAbandoned {
		w.emit(j.values, EventAheadWasted, Event{Reason: reason, SummaryInput: input, Key: j.key, Span: j.digest,
			From: j.head, To: j.head + j.count})
	}
}

// startIn returns where, in v, the tail begins after a span of count
// messages after head in the input history; -1 when the span does not
// cover the view's marker.
func startIn(v view, head, count int) int {
	if v.span == nil || v.span.Count == 0 {
		return head + count
	}
	if count <= v.span.Count {
		return -1
	}
	return head + 1 + count - v.span.Count
}

// validCut reports whether a compaction of h at c gives a valid history,
// compacting two messages at least and keeping two.
func validCut(h []processor.Message, c cut) bool {
	return c.middle() >= 2 && c.start <= len(h)-2 && !answers(h[c.start])
}

// usable reports whether a compaction of h at c gives a valid history
// under the triggers.
func (w *Window) usable(h []processor.Message, c cut) bool {
	if !validCut(h, c) {
		return false
	}
	n := c.head + 1 + len(h) - c.start
	if w.maxMessages > 0 && n > w.maxMessages {
		return false
	}
	return w.tokenTrigger == 0 || processor.ContentTokens(h[:c.head])+processor.ContentTokens(h[c.start:]) <= w.tokenTrigger
}

// tooEarly reports whether a cut of h at start keeps too much more than
// one at want (bringing the next compaction sooner): more than a
// request's two messages, or with a token trigger alone more than an
// eighth of it.
func (w *Window) tooEarly(h []processor.Message, start, want int) bool {
	if start >= want {
		return false
	}
	if w.tokenTrigger > 0 && w.maxMessages <= 0 {
		return processor.ContentTokens(h[start:want]) > w.tokenTrigger/8
	}
	return want-start > 2
}

// readyFor returns the summary written ahead that a compaction of v at c
// can use now, the one whose cut is closest to c's (an earlier one first),
// and the jobs still being written for it. One whose cut is too early is
// used only when the compaction waited for it or another process wrote
// it. One too late to bring v under the triggers is used all the same:
// the next compaction, due at once, folds it in.
func (w *Window) readyFor(history []processor.Message, v view, c cut) (best *job, writing []*job) {
	dist := -1
	consider := func(j *job, close bool) {
		start := startIn(v, c.head, j.count)
		if start < 0 || j.head != c.head || !validCut(v.msgs, cut{head: c.head, start: start}) || (close && w.tooEarly(v.msgs, start, c.start)) {
			return
		}
		d := 2 * (c.start - start)
		if start > c.start {
			d = 2*(start-c.start) + 1
		}
		end := c.head + j.count
		if (dist >= 0 && d >= dist) || end > len(history)-1 || digestOf(history[:end]) != j.digest {
			return
		}
		best, dist = j, d
	}
	mine := map[Digest]bool{}
	for _, j := range w.jobs.of(v.key, w.opts.Now()) {
		if j.head != c.head {
			continue
		}
		mine[j.digest] = true
		start := startIn(v, c.head, j.count)
		j.mu.Lock()
		done, committed := j.state == jobDone, j.committed
		if !done && start >= 0 && validCut(v.msgs, cut{head: c.head, start: start}) && (committed || !w.tooEarly(v.msgs, start, c.start)) {
			j.committed = true
			writing = append(writing, j)
		}
		j.mu.Unlock()
		if done {
			consider(j, !committed)
		}
	}
	for _, s := range v.prepared {
		if !mine[s.Digest] { // written by another process
			consider(&job{head: s.Head, count: s.Count, digest: s.Digest, prose: s.Summary}, false)
		}
	}
	return best, writing
}

// await waits for j to be written, writing it itself when nobody took it;
// false when ctx ended first or the job was abandoned.
func (w *Window) await(ctx context.Context, j *job) bool {
	if j.take() {
		w.write(ctx, j)
	}
	select {
	case <-j.done:
		return j.written()
	case <-ctx.Done():
		return false
	}
}

// fromAhead compacts v with a summary written ahead when one is ready.
// Otherwise, under the hard limits, it defers the compaction (v goes out
// as it is) and sees that the summary is being written; past them, it
// waits for one this window is writing, not for another process, which
// may have died. It returns nil, and the time it waited, when the
// compaction must write its summary now.
func (w *Window) fromAhead(ctx context.Context, history []processor.Message, v view, c cut) ([]processor.Message, time.Duration, error) {
	best, writing := w.readyFor(history, v, c)
	if best != nil {
		return w.applyReady(ctx, history, v, best, 0), 0, nil
	}
	h := v.msgs
	if !over(h, w.opts.HardMessages, w.opts.HardTokens) {
		if len(writing) == 0 && w.aheadOn(ctx) {
			// The span projected before the trigger: the one another
			// process may be writing.
			w.prepareAt(ctx, history, v, w.projected(h), true)
		}
		w.emit(ctx, EventDeferred, Event{MessagesBefore: len(h), TokensBefore: processor.ContentTokens(h), Key: v.key})
		return h, 0, nil
	}
	began := w.opts.Now()
	for _, j := range writing {
		if w.await(ctx, j) {
			return w.applyReady(ctx, history, v, j, w.opts.Now().Sub(began)), 0, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
	}
	return nil, w.opts.Now().Sub(began), nil
}

// applyReady compacts v with the summary j wrote ahead, or, when it wrote
// none that fits, the fallback's, written now.
func (w *Window) applyReady(ctx context.Context, history []processor.Message, v view, j *job, waited time.Duration) []processor.Message {
	c := cut{head: j.head, start: startIn(v, j.head, j.count)}
	h := v.msgs
	p := w.planAt(ctx, v, c, w.clearEnd(h, c.start))
	ev := Event{MessagesBefore: len(h), TokensBefore: processor.ContentTokens(h), Summarized: p.summed}
	w.emit(ctx, EventStarted, ev)
	began := w.opts.Now()
	sum, f := w.complete(ctx, w.briefOf(p), j.prose, j.failure, false)
	if sum == "" {
		w.uncompacted(ctx, ev, f.err, f.reason, 0)
		return h
	}
	j.mu.Lock()
	j.used = true
	j.mu.Unlock()
	ev.Prepared, ev.Waited, ev.SummarizerUsage = true, waited, j.usage
	return w.finish(ctx, history, v, p, sum, f, j, ev, began)
}

// runner returns the window's Runner, starting its own Pool on first use.
func (w *Window) runner() Runner {
	if w.opts.Background != nil {
		return w.opts.Background
	}
	w.poolOnce.Do(func() { w.pool = NewPool(w.opts.Pool) })
	return w.pool
}

// Close stops the Pool the window started (not Options.Background),
// waiting until ctx ends for the summaries being written, and abandons the
// others; nothing half-written is saved. After Close the window writes
// its summaries in the foreground.
func (w *Window) Close(ctx context.Context) error {
	w.closed.Store(true)
	var err error
	if w.opts.Background == nil {
		w.poolOnce.Do(func() {}) // no pool is started after this
		if w.pool != nil {
			err = w.pool.Close(ctx)
		}
	}
	for _, j := range w.jobs.take(nil) {
		w.drop(j, "closed")
	}
	return err
}
