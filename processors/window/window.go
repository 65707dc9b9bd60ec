// Package window is abridge's sliding-window processor. Once a history is
// too long (more than a number of messages, or estimated prompt tokens
// above a threshold), it keeps the head run (the start of the conversation
// through the first plain text answer), replaces the middle with one
// summary marker (a user prompt holding a hand-off note) and keeps a tail
// of recent messages, never splitting a tool call from its returns. A
// previous marker is merged into the next summary rather than summarized
// again.
//
// What the window summarized is kept in a [Store] found by content, so
// each message is summarized about once whether the host keeps the
// processed history, keeps its full history, or decodes it afresh for
// every request (a proxy), and across processes sharing a store. The
// summary a compaction will need is written ahead, in the background (see
// [Options.Ahead]), so requests do not wait for it; until it is ready they
// go out uncompacted under hard limits. A summarizer that fails falls back
// to an offline digest, so a request never fails because of its summary,
// and a marker is always smaller than what it replaces, or nothing is
// compacted.
//
// The window depends on packages processor, summary (the marker format and
// the facts) and summarizer (the [summarizer.Summarizer] it calls and the
// offline digest it falls back to), and links no provider SDK. It reports what
// it does through [Options.OnEvent]; package windowlog writes those events
// to a zap logger.
package window

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// Defaults of [Options].
const (
	// DefaultMaxMessages is the count trigger.
	DefaultMaxMessages = 40
	// DefaultTriggerPercent is the share of the context window that
	// triggers compaction.
	DefaultTriggerPercent = 70
	// DefaultTimeout bounds one summarizer call.
	DefaultTimeout = 90 * time.Second
	// DefaultBreakerFailures is how many summarizer failures in a row
	// open the circuit breaker.
	DefaultBreakerFailures = 3
	// DefaultBreakerCooldown is how long the open breaker rests.
	DefaultBreakerCooldown = 5 * time.Minute
	// DefaultSummaryClip is the characters each text is clipped to for
	// the summarizer.
	DefaultSummaryClip = 300
)

// Errors reported in [Event.Err] when a summary is not used. An empty
// summary is reported as summary.ErrEmpty.
var (
	// ErrSummaryTooLarge: the summary marker is not smaller than the
	// messages it would replace.
	ErrSummaryTooLarge = errors.New("summary not smaller than the messages it replaces")
	// ErrNoSmallerSummary: no marker, not even a digest sized to fit, is
	// smaller than the messages it would replace.
	ErrNoSmallerSummary = errors.New("no summary smaller than the messages it would replace")
	// ErrCircuitOpen: the summarizer failed too often in a row and is not
	// called until the cool-down has passed.
	ErrCircuitOpen = errors.New("summarizer circuit open")
	// ErrUnpaid: the request is Unpaid (see Request); the
	// offline digest wrote its summary.
	ErrUnpaid = errors.New("summarizer not called: nobody pays for this request's summary")
)

