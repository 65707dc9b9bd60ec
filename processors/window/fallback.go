package window

import (
	"context"
	"strings"

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
	prev, prevFacts, fresh, replaced := w.sortMiddle(ctx, history[head:end])
	// The outputs the span cleared go to the summarizer with the rest, as
	// when it was made.
	fresh = append(fresh, history[end:end+s.Cleared]...)
	if len(fresh) == 0 {
		return s
	}
	facts := w.factsOf(fresh, prevFacts, replaced)
	fresh = w.clipForSummary(fresh)
	span := *s
	rewrite := func(ctx context.Context) bool {
		text, f := w.ask(ctx, fresh, prev, replaced-len(facts)-2)
		if f != nil || ctx.Err() != nil {
			return false
		}
		span.Summary, span.Fallback = summary.WithFacts(text, facts), false
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

// sortMiddle sorts the messages of a middle to summarize: the prose of the
// summaries of the trusted markers among them, joined (what the new summary
// merges), their facts sections, joined (what the new facts merge), and the
// other messages (what it summarizes), with the characters of
// them all (what the summary replaces).
func (w *Window) sortMiddle(ctx context.Context, middle []processor.Message) (prev, prevFacts string, fresh []processor.Message, replaced int) {
	var previous, facts []string
	fresh = make([]processor.Message, 0, len(middle))
	for _, m := range middle {
		replaced += processor.Chars(m)
		if s, ref, ok := summary.ParseMarker(m); ok && w.trusted(ctx, ref) {
			prose, f := summary.SplitFacts(s)
			if prose != "" {
				previous = append(previous, prose)
			}
			if f != "" {
				facts = append(facts, f)
			}
			continue
		}
		fresh = append(fresh, m)
	}
	return strings.Join(previous, "\n\n"), strings.Join(facts, "\n"), fresh, replaced
}
