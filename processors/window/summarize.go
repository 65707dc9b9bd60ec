package window

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// plan is what a compaction of a view at a cut replaces and summarizes.
type plan struct {
	cut
	clearEnd  int // the tail's outputs to clear are h[start:clearEnd]
	covered   int // messages the marker stands for after the head, in the input history
	cleared   int // messages cleared after them
	prev      string
	prevFacts string
	fresh     []processor.Message // the messages to summarize, then the cleared ones
	summed    int                 // how many of fresh are not cleared ones
	replaced  int                 // characters the marker replaces, clearing's saving included
}

// end returns where the plan's span ends in the input history.
func (p plan) end() int { return p.head + p.covered + p.cleared }

// planAt returns the compaction of the view v at c that clears the tool
// outputs of v.msgs[c.start:clearEnd]. The summaries of trusted markers
// in the middle are merged; the other messages are summarized, then the
// cleared ones.
func (w *Window) planAt(ctx context.Context, v view, c cut, clearEnd int) plan {
	h := v.msgs
	p := plan{cut: c, clearEnd: clearEnd, covered: c.middle(), cleared: clearEnd - c.start}
	var prev, facts []string
	for _, m := range h[c.head:c.start] {
		p.replaced += processor.Chars(m)
		if s, ref, ok := summary.ParseMarker(m); ok && w.trusted(ctx, ref) {
			prose, f := summary.SplitFacts(s)
			if prose != "" {
				prev = append(prev, prose)
			}
			if f != "" {
				facts = append(facts, f)
			}
			continue
		}
		p.fresh = append(p.fresh, m)
	}
	p.prev, p.prevFacts = strings.Join(prev, "\n\n"), strings.Join(facts, "\n")
	p.summed = len(p.fresh)
	for i := c.start; i < clearEnd; i++ {
		p.fresh = append(p.fresh, h[i])
		if parts := summary.ClearParts(h[i].Parts, w.opts.Recall, nil); parts != nil {
			cleared := h[i]
			cleared.Parts = parts
			p.replaced += processor.Chars(h[i]) - processor.Chars(cleared)
		}
	}
	if v.span != nil && v.span.Count > 0 {
		p.covered += v.span.Count - 1 // the view's marker stands for them
	}
	return p
}

// brief is what the summarizer is given for a plan.
type brief struct {
	fresh    []processor.Message // the messages to summarize, clipped
	prev     string              // the previous summary to merge them into
	facts    string              // the facts section the summary will carry
	replaced int                 // characters the marker replaces
}

// briefOf returns the brief of p: its messages clipped, the facts read
// from them whole, at most a third of what the marker replaces.
func (w *Window) briefOf(p plan) brief {
	b := brief{fresh: make([]processor.Message, len(p.fresh)), prev: p.prev, replaced: p.replaced}
	for i, m := range p.fresh {
		b.fresh[i], _ = summary.ClipTexts(m, w.opts.SummaryClip)
	}
	if room := (p.replaced - w.framing) / 3; w.facts != nil && room >= 200 {
		b.facts = w.facts.Section(p.fresh, p.prevFacts, room)
	}
	return b
}

// budget returns the characters the summary's marker may take beside the
// facts.
func (b brief) budget() int { return b.replaced - len(b.facts) - 2 }

// chars returns the characters the summarizer is given.
func (b brief) chars() int {
	n := len(b.prev)
	for _, m := range b.fresh {
		n += processor.Chars(m)
	}
	return n
}

// failure describes why the summarizer's summary was not used.
type failure struct {
	err    error
	reason string
	took   time.Duration
	retry  bool // the summarizer could not write a summary: ask again later
}

// summarize returns the summary for b, facts included, from the
// summarizer or, when it cannot be used, from the fallback (then failure
// says why); see complete. It fails only when ctx is done.
func (w *Window) summarize(ctx context.Context, b brief, force bool) (string, *failure, error) {
	if len(b.fresh) == 0 {
		// Only markers in the middle: merge their summaries as they are.
		if w.fits(b.prev, b.budget()) || (force && strings.TrimSpace(b.prev) != "") {
			return summary.WithFacts(b.prev, b.facts), nil, nil
		}
		return "", &failure{err: ErrNoSmallerSummary, reason: "no smaller summary"}, nil
	}
	s, f := w.ask(ctx, b)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	s, f = w.complete(ctx, b, s, f, force)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return s, f, nil
}

// ask returns the summarizer's summary for b, when it writes one whose
// marker is smaller than b's budget, or why it did not. It asks only when
// the request is paid for and the payer's breaker is closed, and counts
// the outcome toward the breaker.
func (w *Window) ask(ctx context.Context, b brief) (string, *failure) {
	began := w.opts.Now()
	var reason string
	var err error
	payer := RequestOf(ctx).Payer
	switch {
	case RequestOf(ctx).Unpaid:
		reason, err = "unpaid", ErrUnpaid
	case w.breakerOpen(payer, true):
		reason, err = "circuit open", ErrCircuitOpen
	default:
		var s string
		s, err = w.call(ctx, w.opts.Summarizer, b.fresh, b.prev)
		if cerr := ctx.Err(); cerr != nil {
			return "", &failure{err: cerr, reason: "canceled"}
		}
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded):
			reason = "timeout"
		case err != nil && errors.Is(err, summary.ErrEmpty):
			reason = "empty summary"
		case err != nil:
			reason = "summarizer error"
		case strings.TrimSpace(s) == "":
			reason, err = "empty summary", summary.ErrEmpty
		case !w.fits(s, b.budget()):
			reason, err = "summary too large", ErrSummaryTooLarge
		}
		w.tally(payer, err)
		if err == nil {
			return strings.TrimSpace(s), nil
		}
	}
	// A summary the summarizer could not write may be written again later.
	return "", &failure{err: err, reason: reason, took: w.opts.Now().Sub(began),
		retry: reason != "summary too large" && reason != "unpaid"}
}

