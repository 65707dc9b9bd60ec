// Package window is abridge's sliding-window processor. Once a history is
// too long (more than a number of messages, or estimated prompt tokens
// above a share of the context window), it keeps the head run (the start
// of the conversation through the first plain text answer), replaces the
// middle with one summary marker (a user prompt holding a hand-off note)
// and keeps a tail of recent messages, never splitting a tool call from
// its returns. A previous marker is merged into the next summary rather
// than summarized again, a per-conversation cache makes each message be
// summarized about once even when the host keeps its full history, and a
// summarizer that fails or times out falls back to an offline digest, so a
// user's request never fails because of the summary. An automatic
// compaction never makes the request bigger: a marker must be smaller than
// the messages it replaces, or nothing is compacted.
package window

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// Summarizer writes the summary that replaces compacted messages, merging
// previous (a summary of earlier messages, or "") into it. The window calls
// it with a deadline; it must honour ctx and be safe for concurrent use.
type Summarizer interface {
	Summarize(ctx context.Context, messages []processor.Message, previous string) (string, error)
}

// Defaults of [Options].
const (
	// DefaultMaxMessages is the count trigger.
	DefaultMaxMessages = 40
	// DefaultTriggerPercent is the share of the context window that
	// triggers compaction.
	DefaultTriggerPercent = 70
	// DefaultTimeout bounds one summarizer call.
	DefaultTimeout = 90 * time.Second
	// DefaultBreakerFailures is the number of consecutive summarizer
	// failures that opens the circuit breaker.
	DefaultBreakerFailures = 3
	// DefaultBreakerCooldown is how long the open breaker rests.
	DefaultBreakerCooldown = 5 * time.Minute
)

// Errors reported in [Event.Err] when a summary is not used.
var (
	// ErrEmptySummary: the summarizer returned only white space.
	ErrEmptySummary = errors.New("empty summary")
	// ErrSummaryTooLarge: the summary marker is not smaller than the
	// messages it would replace.
	ErrSummaryTooLarge = errors.New("summary not smaller than the messages it replaces")
	// ErrNoSmallerSummary: no summary marker, not even a digest sized to
	// fit, is smaller than the messages it would replace, so nothing was
	// compacted.
	ErrNoSmallerSummary = errors.New("no summary smaller than the messages it would replace")
	// ErrCircuitOpen: the summarizer failed too often in a row and is not
	// called until the cool-down has passed.
	ErrCircuitOpen = errors.New("summarizer circuit open")
)

// Options configures a [Window]. The zero value means all defaults: the
// count trigger at 40 messages, no token trigger, the offline digest as
// summarizer.
type Options struct {
	// Summarizer writes the summaries. Nil means the offline digest
	// (summarizer.NewDigest with defaults), which never calls a model.
	Summarizer Summarizer
	// Fallback writes the summary when Summarizer fails, times out,
	// returns an empty summary or one not smaller than what it replaces,
	// and while the circuit breaker is open. Nil means the offline digest.
	// When the fallback fails or times out too, a digest fills in.
	Fallback Summarizer
	// MaxMessages triggers compaction when the history has more messages
	// than this. 0 means DefaultMaxMessages (40); a negative value
	// disables the count trigger (the tail size is then computed from 40).
	// A configuration layer that uses 0 for "disabled" must pass -1.
	MaxMessages int
	// ContextWindow is the model's context size in tokens. When positive,
	// compaction also triggers once the estimated prompt tokens
	// (processor.EstimateTokens) pass TriggerPercent of it. The tail is
	// then shortened to fit in half of that threshold (down to 4
	// messages), and further, down to the last request and the call it
	// answers, while the tail alone is over the threshold. 0 means no
	// token trigger.
	ContextWindow int
	// TriggerPercent is the share of ContextWindow that triggers
	// compaction; 0 means DefaultTriggerPercent (70).
	TriggerPercent int
	// KeepUserTurns, when positive, makes the tail the last KeepUserTurns
	// user turns and everything after them, instead of the last
	// max(4, MaxMessages/2) messages. With fewer user turns than that
	// after the head, or when those turns leave fewer than 2 messages to
	// compact (one long turn, say), the tail is the last
	// max(4, MaxMessages/2) messages as without it.
	KeepUserTurns int
	// Timeout bounds each Summarizer call, and each Fallback call; 0
	// means DefaultTimeout (90s).
	Timeout time.Duration
	// BreakerFailures is the number of consecutive summarizer failures
	// after which the window stops calling it for BreakerCooldown and uses
	// the fallback; 0 means DefaultBreakerFailures (3).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open; 0 means
	// DefaultBreakerCooldown (5m). Then one request tries the summarizer
	// again while the others keep using the fallback until it has
	// answered (for Timeout at most): a failure opens the breaker again,
	// a success closes it.
	BreakerCooldown time.Duration
	// CacheSize is the number of conversations whose last summary is
	// remembered; 0 means DefaultCacheSize, negative disables the cache.
	CacheSize int
	// Logger receives compaction lines; nil means zap.NewNop().
	Logger *zap.Logger
	// OnEvent, when set, is called synchronously for every compaction
	// event. It must be safe for concurrent use when the window is shared.
	OnEvent func(ctx context.Context, e Event)
	// Now returns the current time (for the breaker); nil means time.Now.
	Now func() time.Time
}

