package window

import (
	"context"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// retry returns s, a span found under k for history (its head ending at
// head), or, when s holds a fallback's summary and the summarizer now
// writes one for the messages s stands for, a span with that summary,
// which it saves in s's place. When summaries are written ahead, the
// summarizer writes it in the background and s is returned; a later
// request gets it. The summarizer is asked only when the request may pay
// (see WithoutSummarizer), the payer's breaker is not resting, and this
// window has not asked for the same span within the breaker's cool-down;
// its failure counts toward the breaker and leaves s as it is.
func (w *Window) retry(ctx context.Context, history []processor.Message, head int, k Key, s *Span) *Span {
	if !s.Fallback || s.Count < 1 || unpaid(ctx) || w.breakerResting(payerOf(ctx)) ||
		!w.memo.mayRetry(s.Digest, w.now(), w.breakerCooldown) {
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
		w.memo.trust(summary.Ref(span.Summary))
		if err := w.store.Save(ctx, k, span); err != nil {
			w.storeFailed(ctx, "save", err)
		}
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