// Options configures a [Window]. The zero value means all defaults: the
// count trigger at 40 messages, no token trigger, the offline digest as
// summarizer, an in-memory store.
type Options struct {
	// Summarizer writes the summaries. Nil means the offline digest
	// (summarizer.NewDigest), which never calls a model.
	Summarizer summarizer.Summarizer
	// Fallback writes the summary when Summarizer's cannot be used (error,
	// timeout, empty or too large) and while its breaker is open. Nil
	// means the offline digest, which also fills in when Fallback fails.
	Fallback summarizer.Summarizer
	// Store keeps what the window summarized; nil means a
	// [NewMemoryStore] of default size. Windows sharing one, or processes
	// sharing package session's, reuse each other's summaries.
	Store Store
	// MaxMessages triggers compaction when the history has more messages;
	// 0 means DefaultMaxMessages (40), a negative value no count trigger.
	MaxMessages int
	// KeepMessages is the size of the tail before it is moved back so no
	// tool call is separated from its returns: at least 2; 0 means
	// max(4, MaxMessages/2), MaxMessages 40 when not positive.
	KeepMessages int
	// ContextWindow, when positive, is the model's context size in
	// tokens: compaction also triggers past TriggerPercent of it.
	ContextWindow int
	// TriggerPercent is that share; 0 means DefaultTriggerPercent (70).
	TriggerPercent int
	// TriggerTokens, when positive, triggers compaction once the prompt
	// passes this many tokens, whatever ContextWindow says. With a token
	// trigger the tail is shortened to fit in half of it.
	TriggerTokens int
	// TailOutputs, when positive, clears at each compaction the tool
	// outputs of the tail but those of its last TailOutputs rounds: they
	// become placeholders (summary.Placeholder) and go to the summarizer.
	TailOutputs int
	// FactsChars bounds, in characters, the facts section each summary carries
	// (see summary.Facts); 0 means summary.DefaultFactsChars (2000), a
	// negative value none.
	FactsChars int
	// SummaryClip clips each text the summarizer is given to this many
	// characters (see summary.Clip); 0 means DefaultSummaryClip (300), a
	// negative value none.
	SummaryClip int
	// Recall makes the placeholders of TailOutputs say that the recall
	// tool returns what they stand for (see agent.WithRecall).
	Recall bool
	// KeepUserTurns, when positive, makes the tail the last KeepUserTurns
	// user turns and what follows, unless that leaves fewer than 2
	// messages to compact.
	KeepUserTurns int
	// Timeout bounds each Summarizer and Fallback call; 0 means
	// DefaultTimeout (90s).
	Timeout time.Duration
	// BreakerFailures is how many summarizer failures in a row, per payer
	// (see Request.Payer), make the window use Fallback for BreakerCooldown;
	// 0 means DefaultBreakerFailures (3).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open before one
	// request tries the summarizer again; 0 means DefaultBreakerCooldown
	// (5m).
	BreakerCooldown time.Duration
	// RequestFault, when set, reports whether a summarizer error was the
	// request's doing (a provider refusing its content): such a failure
	// does not count toward the breaker.
	RequestFault func(err error) bool
	// Ahead is how many requests ahead of a trigger the summary the next
	// compaction will need starts being written, in the background; it is
	// kept in the store as a prepared span. Until it is ready, requests
	// go out uncompacted under HardMessages and HardTokens, and wait only
	// past them. 0 means DefaultAhead (5); a negative value writes each
	// summary when due, the request waiting, as the offline digest does.
	Ahead int
	// Background runs the summaries written ahead and the rewrites of
	// fallback summaries. Nil means a [Pool] of the window's own,
	// configured by Pool and stopped by Close.
	Background Runner
	// Pool configures that Pool.
	Pool PoolOptions
	// HardMessages bounds the messages of a history that goes out
	// uncompacted while its summary is written; 0 means twice
	// MaxMessages, a negative value no bound but the provider's.
	HardMessages int
	// HardTokens bounds its tokens; 0 means 95% of ContextWindow, else
	// twice TriggerTokens, else none; a negative value none.
	HardTokens int
	// ClaimTTL is how long a claim lasts unrenewed (see [Claimer]); 0
	// means DefaultClaimTTL (30s).
	ClaimTTL time.Duration
	// OnEvent, when set, is called synchronously for every event, from
	// the background work too: it must be safe for concurrent use.
	OnEvent func(ctx context.Context, e Event)
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// EventType tells what an [Event] reports.
type EventType int

// Event types. A compaction reports Started, then Failed when the
// summarizer's summary was not used, then Finished.
const (
	// EventStarted: a compaction began (sizes before, Summarized).
	EventStarted EventType = iota + 1
	// EventFinished: a compaction ended (sizes, summary, how it was
	// written, how long the request waited).
	EventFinished
	// EventFailed: the summarizer's summary was not used (Err, Reason);
	// the fallback's was. When nothing was compacted (ErrNoSmallerSummary,
	// or Reason "canceled": ctx ended), it ends the compaction.
	EventFailed
	// EventStoreFailed: the [Store] failed (Err, Reason its method); the
	// request goes on without it.
	EventStoreFailed
	// EventCleared: clearing old tool outputs (Options.TailOutputs)
	// brought the history under the triggers without a summary.
	EventCleared
	// EventAheadStarted: the summary of the next compaction's span was
	// queued to be written in the background (its brief, the facts
	// extracted, is made there too: SummaryInput is not known yet).
	EventAheadStarted
	// EventAheadFinished: a summary written ahead is ready, or could not
	// be written (Err, Reason); ctx is the request's that started it.
	EventAheadFinished
	// EventAheadWasted: a summary written ahead, or to be, was abandoned
	// unused (Reason; SummaryInput is what writing it cost).
	EventAheadWasted
	// EventDeferred: a trigger fired before its summary was ready; the
	// history went out uncompacted.
	EventDeferred
)

var eventNames = []string{EventStarted: "started", EventFinished: "finished", EventFailed: "failed",
	EventStoreFailed: "store failed", EventCleared: "cleared", EventAheadStarted: "ahead started",
	EventAheadFinished: "ahead finished", EventAheadWasted: "ahead wasted", EventDeferred: "deferred"}

// String returns the event's name ("started", "ahead wasted", ...), or
// "event(N)".
func (t EventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "event(" + strconv.Itoa(int(t)) + ")"
}

// Event reports what a window did.
type Event struct {
	// Type is what happened.
	Type EventType
	// MessagesBefore and TokensBefore measure the history given, its
	// previous compaction applied. Tokens before and after are counted
	// alike (processor.ContentTokens), so they compare.
	MessagesBefore, TokensBefore int
	// MessagesAfter and TokensAfter measure the compacted history
	// (EventFailed, EventFinished).
	MessagesAfter, TokensAfter int
	// Summarized is the number of messages newly folded into the summary.
	Summarized int
	// SummaryChars is the size of the summary used.
	SummaryChars int
	// Duration is how long the compaction, summary or failed call took.
	Duration time.Duration
	// Err is why the summary was not used, or the store's error.
	Err error
	// Fallback is true when the summary came from the fallback.
	Fallback bool
	// Shared is true for a summary written for a concurrent request.
	Shared bool
	// Summary is the marker's summary, facts included.
	Summary string
	// Replaced describes the messages the marker replaced, as the window
	// saw them (a previous marker is one entry).
	Replaced []Replaced
	// From and To delimit, in the history given, what the marker stands for.
	From, To int
	// Key is the key the span is saved under.
	Key Key
	// Span is the content digest of the compacted span.
	Span Digest
	// SummarizerUsage is what the summarizer's calls used (processor.AddUsage).
	SummarizerUsage processor.Usage
	// Prepared is true when the summary had been written ahead.
	Prepared bool
	// Waited is how long the request waited for its summary.
	Waited time.Duration
	// SummaryInput is the characters given to the summarizer
	// (EventAheadFinished, EventAheadWasted).
	SummaryInput int
	// Reason names a failure briefly: "timeout", "summarizer error",
	// "empty summary", "summary too large", "circuit open", "unpaid",
	// "no smaller summary", "canceled" (EventFailed); the store's method
	// (EventStoreFailed); "superseded", "idle", "closed", "abandoned" or
	// "queue full" (EventAheadWasted).
	Reason string
}

// Replaced describes one message a summary marker replaced.
type Replaced struct {
	// Role is "system", "user", "tool" or "assistant": a request holding
	// a tool return is "tool", one holding a system prompt only "system".
	Role string
	// Tools names the tools the message called or answered, in order.
	Tools []string
	// Chars is the message's size in characters (processor.Chars).
	Chars int
	// Marker is true for a previous summary marker.
	Marker bool
}

// describe returns the description of the messages ms.
func (w *Window) describe(ms []processor.Message) []Replaced {
	out := make([]Replaced, len(ms))
	for i, m := range ms {
		r := Replaced{Chars: processor.Chars(m), Marker: summary.IsMarker(m), Role: "user"}
		system := m.Kind == processor.Request
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.ToolReturn:
				r.Role = "tool"
				r.Tools = append(r.Tools, p.ToolName)
			case processor.RetryPrompt:
				if p.ToolName != "" {
					r.Tools = append(r.Tools, p.ToolName)
				}
			case processor.ToolCall:
				r.Tools = append(r.Tools, p.ToolName)
			}
			if _, ok := p.(processor.SystemPrompt); !ok {
				system = false
			}
		}
		switch {
		case m.Kind == processor.Response:
			r.Role = "assistant"
		case system && len(m.Parts) > 0:
			r.Role = "system"
		}
		out[i] = r
	}
	return out
}