// EventType tells what an [Event] reports.
type EventType int

// Event types, in the order a compaction reports them: Started, then
// Failed when the summarizer's summary could not be used and the fallback's
// was used instead, then Finished. Failed and Finished carry the sizes
// after compaction.
const (
	// EventStarted: a compaction began (sizes before, Summarized).
	EventStarted EventType = iota + 1
	// EventFinished: a compaction ended (all sizes, summary size,
	// duration, Fallback).
	EventFinished
	// EventFailed: the summarizer's summary was not used (Err, Reason);
	// the fallback's was. When no summary could be made smaller than the
	// messages it would replace (Err is ErrNoSmallerSummary), nothing was
	// compacted: EventFailed then ends the compaction (no EventFinished),
	// with MessagesAfter and TokensAfter measuring the history returned
	// unchanged. When ctx ends while the summary is being written,
	// EventFailed with ctx's error and Reason "canceled" ends the
	// compaction too, and Process returns that error.
	EventFailed
)

// String returns "started", "finished", "failed" or "event(N)".
func (t EventType) String() string {
	switch t {
	case EventStarted:
		return "started"
	case EventFinished:
		return "finished"
	case EventFailed:
		return "failed"
	}
	return "event(" + strconv.Itoa(int(t)) + ")"
}

// Event reports the progress of one compaction to the host.
type Event struct {
	// Type is what happened.
	Type EventType
	// MessagesBefore and TokensBefore measure what would have been sent
	// without this compaction: the history given to the window, with the
	// conversation's previous compaction applied when the host kept its
	// full history (tokens estimated with processor.EstimateTokens).
	MessagesBefore, TokensBefore int
	// MessagesAfter and TokensAfter measure the compacted history (set on
	// EventFailed and EventFinished).
	MessagesAfter, TokensAfter int
	// Summarized is the number of messages newly folded into the summary:
	// those sent to the summarizer (a previous summary is not counted).
	Summarized int
	// SummaryChars is the size of the summary used (EventFailed and
	// EventFinished).
	SummaryChars int
	// Duration is the time the compaction took (EventFinished), or the
	// failed summarizer call took (EventFailed).
	Duration time.Duration
	// Err is why the summary could not be used (EventFailed).
	Err error
	// Fallback is true when the summary came from the fallback.
	Fallback bool
	// Reason names the failure briefly: "timeout", "summarizer error",
	// "empty summary", "summary too large", "circuit open", or, when
	// nothing was compacted, "no smaller summary" or "canceled" (EventFailed).
	Reason string
}