// complete returns the summary for b, facts included: prose, the
// summarizer's, when f is nil and it fits, else the fallback's, or a
// digest sized to fit; and the failure to report. When not even that
// digest fits, the failure is ErrNoSmallerSummary and the summary "", or,
// with force, the smallest found (a forced compaction still leaves fewer
// messages).
func (w *Window) complete(ctx context.Context, b brief, prose string, f *failure, force bool) (string, *failure) {
	if f == nil {
		if s := summary.WithFacts(prose, b.facts); w.fits(s, b.replaced) {
			return s, nil
		}
		f = &failure{err: ErrSummaryTooLarge, reason: "summary too large"}
	}
	fallback := w.opts.Fallback
	if RequestOf(ctx).Unpaid {
		fallback = w.digest
	}
	budget := b.budget()
	s, ferr := w.call(ctx, fallback, b.fresh, b.prev)
	if ctx.Err() != nil {
		return "", f
	}
	if ferr == nil && w.fits(s, budget) {
		return summary.WithFacts(s, b.facts), f
	}
	// A digest bounded by what the middle leaves once the marker's framing
	// is paid for (for a forced compaction, at least a small one).
	room := budget - w.framing - 1
	if force {
		room = max(room, 1)
	}
	best := ""
	if room > 0 {
		s, _ = summarizer.NewDigest(summarizer.DigestOptions{MaxChars: room}).Summarize(ctx, b.fresh, b.prev, "")
		if w.fits(s, budget) {
			return summary.WithFacts(s, b.facts), f
		}
		best = strings.TrimSpace(s)
	}
	g := *f
	if ferr != nil {
		g.err = fmt.Errorf("%w (after %s: %w; the fallback failed too: %w)", ErrNoSmallerSummary, f.reason, f.err, ferr)
	} else {
		g.err = fmt.Errorf("%w (after %s: %w)", ErrNoSmallerSummary, f.reason, f.err)
	}
	g.reason = "no smaller summary"
	if !force || best == "" {
		return "", &g
	}
	return summary.WithFacts(best, b.facts), &g
}

// fits reports whether the marker of summary s is smaller than budget
// characters.
func (w *Window) fits(s string, budget int) bool {
	s = strings.TrimSpace(s)
	return s != "" && w.framing+len(s) < budget
}

// call asks s for the summary of fresh merged with prev, within the
// timeout.
func (w *Window) call(ctx context.Context, s summarizer.Summarizer, fresh []processor.Message, prev string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	return s.Summarize(ctx, fresh, prev, "")
}

// trusted reports whether the marker with reference ref was written by a
// window: this one, or one whose store it shares.
func (w *Window) trusted(ctx context.Context, ref string) bool {
	if w.refs.get(ref) {
		return true
	}
	_, ok, err := w.opts.Store.Summary(ctx, ref)
	if err != nil {
		w.storeFailed(ctx, "summary", err)
		return false
	}
	if ok {
		w.refs.put(ref, true, nil)
	}
	return ok
}

// retry returns s, a span found under k for history after its head, or,
// when s holds a fallback's summary and the summarizer now writes one, a
// span with that summary, saved in its place (in the background, for a
// later request, when summaries are written ahead). It asks at most once
// a breaker's cool-down for a span, and only when the request is paid for
// and the payer's breaker is closed.
func (w *Window) retry(ctx context.Context, history []processor.Message, head int, k Key, s *Span) *Span {
	now := w.opts.Now()
	if !s.Fallback || s.Count < 1 || RequestOf(ctx).Unpaid || w.breakerOpen(RequestOf(ctx).Payer, false) ||
		!w.retried.put(s.Digest, now, func(last time.Time) bool { return now.Sub(last) < w.opts.BreakerCooldown }) {
		return s
	}
	end := head + s.Count
	p := w.planAt(ctx, view{msgs: history}, cut{head: head, start: end}, end+s.Cleared)
	if len(p.fresh) == 0 {
		return s
	}
	b := w.briefOf(p)
	span := *s
	rewrite := func(ctx context.Context) bool {
		text, f := w.ask(ctx, b)
		if f != nil || ctx.Err() != nil {
			return false
		}
		span.Summary, span.Fallback = summary.WithFacts(text, b.facts), false
		w.refs.put(summary.Ref(span.Summary), true, nil)
		w.save(ctx, k, span)
		return true
	}
	if !w.aheadOn(ctx) {
		if rewrite(ctx) {
			return &span
		}
		return s
	}
	values := context.WithoutCancel(ctx)
	w.runner().Go(RequestOf(ctx).Payer, func(rctx context.Context) {
		if rctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithCancel(values)
		defer context.AfterFunc(rctx, cancel)()
		defer cancel()
		rewrite(ctx)
	})
	return s
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

// do runs fn for d unless a call for d is under way; then it waits for its
// result and reports it shared, or, when that call failed (its caller's
// context ended, or fn panicked), runs fn itself. It returns ctx's error
// when ctx ends while it waits.
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
			var forget string
			for id, e := range w.breakers.m {
				forget = id
				if !now.Before(e.openUntil) {
					break
				}
			}
			delete(w.breakers.m, forget)
		}
		b = &breaker{}
		w.breakers.m[payer] = b
	}
	b.failures++
	if b.failures >= w.opts.BreakerFailures {
		b.openUntil = now.Add(w.opts.BreakerCooldown)
	}
}