// Window is the sliding-window processor. It is safe for concurrent use by
// many conversations. Beyond its store it keeps a few bounded maps keyed
// by content; nothing it returned is ever written again.
type Window struct {
	opts   Options            // with the defaults filled in
	digest *summarizer.Digest // the offline digest
	facts  *summary.Facts     // nil: no facts section

	maxMessages  int               // count trigger; <= 0 disables
	keep         int               // tail size in messages
	headLimit    int               // the head run must end within this many messages
	tokenTrigger int               // tokens that trigger; 0 disables
	framing      int               // characters of a marker without its summary
	blank        processor.Message // a marker without a summary, to hold the marker's place

	breakers breakers                // a circuit breaker per payer (see Request.Payer)
	refs     memo[string, bool]      // references of markers a window wrote
	waits    memo[Key, int]          // the size a conversation's middle must reach to be compacted again
	retried  memo[Digest, time.Time] // fallback spans the summarizer was asked again for, and when
	dropped  memo[Digest, bool]      // summaries written ahead this window abandoned
	flights  flights                 // summaries being written, by the digest of what they cover

	pool     *Pool // the window's own, when Options.Background is nil
	poolOnce sync.Once
	closed   atomic.Bool
	jobs     jobs
	holder   string // this window's name in a shared store's claims
}