// Window is the sliding-window processor. It is safe for concurrent use by
// many conversations.
type Window struct {
	sum      Summarizer
	fallback Summarizer
	digest   *summarizer.Digest

	maxMessages  int // count trigger; <= 0 disables
	keep         int // tail size in messages
	headLimit    int // the head run must end within this many messages
	tokenTrigger int // estimated tokens that trigger; 0 disables
	keepTurns    int
	timeout      time.Duration
	framing      int               // characters of a marker without its summary
	blank        processor.Message // a marker without a summary, to hold the marker's place

	breakerFailures int
	breakerCooldown time.Duration
	now             func() time.Time

	logger  *zap.Logger
	onEvent func(ctx context.Context, e Event)
	cache   *cache

	mu        sync.Mutex // guards the breaker
	failures  int
	openUntil time.Time
}

var _ processor.Processor = (*Window)(nil)

// New returns a Window configured by opts.
func New(opts Options) *Window {
	w := &Window{
		sum:             opts.Summarizer,
		fallback:        opts.Fallback,
		digest:          summarizer.NewDigest(summarizer.DigestOptions{}),
		keepTurns:       opts.KeepUserTurns,
		timeout:         opts.Timeout,
		breakerFailures: opts.BreakerFailures,
		breakerCooldown: opts.BreakerCooldown,
		now:             opts.Now,
		logger:          opts.Logger,
		onEvent:         opts.OnEvent,
		blank:           Marker(""),
	}
	w.framing = processor.Chars(w.blank)
	if w.sum == nil {
		w.sum = w.digest
	}
	if w.fallback == nil {
		w.fallback = w.digest
	}
	n := opts.MaxMessages
	switch {
	case n == 0:
		w.maxMessages = DefaultMaxMessages
	case n > 0:
		w.maxMessages = n
	}
	if n <= 0 {
		n = DefaultMaxMessages
	}
	w.keep = max(4, n/2)
	w.headLimit = max(4, w.keep/2)
	if opts.ContextWindow > 0 {
		pct := opts.TriggerPercent
		if pct <= 0 {
			pct = DefaultTriggerPercent
		}
		w.tokenTrigger = max(1, opts.ContextWindow*pct/100)
	}
	if w.timeout <= 0 {
		w.timeout = DefaultTimeout
	}
	if w.breakerFailures <= 0 {
		w.breakerFailures = DefaultBreakerFailures
	}
	if w.breakerCooldown <= 0 {
		w.breakerCooldown = DefaultBreakerCooldown
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.logger == nil {
		w.logger = zap.NewNop()
	}
	size := opts.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	w.cache = newCache(size)
	return w
}

// Process returns history unchanged while it is within bounds; once a
// trigger fires it returns the head, one summary marker and the tail. When
// this conversation was compacted before and history still begins with the
// messages that were compacted (the host kept its full history), the same
// cut and the same marker are applied again, and a new compaction happens
// only when that result outgrows the bounds again. A summarizer failure
// never fails the call: the fallback's summary is used. Process fails only
// on an empty history or when ctx is done (checked first, and while a
// summary is being written).
func (w *Window) Process(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v := w.view(history)
	if !w.triggered(v.msgs) {
		return v.msgs, nil
	}
	return w.compact(ctx, history, v, false)
}

// Compact compacts history now, whatever the triggers say (for example
// after the provider reported a context overflow). When the usual tail
// leaves fewer than 2 messages to compact, it keeps only the last request
// (with the call it answers, if any). Unlike Process, it compacts even a
// middle smaller than any summary marker, with the smallest digest (it then
// reports EventFailed with ErrNoSmallerSummary before EventFinished): the
// result has fewer messages, though not fewer characters. When there is still nothing to
// compact, it returns history (with any remembered compaction applied)
// unchanged.
func (w *Window) Compact(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.compact(ctx, history, w.view(history), true)
}

// view is a history with a remembered compaction applied.
type view struct {
	msgs   []processor.Message
	head   int
	reused int  // messages of the input the marker at msgs[head] stands for; 0 when none
	span   span // the span reused (when reused > 0)
	key    uint64
}

// view applies the remembered compaction of this conversation to history
// when history still starts with the span it covers. The result extends,
// when it can, the one made the same way for the previous history (see
// output): a host that keeps its full history costs no new copy of the
// messages after the span on each request.
func (w *Window) view(history []processor.Message) view {
	head := headEnd(history, w.headLimit)
	v := view{msgs: history, head: head}
	if head >= len(history)-1 {
		return v
	}
	v.key = w.cache.key(history, head)
	if s, found := w.find(history, head, w.cache.get(v.key)); found {
		var o *output
		v.msgs, o = w.cache.takeOutput(v.key).apply(history, s)
		v.reused, v.span = s.count, s
		w.cache.putOutput(v.key, o)
	}
	return v
}

// find returns the first of spans that history starts with, a span of
// head messages and more, and whether there is one.
func (w *Window) find(history []processor.Message, head int, spans []span) (span, bool) {
	for _, s := range spans {
		end := head + s.count
		if s.count < 1 || end > len(history)-1 || answers(history[end]) {
			continue
		}
		if s.head == head && w.cache.matches(history[:end], s) {
			return s, true
		}
	}
	return span{}, false
}

// triggered reports whether h is over a bound.
func (w *Window) triggered(h []processor.Message) bool {
	if w.maxMessages > 0 && len(h) > w.maxMessages {
		return true
	}
	return w.tokenTrigger > 0 && processor.EstimateTokens(h) > w.tokenTrigger
}

// tailStart returns where the tail of h begins, the head ending at head.
func (w *Window) tailStart(h []processor.Message, head int, force bool) int {
	start, byTurns := len(h)-w.keep, false
	if w.keepTurns > 0 {
		// The last user turns, unless there are too few of them after the
		// head or they leave nothing to compact (one long turn, or a turn
		// whose prompt shares its request with the returns of the call
		// before it, so the turn starts at that call): then the count
		// split above.
		if s := userTurnStart(h, head, w.keepTurns); s >= 0 && backToPair(h, s, head)-head >= 2 {
			start, byTurns = s, true
		}
	}
	start = backToPair(h, max(start, head), head)
	if w.tokenTrigger > 0 && !byTurns {
		// Shorten the tail until it fits in half the trigger, leaving room
		// to grow before the next compaction, down to 4 messages; then,
		// while it alone is still over the trigger, down to the last
		// request and the call it answers.
		start = shrink(h, start, len(h)-4, w.tokenTrigger/2)
		start = shrink(h, start, backToPair(h, len(h)-1, head), w.tokenTrigger)
	}
	if force && start-head < 2 {
		// Keep only the last request and the response it answers.
		start = backToPair(h, len(h)-1, head)
	}
	return start
}

// shrink moves a tail start forward, from one valid start (not a tool
// return) to the next, while the tail's estimated tokens exceed target and
// the start stays at or below limit.
func shrink(h []processor.Message, start, limit, target int) int {
	for start < limit && tokens(h[start:]) > target {
		next := start + 1
		for next < limit && answers(h[next]) {
			next++
		}
		if next > limit || answers(h[next]) {
			break
		}
		start = next
	}
	return start
}

// compact replaces the middle of v.msgs with a summary marker.
func (w *Window) compact(ctx context.Context, history []processor.Message, v view, force bool) ([]processor.Message, error) {
	h, head := v.msgs, v.head
	start := w.tailStart(h, head, force)
	minMiddle := 2
	if force {
		minMiddle = 1
	}
	if start-head < minMiddle {
		w.logger.Debug("window: nothing to compact", zap.Int("messages", len(h)), zap.Int("head", head), zap.Int("tail_start", start))
		return h, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]processor.Message, 0, head+1+len(h)-start)
	out = append(out, h[:head]...)
	out = append(out, w.blank) // replaced by the marker below
	out = append(out, h[start:]...)
	if verr := processor.Validate(out); verr != nil {
		// Only an invalid input can lead here; leave it as it came.
		w.logger.Warn("window: compaction skipped, history invalid", zap.Error(verr))
		return h, nil
	}
	began := w.now()
	middle := h[head:start]
	var previous []string
	fresh := make([]processor.Message, 0, len(middle))
	replaced := 0
	for _, m := range middle {
		replaced += processor.Chars(m)
		if s, ok := ParseMarker(m); ok {
			if s = strings.TrimSpace(s); s != "" {
				previous = append(previous, s)
			}
			continue
		}
		fresh = append(fresh, m)
	}
	prev := strings.Join(previous, "\n\n")
	key := v.key
	if key == 0 {
		key = w.cache.key(history, head)
	}
	if !force && replaced < w.cache.wait(key) {
		// No summary could be made smaller than a middle like this one
		// lately: wait until it has grown.
		w.logger.Debug("window: middle too small to compact yet", zap.Int("middle_chars", replaced))
		return h, nil
	}
	ev := Event{
		MessagesBefore: len(h),
		TokensBefore:   processor.EstimateTokens(h),
		Summarized:     len(fresh),
	}
	w.emit(ctx, EventStarted, ev)

	summary, failure, err := w.summarize(ctx, fresh, prev, replaced, force)
	if err != nil {
		// ctx ended: close the compaction the host saw start.
		failed := ev
		failed.MessagesAfter, failed.TokensAfter = ev.MessagesBefore, ev.TokensBefore
		failed.Err, failed.Reason, failed.Duration = err, "canceled", w.now().Sub(began)
		w.emit(ctx, EventFailed, failed)
		return nil, err
	}
	if failure != nil && errors.Is(failure.err, ErrNoSmallerSummary) && (!force || summary == "") {
		// Compacting would make the request bigger: send it as it is, and
		// do not try again before the middle has grown.
		w.cache.setWait(key, replaced+max(replaced/2, w.framing))
		failed := ev
		failed.MessagesAfter, failed.TokensAfter = len(h), processor.EstimateTokens(h)
		failed.Err, failed.Reason, failed.Duration = failure.err, failure.reason, failure.took
		w.emit(ctx, EventFailed, failed)
		w.logger.Warn("window: not compacted, no summary smaller than the middle",
			zap.Int("middle_chars", replaced), zap.Int("marker_framing_chars", w.framing))
		return h, nil
	}
	fallback := failure != nil
	marker := Marker(summary)
	out[head] = marker

	// Remember the span of the input the marker now stands for.
	covered := start - head
	if v.reused > 0 {
		covered += v.reused - 1
	}
	if head+covered <= len(history) {
		w.cache.put(key, w.cache.newSpan(history[:head+covered], head, v.span, summary, marker))
	}

	ev.MessagesAfter = len(out)
	ev.TokensAfter = processor.EstimateTokens(out)
	ev.SummaryChars = len(summary)
	ev.Fallback = fallback
	if failure != nil {
		failed := ev
		failed.Err, failed.Reason, failed.Duration = failure.err, failure.reason, failure.took
		w.emit(ctx, EventFailed, failed)
	}
	ev.Duration = w.now().Sub(began)
	w.emit(ctx, EventFinished, ev)
	if ce := w.logger.Check(zap.InfoLevel, "window: compacted"); ce != nil {
		ce.Write(zap.Int("messages_before", ev.MessagesBefore), zap.Int("messages_after", ev.MessagesAfter),
			zap.Int("tokens_before", ev.TokensBefore), zap.Int("tokens_after", ev.TokensAfter),
			zap.Int("summarized", ev.Summarized), zap.Int("summary_chars", ev.SummaryChars),
			zap.Bool("fallback", fallback), zap.Duration("duration", ev.Duration))
	}
	return out, nil
}

