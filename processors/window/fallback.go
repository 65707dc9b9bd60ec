package window

import (
	"context"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// retry returns s, a span found under k for history after its head, or,
// when s holds a fallback's summary and the summarizer now writes one for
// its messages, a span with that summary, saved in s's place. When
// summaries are written ahead, the summarizer writes it in the background
// for a later request. It asks only when the request is paid for, the
// payer's breaker is closed and this window has not asked for the same
// span within the breaker's cool-down.
func (w *Window) retry(ctx context.Context, history []processor.Message, head int, k Key, s *Span) *Span {
	now := w.opts.Now()
	if !s.Fallback || s.Count < 1 || unpaid(ctx) || w.breakerOpen(payerOf(ctx), false) ||
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
	w.runner().Go(payerOf(ctx), func(rctx context.Context) {
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