var _ processor.Processor = (*Window)(nil)

// New returns a Window configured by opts.
func New(opts Options) *Window {
	w := &Window{digest: summarizer.NewDigest(summarizer.DigestOptions{}), blank: summary.Marker(""), holder: rand.Text()}
	w.framing = processor.Chars(w.blank)
	if opts.Summarizer == nil {
		opts.Summarizer = w.digest
	}
	if opts.Fallback == nil {
		opts.Fallback = w.digest
	}
	if opts.Store == nil {
		opts.Store = NewMemoryStore(0)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FactsChars >= 0 {
		w.facts = summary.NewFacts(summary.FactsOptions{MaxChars: opts.FactsChars})
	}
	opts.SummaryClip = cmp.Or(opts.SummaryClip, DefaultSummaryClip)
	opts.Ahead = cmp.Or(opts.Ahead, DefaultAhead)
	opts.Timeout = positiveOr(opts.Timeout, DefaultTimeout)
	opts.BreakerFailures = positiveOr(opts.BreakerFailures, DefaultBreakerFailures)
	opts.BreakerCooldown = positiveOr(opts.BreakerCooldown, DefaultBreakerCooldown)
	opts.ClaimTTL = positiveOr(opts.ClaimTTL, DefaultClaimTTL)
	w.maxMessages = cmp.Or(opts.MaxMessages, DefaultMaxMessages) // negative: no count trigger
	w.keep = max(4, positiveOr(opts.MaxMessages, DefaultMaxMessages)/2)
	if opts.KeepMessages > 0 {
		w.keep = max(2, opts.KeepMessages)
	}
	w.headLimit = max(4, w.keep/2)
	switch {
	case opts.TriggerTokens > 0:
		w.tokenTrigger = opts.TriggerTokens
	case opts.ContextWindow > 0:
		w.tokenTrigger = max(1, opts.ContextWindow*positiveOr(opts.TriggerPercent, DefaultTriggerPercent)/100)
	}
	opts.HardMessages = cmp.Or(opts.HardMessages, 2*w.maxMessages)
	if opts.HardTokens == 0 {
		switch {
		case opts.ContextWindow > 0:
			opts.HardTokens = opts.ContextWindow * 95 / 100
		case w.tokenTrigger > 0:
			opts.HardTokens = 2 * w.tokenTrigger
		}
	}
	w.opts = opts
	return w
}

// positiveOr returns v when it is positive, else d.
func positiveOr[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

// SummaryClip returns the size each text is clipped to for the summarizer
// (Options.SummaryClip), or a negative number when nothing is clipped.
func (w *Window) SummaryClip() int { return w.opts.SummaryClip }

// Process returns history unchanged while it is within bounds; once a
// trigger fires it returns the head, one summary marker and the tail. When
// the store has a summary for the start of history (the host kept its full
// history, or sent it again), the same cut and marker are applied, and a
// new compaction happens only when that result outgrows the bounds. A
// summarizer or store failure never fails the call. Process fails only on
// an empty history or when ctx is done.
//
// The result belongs to the caller: it is history itself when nothing
// changed, a new slice otherwise (sharing the unchanged messages), and the
// window never writes to it again.
func (w *Window) Process(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v := w.view(ctx, history)
	if !w.triggered(v.msgs) {
		w.prepare(ctx, history, v)
		return v.msgs, nil
	}
	if w.opts.TailOutputs > 0 && (w.maxMessages <= 0 || len(v.msgs) <= w.maxMessages) {
		// Clearing old tool outputs may bring the history under the token
		// trigger without a summary.
		if out, ok := w.clearOnly(ctx, history, v); ok {
			return out, nil
		}
	}
	return w.compact(ctx, history, v, false)
}

// clearOnly clears the tool outputs of v after its head and marker but
// those of the last TailOutputs rounds, and returns the result when that
// brings it under every trigger, saving the clear as a span so that the
// same history gets the same result.
func (w *Window) clearOnly(ctx context.Context, history []processor.Message, v view) ([]processor.Message, bool) {
	h := v.msgs
	span := Span{Head: v.head}
	if v.span != nil {
		span.Count, span.Summary, span.Fallback = v.span.Count, v.span.Summary, v.span.Fallback
	}
	from := v.head // the first message the clear may touch, in h
	if span.Count > 0 {
		from++ // after the span's marker (a span that only cleared has none)
	}
	clearEnd := w.clearEnd(h, from)
	if clearEnd <= from {
		return nil, false
	}
	out := w.splice(h, from, from, clearEnd)
	if w.triggered(out) || processor.Validate(out) != nil {
		return nil, false
	}
	span.Cleared = clearEnd - from
	end := span.Head + span.Count + span.Cleared
	span.Digest, span.Last = digestOf(history[:end]), keyOf("", history[end-1:end])
	w.save(ctx, v.key, span)
	w.emit(ctx, EventCleared, Event{
		MessagesBefore: len(h), TokensBefore: processor.ContentTokens(h),
		MessagesAfter: len(out), TokensAfter: processor.ContentTokens(out),
	})
	return out, true
}

// Compact compacts history now, whatever the triggers say (after a context
// overflow, say). When the usual tail leaves fewer than 2 messages to
// compact, it keeps only the last request (and the call it answers). It
// compacts even a middle smaller than any marker, with the smallest digest
// (reporting ErrNoSmallerSummary): the result has fewer messages, though
// not fewer characters. With nothing to compact it returns history with
// the store's summary for its start applied.
func (w *Window) Compact(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.compact(ctx, history, w.view(ctx, history), true)
}

// view is a history with a saved span applied.
type view struct {
	msgs     []processor.Message
	head     int
	key      Key    // of the head: where its spans are saved
	span     *Span  // the span applied, nil when none
	prepared []Span // the prepared spans the store has under key, not checked against the history
}

// view applies to history the longest span its store has for it. The
// head is the one split finds, or else the leading requests: a head that
// ended at the first response when its compaction was made stays there,
// while the full history may since have grown a text answer within the
// head's bound.
func (w *Window) view(ctx context.Context, history []processor.Message) view {
	head := w.split(history, false).head
	v := view{msgs: history, head: head}
	scope := RequestOf(ctx).Conversation
	var s *Span
	if head < len(history)-1 {
		v.key = keyOf(scope, history[:head+1])
		s, v.prepared = w.lookup(ctx, history, head, v.key)
	}
	if s == nil {
		lead := slices.IndexFunc(history, func(m processor.Message) bool { return m.Kind == processor.Response })
		if lead < 0 || lead >= head {
			return v
		}
		k := keyOf(scope, history[:lead+1])
		if s, _ = w.lookup(ctx, history, lead, k); s == nil {
			return v
		}
		v.prepared = nil
		head, v.head, v.key = lead, lead, k
	}
	s = w.retry(ctx, history, head, v.key, s)
	var marker []processor.Message // none for a span that only cleared
	if s.Count > 0 {
		marker = append(marker, summary.Marker(s.Summary))
	}
	end := head + s.Count
	v.msgs, v.span = w.splice(history, head, end, end+s.Cleared, marker...), s
	return v
}

// lookup returns the longest span the store has for history after its
// head (the most recent of equals; nil when none), and the prepared spans
// it has under k but those this window dropped: they stay unused, as they
// must for a host that keeps its processed history, whose key has changed
// since.
func (w *Window) lookup(ctx context.Context, history []processor.Message, head int, k Key) (*Span, []Span) {
	spans, err := w.opts.Store.Spans(ctx, k, func() []Key { return lasts(history, head) })
	if err != nil {
		w.storeFailed(ctx, "spans", err)
		return nil, nil
	}
	prepared := slices.DeleteFunc(slices.Clone(spans), func(s Span) bool { return !s.Prepared || w.dropped.get(s.Digest) })
	used := slices.DeleteFunc(spans, func(s Span) bool { return s.Prepared })
	length := func(s Span) int { return s.Count + s.Cleared }
	slices.SortStableFunc(used, func(a, b Span) int { return length(b) - length(a) })
	for i, s := range used {
		end := head + length(s)
		if s.Head == head && s.Count >= 0 && s.Cleared >= 0 && length(s) > 0 && end < len(history) &&
			(s.Count == 0 || !answers(history[head+s.Count])) && digestOf(history[:end]) == s.Digest {
			return &used[i], prepared
		}
	}
	return nil, prepared
}

// triggered reports whether h is over a trigger.
func (w *Window) triggered(h []processor.Message) bool { return over(h, w.maxMessages, w.tokenTrigger) }

// over reports whether h has more than messages messages or tokens
// estimated tokens; a bound that is not positive is none.
func over(h []processor.Message, messages, tokens int) bool {
	return (messages > 0 && len(h) > messages) || (tokens > 0 && processor.EstimateTokens(h) > tokens)
}

// compact replaces the middle of v.msgs with a summary marker.
func (w *Window) compact(ctx context.Context, history []processor.Message, v view, force bool) ([]processor.Message, error) {
	h := v.msgs
	c := w.split(h, force)
	minMiddle := 2
	if force {
		minMiddle = 1
	}
	if c.middle() < minMiddle {
		return h, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var waited time.Duration // for a summary written ahead
	if !force && w.aheadOn(ctx) {
		var out []processor.Message
		var err error
		if out, waited, err = w.fromAhead(ctx, history, v, c); out != nil || err != nil {
			return out, err
		}
	}
	p := w.planAt(ctx, v, c, w.clearEnd(h, c.start))
	if processor.Validate(w.splice(h, p.head, p.start, p.clearEnd, w.blank)) != nil {
		// Only an invalid input leads here; leave it as it came.
		return h, nil
	}
	// The wait is keyed by the head as every host mode sees it.
	waitKey := v.key
	if v.span != nil {
		waitKey = keyOf(RequestOf(ctx).Conversation, h[:c.head+1])
	}
	if !force && (p.replaced <= w.framing || p.replaced < w.waits.get(waitKey)) {
		// No marker could be smaller than this middle, or none was lately:
		// wait until it has grown.
		return h, nil
	}

	ev := Event{MessagesBefore: len(h), TokensBefore: processor.ContentTokens(h), Summarized: len(p.fresh), Waited: waited}
	w.emit(ctx, EventStarted, ev)
	began := w.opts.Now()
	write := func() result {
		var r result
		mctx, meter := processor.WithUsageMeter(ctx)
		r.summary, r.failure, r.err = w.summarize(mctx, w.briefOf(p), force)
		r.usage, _ = meter.Usage()
		return r
	}
	var res result
	var err error
	if RequestOf(ctx).Unpaid {
		// A digest costs nothing: no flight to share.
		res = write()
	} else {
		res, ev.Shared, err = w.flights.do(ctx, digestOf(history[:p.end()]), write)
	}
	if err == nil {
		err = res.err
	}
	if err != nil {
		w.uncompacted(ctx, ev, err, "canceled", w.opts.Now().Sub(began))
		return nil, err
	}
	if res.summary == "" {
		// Compacting would make the request bigger: send it as it is, and
		// do not try again before the middle has grown.
		w.waits.put(waitKey, p.replaced+max(p.replaced/2, w.framing), nil)
		w.uncompacted(ctx, ev, res.failure.err, res.failure.reason, res.failure.took)
		return h, nil
	}
	if !ev.Shared {
		ev.SummarizerUsage = res.usage
	}
	return w.finish(ctx, history, v, p, res.summary, res.failure, nil, ev, began), nil
}

// uncompacted reports that the compaction ev began compacted nothing.
func (w *Window) uncompacted(ctx context.Context, ev Event, err error, reason string, took time.Duration) {
	ev.MessagesAfter, ev.TokensAfter = ev.MessagesBefore, ev.TokensBefore
	ev.Err, ev.Reason, ev.Duration = err, reason, took
	w.emit(ctx, EventFailed, ev)
}

// finish compacts v by p with the summary sum (f: why it is not the
// summarizer's), saves the span unless the summary was shared, abandons
// the conversation's other summaries written ahead, and reports the
// compaction ev began at began.
func (w *Window) finish(ctx context.Context, history []processor.Message, v view, p plan, sum string, f *failure, used *job, ev Event, began time.Time) []processor.Message {
	h := v.msgs
	out := w.splice(h, p.head, p.start, p.clearEnd, summary.Marker(sum))
	w.refs.put(summary.Ref(sum), true, nil)
	end := p.end()
	d := digestOf(history[:end])
	if !ev.Shared {
		w.save(ctx, v.key, Span{Head: p.head, Count: p.covered, Cleared: p.cleared, Digest: d, Last: keyOf("", history[end-1:end]),
			Summary: sum, Fallback: (f != nil && f.retry) || (v.span != nil && v.span.Fallback)})
	}
	for _, j := range w.jobs.take(&v.key) {
		if j != used {
			w.drop(j, "superseded")
		}
	}
	ev.MessagesAfter, ev.TokensAfter = len(out), processor.ContentTokens(out)
	ev.SummaryChars, ev.Fallback = len(sum), f != nil
	ev.Summary, ev.Replaced = sum, w.describe(h[p.head:p.start])
	ev.From, ev.To, ev.Key, ev.Span = p.head, p.head+p.covered, v.key, d
	if f != nil {
		failed := ev
		failed.Err, failed.Reason, failed.Duration = f.err, f.reason, f.took
		w.emit(ctx, EventFailed, failed)
	}
	ev.Duration = w.opts.Now().Sub(began)
	if ev.Prepared {
		ev.Duration += ev.Waited
	} else {
		ev.Waited += ev.Duration
	}
	w.emit(ctx, EventFinished, ev)
	return out
}

// save saves span under k unless the request is unpaid; a store's failure
// is reported.
func (w *Window) save(ctx context.Context, k Key, span Span) {
	if RequestOf(ctx).Unpaid {
		return
	}
	if err := w.opts.Store.Save(ctx, k, span); err != nil {
		w.storeFailed(ctx, "save", err)
	}
}

// clearEnd returns where the outputs to clear in the tail h[start:] end:
// before the last TailOutputs tool rounds; start when none are cleared.
func (w *Window) clearEnd(h []processor.Message, start int) int {
	if w.opts.TailOutputs <= 0 {
		return start
	}
	rounds := 0
	for i := len(h) - 2; i >= start; i-- {
		if h[i].HasToolCalls() {
			if rounds++; rounds == w.opts.TailOutputs {
				return i
			}
		}
	}
	return start
}

// splice returns h with h[head:start] replaced by marker (a summary
// marker, or none) and the tool outputs of h[start:clearEnd] cleared.
func (w *Window) splice(h []processor.Message, head, start, clearEnd int, marker ...processor.Message) []processor.Message {
	out := make([]processor.Message, 0, head+len(marker)+len(h)-start)
	out = append(out, h[:head]...)
	out = append(out, marker...)
	for _, m := range h[start:clearEnd] {
		if parts := summary.ClearParts(m.Parts, w.opts.Recall, nil); parts != nil {
			m.Parts = parts
		}
		out = append(out, m)
	}
	return append(out, h[clearEnd:]...)
}

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

func (w *Window) emit(ctx context.Context, t EventType, ev Event) {
	on := RequestOf(ctx).OnEvent
	if w.opts.OnEvent == nil && on == nil {
		return
	}
	ev.Type = t
	if w.opts.OnEvent != nil {
		w.opts.OnEvent(ctx, ev)
	}
	if on != nil {
		on(ev)
	}
}

// storeFailed reports a failure of the store's method named op.
func (w *Window) storeFailed(ctx context.Context, op string, err error) {
	w.emit(ctx, EventStoreFailed, Event{Err: err, Reason: op})
}