// failure describes why the summarizer's summary was not used.
type failure struct {
	err    error
	reason string
	took   time.Duration
}

// summarize returns the summary of fresh merged with prev, from the
// summarizer or, when it cannot be used, from the fallback (then failure
// says why). Whatever its source, the summary's marker is smaller than
// replaced (the characters of the messages it replaces): when neither the
// summarizer's nor the fallback's is, a digest sized to fit is used, and
// when even that is not smaller, failure.err is ErrNoSmallerSummary and
// nothing should be compacted, unless force is set: then the smallest
// summary found is returned with that failure (a forced compaction still
// leaves fewer messages). It fails only when ctx is done.
func (w *Window) summarize(ctx context.Context, fresh []processor.Message, prev string, replaced int, force bool) (string, *failure, error) {
	fits := func(s string) bool {
		// The marker's size, without making it: its framing and the
		// summary it trims.
		s = strings.TrimSpace(s)
		return s != "" && w.framing+len(s) < replaced
	}
	if len(fresh) == 0 {
		// Only markers in the middle: merge their summaries as they are.
		if fits(prev) || (force && strings.TrimSpace(prev) != "") {
			return prev, nil, nil
		}
		return "", &failure{err: ErrNoSmallerSummary, reason: "no smaller summary"}, nil
	}
	began := w.now()
	if w.framing >= replaced && !force {
		// Even an empty summary would not be smaller: do not call anyone.
		return "", &failure{err: ErrNoSmallerSummary, reason: "no smaller summary"}, nil
	}
	var reason string
	var err error
	if w.breakerOpen() {
		reason, err = "circuit open", ErrCircuitOpen
	} else {
		var s string
		s, err = w.call(ctx, w.sum, fresh, prev)
		if cerr := ctx.Err(); cerr != nil {
			return "", nil, cerr
		}
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded):
			reason = "timeout"
		case err != nil:
			reason = "summarizer error"
		case strings.TrimSpace(s) == "":
			reason, err = "empty summary", ErrEmptySummary
		case !fits(s):
			reason, err = "summary too large", ErrSummaryTooLarge
		}
		w.record(err == nil)
		if err == nil {
			return strings.TrimSpace(s), nil, nil
		}
	}
	f := &failure{err: err, reason: reason, took: w.now().Sub(began)}
	w.logger.Warn("window: summary not used, falling back", zap.String("reason", reason), zap.Error(err))

	s, ferr := w.call(ctx, w.fallback, fresh, prev)
	if cerr := ctx.Err(); cerr != nil {
		return "", nil, cerr
	}
	if ferr != nil {
		w.logger.Warn("window: fallback failed, using the digest", zap.Error(ferr))
	}
	if ferr == nil && fits(s) {
		return strings.TrimSpace(s), f, nil
	}
	// A digest bounded by what the middle leaves once the marker's framing
	// is paid for (for a forced compaction, at least a small one).
	budget := replaced - w.framing - 1
	if force {
		budget = max(budget, 1)
	}
	var best string
	if budget > 0 {
		s, _ = summarizer.NewDigest(summarizer.DigestOptions{MaxChars: budget}).Summarize(ctx, fresh, prev)
		if fits(s) {
			return strings.TrimSpace(s), f, nil
		}
		best = strings.TrimSpace(s)
	}
	f.err = fmt.Errorf("%w (after %s: %w)", ErrNoSmallerSummary, reason, err)
	f.reason = "no smaller summary"
	if !force {
		best = ""
	}
	return best, f, nil
}

// call asks s for the summary of fresh merged with prev, within the
// timeout.
func (w *Window) call(ctx context.Context, s Summarizer, fresh []processor.Message, prev string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	return s.Summarize(ctx, fresh, prev)
}

// breakerOpen reports whether the summarizer is resting after repeated
// failures. Once the cool-down has passed, one caller is let through to
// try it again; the breaker stays open for the others until that call has
// been recorded, or for the timeout at most, so they do not all wait on a
// summarizer that may still hang.
func (w *Window) breakerOpen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if now.Before(w.openUntil) {
		return true
	}
	if w.failures >= w.breakerFailures {
		w.openUntil = now.Add(w.timeout)
	}
	return false
}

// record counts a summarizer success or failure, opening the breaker after
// BreakerFailures failures in a row. A success closes it.
func (w *Window) record(ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok {
		w.failures = 0
		w.openUntil = time.Time{}
		return
	}
	// After the cool-down one more failure opens the breaker again: the
	// count is only reset by a success.
	w.failures++
	if w.failures >= w.breakerFailures {
		w.openUntil = w.now().Add(w.breakerCooldown)
		w.logger.Warn("window: summarizer circuit open", zap.Duration("cooldown", w.breakerCooldown))
	}
}

func (w *Window) emit(ctx context.Context, t EventType, ev Event) {
	if w.onEvent == nil {
		return
	}
	ev.Type = t
	w.onEvent(ctx, ev)
}
