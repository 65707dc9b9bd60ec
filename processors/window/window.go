// Package window is abridge's sliding-window processor. Once a history is
// too long (more than a number of messages, or estimated prompt tokens
// above a threshold), it keeps the head run (the start of the conversation
// through the first plain text answer), replaces the middle with one
// summary marker (a user prompt holding a hand-off note) and keeps a tail
// of recent messages, never splitting a tool call from its returns. A
// previous marker is merged into the next summary rather than summarized
// again. What the window summarized is kept in a [Store] found by content,
// so each message is summarized about once whether the host keeps the
// processed history, keeps its full history, or decodes it afresh for
// every request (a proxy), and across processes sharing a store. A
// summarizer that fails or times out falls back to an offline digest, so a
// user's request never fails because of the summary. An automatic
// compaction never makes the request bigger: a marker must be smaller than
// the messages it replaces, or nothing is compacted.
//
// The window depends on package processor, package summary (the marker
// format and the digest) and the standard library only. It reports what it
// does through [Options.OnEvent]; package windowlog writes those events to
// a zap logger.
package window

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
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
	// DefaultSummaryClip is the size, in characters, each text is clipped
	// to for the summarizer.
	DefaultSummaryClip = 300
)

// Errors reported in [Event.Err] when a summary is not used. An empty
// summary is reported as summary.ErrEmpty.
var (
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
	// ErrUnpaid: the request came with a context from WithoutSummarizer,
	// so the offline digest wrote its summary.
	ErrUnpaid = errors.New("summarizer not called: nobody pays for this request's summary")
)

// Options configures a [Window]. The zero value means all defaults: the
// count trigger at 40 messages, no token trigger, the offline digest as
// summarizer, an in-memory store.
type Options struct {
	// Summarizer writes the summaries. Nil means the offline digest
	// (summary.NewDigest with defaults), which never calls a model.
	Summarizer Summarizer
	// Fallback writes the summary when Summarizer fails, times out,
	// returns an empty summary or one not smaller than what it replaces,
	// and while the circuit breaker is open. Nil means the offline digest.
	// When the fallback fails or times out too, a digest fills in.
	Fallback Summarizer
	// Store keeps what the window summarized, found by content (see
	// [Store]). Nil means a [NewMemoryStore] of default size. Share one
	// store between windows (or processes, with package session's) so
	// that each reuses the summaries the others made.
	Store Store
	// MaxMessages triggers compaction when the history has more messages
	// than this. 0 means DefaultMaxMessages (40); a negative value
	// disables the count trigger. The environment's ABRIDGE_MAX_MESSAGES
	// reads the same way.
	MaxMessages int
	// KeepMessages is the size of the tail, in messages, before it is
	// moved back so no tool call is separated from its returns. 0 means
	// max(4, MaxMessages/2), MaxMessages counting as 40 when it is 0 or
	// negative; a positive value below 2 is raised to 2.
	KeepMessages int
	// ContextWindow is the model's context size in tokens. When positive,
	// compaction also triggers once the prompt's tokens (see CountTokens)
	// pass TriggerPercent of it. 0 means no token trigger from a context
	// window (see TriggerTokens).
	ContextWindow int
	// TriggerPercent is the share of ContextWindow that triggers
	// compaction; 0 means DefaultTriggerPercent (70).
	TriggerPercent int
	// TriggerTokens, when positive, triggers compaction once the prompt's
	// tokens pass this many, whatever ContextWindow says. With either
	// token trigger, the tail is shortened to fit in half of the
	// threshold (down to 4 messages), and further, down to the last
	// request and the call it answers, while the tail alone is over it.
	TriggerTokens int
	// CountTokens counts the prompt tokens of messages, for the token
	// trigger, the tail's size under it and the events. Nil means
	// processor.EstimateTokens for a whole history (anchored on the
	// provider's last usage) and about 4 characters a token plus 4 a
	// message for the tail. It is called on whole histories and on tails
	// (sub-slices it must not modify), and must be safe for concurrent use.
	CountTokens func(messages []processor.Message) int
	// TailOutputs, when positive, clears old tool outputs at each
	// compaction: the outputs of the kept tail but those of its last
	// TailOutputs tool rounds (a response calling tools and the returns
	// answering it) are replaced by placeholders (summary.Placeholder),
	// and what they held is given to the summarizer with the middle, so
	// the summary carries it. The prompt's prefix breaks at the marker at
	// a compaction anyway; clearing then costs the provider's cache
	// nothing more, and the tail stays small until the next compaction.
	// 0 (the default) keeps every output of the tail.
	TailOutputs int
	// Facts bounds, in characters, the facts section each summary carries
	// beside its prose (see summary.Facts): the user's messages, the files
	// edited and read, the commands run, the errors met and the names used
	// in the compacted messages, kept verbatim and rolling from one summary
	// to the next, the oldest entries dropped first. 0 means
	// summary.DefaultFactsChars (2000); a negative value leaves the facts
	// out. The summarizer is not given them: it gets the previous summary's
	// prose, and the facts are merged deterministically. They take a third
	// of the characters the marker replaces at most, and none when that is
	// under 200.
	Facts int
	// SummaryClip clips each text the summarizer is given (a tool output,
	// an assistant's text, a plain user prompt) to this many characters,
	// its head and tail (see summary.Clip): the facts keep the exact
	// paths, commands, errors and names of the whole messages, so the
	// summarizer writes the story from a condensed transcript, and the
	// summary's input costs about a third of the whole. 0 means
	// DefaultSummaryClip (300); a negative value gives the summarizer
	// every message whole.
	SummaryClip int
	// Recall makes the placeholders of TailOutputs say that the recall
	// tool returns the outputs they stand for (see agent.WithRecall).
	Recall bool
	// KeepUserTurns, when positive, makes the tail the last KeepUserTurns
	// user turns and everything after them, instead of the last
	// KeepMessages messages. With fewer user turns than that after the
	// head, or when those turns leave fewer than 2 messages to compact
	// (one long turn, say), the tail is the last KeepMessages messages as
	// without it.
	KeepUserTurns int
	// Timeout bounds each Summarizer call, and each Fallback call; 0
	// means DefaultTimeout (90s).
	Timeout time.Duration
	// BreakerFailures is the number of consecutive summarizer failures
	// after which the window stops calling it for BreakerCooldown and uses
	// the fallback; 0 means DefaultBreakerFailures (3). Failures are
	// counted per payer (see WithPayer).
	BreakerFailures int
	// BreakerCooldown is how long the breaker stays open; 0 means
	// DefaultBreakerCooldown (5m). Then one request tries the summarizer
	// again while the others keep using the fallback until it has
	// answered (for Timeout at most): a failure opens the breaker again,
	// a success closes it.
	BreakerCooldown time.Duration
	// RequestFault, when set, reports whether a summarizer error was
	// caused by what the request held (a provider refusing its content,
	// say) rather than by the summarizer's service or the payer's
	// credential: such a failure falls back as any other, but does not
	// count toward the breaker, so one client's messages cannot switch
	// off the summaries of the others sharing it. Nil means every failure
	// counts.
	RequestFault func(err error) bool
	// Ahead is how far ahead of a trigger the summary its compaction will
	// need starts being written, in the background, in percent of the
	// trigger: once the history passes (100-Ahead)% of the count or token
	// trigger, the window writes the summary of the span the next
	// compaction will replace and keeps it in the store as a prepared
	// span; when the trigger fires, it applies it, and the request waits
	// for nothing. When it is not ready then, the request goes out
	// uncompacted while the history is under HardMessages and HardTokens,
	// and waits for it only past them. 0 means DefaultAhead (25); a
	// negative value writes each summary in the foreground when its
	// trigger fires, the request waiting for it. The offline digest
	// (Summarizer nil) always writes in the foreground: it takes
	// microseconds.
	Ahead int
	// Background runs the summaries written ahead, and rewrites fallback
	// summaries (see [Span.Fallback]). Nil means a [Pool] of the window's
	// own, with the options Pool gives, started on first use and stopped
	// by Close. Share one Pool between windows to bound and share out
	// their background work.
	Background Runner
	// Pool configures the Pool the window starts when Background is nil.
	// The zero value means the Pool's defaults.
	Pool PoolOptions
	// HardMessages is the most messages a history may have and still go
	// out uncompacted because its summary was not ready when the count
	// trigger fired. 0 means twice MaxMessages (none when the count
	// trigger is off); a negative value means no bound but the
	// provider's (the host compacts and retries when the provider
	// reports a context overflow).
	HardMessages int
	// HardTokens is the most prompt tokens (CountTokens) a history may
	// have and still go out uncompacted because its summary was not ready
	// when a trigger fired. 0 means 95% of ContextWindow when it is set,
	// else twice TriggerTokens when it is set, else no bound; a negative
	// value means no bound but the provider's.
	HardTokens int
	// ClaimTTL is how long a claim on a summary being written lasts
	// without being renewed, in a store shared by processes (see
	// [Claimer]); its writer renews it every third of it. 0 means
	// DefaultClaimTTL (30s). When a process dies while writing, another
	// takes over once its claim has run out.
	ClaimTTL time.Duration
	// OnEvent, when set, is called synchronously for every compaction
	// event and store failure. It must be safe for concurrent use when the
	// window is shared.
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
	// EventStarted: a compaction began, and a summary is being written
	// (sizes before, Summarized).
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
	// EventStoreFailed: the [Store] failed (Err). The request goes on
	// without what the store would have given or kept: a summary may be
	// written again later.
	EventStoreFailed
	// EventCleared: old tool outputs were cleared (Options.TailOutputs),
	// which brought the history under the triggers without a summary
	// (sizes before and after).
	EventCleared
	// EventAheadStarted: the summary of the span the next compaction will
	// replace started being written in the background (Summarized,
	// SummaryInput, From, To, Key, Span). It is reported from the request
	// that started it.
	EventAheadStarted
	// EventAheadFinished: a summary written ahead is ready (Duration,
	// SummarizerUsage, SummaryInput, SummaryChars), or the summarizer
	// could not write it (Err, Reason): its compaction will use the
	// fallback's. It is reported from the background, under the
	// context of the request that started it, which has ended.
	EventAheadFinished
	// EventAheadWasted: a summary written ahead, or to be, was abandoned
	// unused (Reason: "superseded" when its conversation was compacted
	// with another, "idle" when it went silent, "closed" when the window
	// closed, "abandoned" when its writing was stopped, "queue full" when
	// the Runner could not take it). SummaryInput is what its writing
	// cost in summarizer input (0 when it was never written).
	EventAheadWasted
	// EventDeferred: a trigger fired, but the summary the compaction needs
	// was not ready: the history went out uncompacted, under the hard
	// limits (MessagesBefore, TokensBefore), and the summary is being
	// written.
	EventDeferred
)

// String returns "started", "finished", "failed", "store failed",
// "cleared", "ahead started", "ahead finished", "ahead wasted",
// "deferred" or "event(N)".
func (t EventType) String() string {
	switch t {
	case EventStarted:
		return "started"
	case EventFinished:
		return "finished"
	case EventFailed:
		return "failed"
	case EventStoreFailed:
		return "store failed"
	case EventCleared:
		return "cleared"
	case EventAheadStarted:
		return "ahead started"
	case EventAheadFinished:
		return "ahead finished"
	case EventAheadWasted:
		return "ahead wasted"
	case EventDeferred:
		return "deferred"
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
	// full history. Tokens before and after are counted alike, from the
	// messages alone (Options.CountTokens, or about 4 characters a token
	// and 4 a message): not anchored on the provider's usage, which only
	// the history before a compaction has, so the two compare.
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
	// Err is why the summary could not be used (EventFailed), or the
	// store's error (EventStoreFailed).
	Err error
	// Fallback is true when the summary came from the fallback.
	Fallback bool
	// Shared is true when the summary was written for a concurrent
	// request of the same conversation and reused: no summarizer was
	// called for this one.
	Shared bool
	// Summary is the summary the marker carries, facts included
	// (EventFinished): the model receives it as summary.Marker(Summary).
	Summary string
	// Replaced describes the messages the marker replaced, in order, as
	// the window saw them: a previous marker among them is one entry
	// (EventFinished).
	Replaced []Replaced
	// From and To delimit the messages the marker stands for in the
	// history given to the window, history[From:To], a previous marker's
	// messages included when the host sent its full history
	// (EventFinished).
	From, To int
	// Key is the key the span is saved under in the store (EventFinished):
	// it names the conversation by its head (and the conversation id of
	// WithConversation, when given), never by its content in clear.
	Key Key
	// Span is the content digest of the compacted span (see [Span.Digest])
	// (EventFinished): the same for every request, host and replica that
	// compacts the same messages the same way.
	Span Digest
	// SummarizerUsage is what the summarizer's model calls for this
	// summary used, where its model reports usage through
	// processor.AddUsage (EventFinished; zero when a digest wrote it or
	// the summary was shared or found ready).
	SummarizerUsage processor.Usage
	// Prepared is true when the summary had been written ahead, in the
	// background (EventFinished).
	Prepared bool
	// Waited is how long the request waited for its summary
	// (EventFinished): 0 when it was written ahead and ready, the time
	// the summarizer took when it was written in the foreground.
	Waited time.Duration
	// SummaryInput is the characters the summarizer was given, the
	// previous summary included (EventAheadStarted, EventAheadFinished,
	// EventAheadWasted).
	SummaryInput int
	// Reason names the failure briefly: "timeout", "summarizer error",
	// "empty summary", "summary too large", "circuit open", "unpaid" (see
	// WithoutSummarizer), or, when
	// nothing was compacted, "no smaller summary" or "canceled"
	// (EventFailed); "spans", "save" or "summary" (EventStoreFailed: the
	// store method that failed).
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
	// Marker is true for a previous summary marker, folded into the new
	// summary.
	Marker bool
}

// describe returns the description of the messages ms.
func (w *Window) describe(ms []processor.Message) []Replaced {
	out := make([]Replaced, len(ms))
	for i, m := range ms {
		r := Replaced{Chars: processor.Chars(m), Marker: w.memo.isMarker(m), Role: "user"}
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
// many conversations. It keeps no memory of its own beyond what its store
// keeps and a few bounded maps keyed by content; nothing it returned is
// ever written again.
type Window struct {
	sum      Summarizer
	fallback Summarizer
	digest   *summary.Digest
	facts    *summary.Facts // nil: no facts section
	clip     int            // texts are clipped to this for the summarizer; <= 0: not clipped
	store    Store

	maxMessages  int // count trigger; <= 0 disables
	keep         int // tail size in messages
	headLimit    int // the head run must end within this many messages
	tokenTrigger int // tokens that trigger; 0 disables
	keepTurns    int
	tailOutputs  int
	recall       bool
	count        func([]processor.Message) int // whole histories
	countTail    func([]processor.Message) int // tails
	timeout      time.Duration
	framing      int               // characters of a marker without its summary
	blank        processor.Message // a marker without a summary, to hold the marker's place

	breakerFailures int
	breakerCooldown time.Duration
	now             func() time.Time
	onEvent         func(ctx context.Context, e Event)

	breakers     breakers // a circuit breaker per payer (see WithPayer)
	requestFault func(error) bool

	memo    memo // content-keyed memories: markers, trusted references, waits
	keys    keyer
	flights flights // summaries being written, by the digest of what they cover

	ahead        int // percent of a trigger ahead of which summaries are written; <= 0: never
	background   Runner
	pool         *Pool // the window's own, when background is nil
	poolOnce     sync.Once
	poolOpts     PoolOptions
	closed       atomic.Bool
	jobs         aheadJobs
	hardMessages int // <= 0: none
	hardTokens   int // <= 0: none
	claimTTL     time.Duration
	holder       string        // this window's name in a shared store's claims
	poll         time.Duration // how often to look for a summary another process writes
	sleep        func(ctx context.Context, d time.Duration) bool
}

var _ processor.Processor = (*Window)(nil)

// New returns a Window configured by opts.
func New(opts Options) *Window {
	w := &Window{
		sum:             opts.Summarizer,
		clip:            opts.SummaryClip,
		fallback:        opts.Fallback,
		digest:          summary.NewDigest(summary.DigestOptions{}),
		store:           opts.Store,
		keepTurns:       opts.KeepUserTurns,
		tailOutputs:     opts.TailOutputs,
		recall:          opts.Recall,
		timeout:         opts.Timeout,
		breakerFailures: opts.BreakerFailures,
		breakerCooldown: opts.BreakerCooldown,
		requestFault:    opts.RequestFault,
		now:             opts.Now,
		onEvent:         opts.OnEvent,
		blank:           summary.Marker(""),
		count:           opts.CountTokens,
		countTail:       opts.CountTokens,
	}
	w.framing = processor.Chars(w.blank)
	if opts.Facts >= 0 {
		w.facts = summary.NewFacts(summary.FactsOptions{MaxChars: opts.Facts})
	}
	if w.clip == 0 {
		w.clip = DefaultSummaryClip
	}
	if w.sum == nil {
		w.sum = w.digest
	}
	if w.fallback == nil {
		w.fallback = w.digest
	}
	if w.store == nil {
		w.store = NewMemoryStore(0)
	}
	if w.count == nil {
		w.count, w.countTail = processor.EstimateTokens, processor.ContentTokens
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
	if opts.KeepMessages > 0 {
		w.keep = max(2, opts.KeepMessages)
	}
	w.headLimit = max(4, w.keep/2)
	switch {
	case opts.TriggerTokens > 0:
		w.tokenTrigger = opts.TriggerTokens
	case opts.ContextWindow > 0:
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
	w.ahead = opts.Ahead
	if w.ahead == 0 {
		w.ahead = DefaultAhead
	}
	w.background, w.poolOpts = opts.Background, opts.Pool
	w.hardMessages = opts.HardMessages
	if w.hardMessages == 0 {
		w.hardMessages = 2 * w.maxMessages
	}
	w.hardTokens = opts.HardTokens
	if w.hardTokens == 0 {
		switch {
		case opts.ContextWindow > 0:
			w.hardTokens = opts.ContextWindow * 95 / 100
		case w.tokenTrigger > 0:
			w.hardTokens = 2 * w.tokenTrigger
		}
	}
	w.claimTTL = opts.ClaimTTL
	if w.claimTTL <= 0 {
		w.claimTTL = DefaultClaimTTL
	}
	w.holder, w.poll, w.sleep = newHolder(), claimPoll, sleep
	w.memo.init()
	w.flights.init()
	return w
}

// Process returns history unchanged while it is within bounds; once a
// trigger fires it returns the head, one summary marker and the tail. When
// history begins with messages this window's store has a summary for (the
// host kept its full history, or sent it again), the same cut and the same
// marker are applied, and a new compaction happens only when that result
// outgrows the bounds again. A summarizer or store failure never fails the
// call: the fallback's summary is used. Process fails only on an empty
// history or when ctx is done (checked first, and while a summary is being
// written).
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
	if w.tailOutputs > 0 && (w.maxMessages <= 0 || len(v.msgs) <= w.maxMessages) {
		// The cheap tier first: clearing old tool outputs may bring the
		// history under the token trigger without a summary (it removes
		// no message, so never under the message count).
		if out, ok := w.clearOnly(ctx, history, v); ok {
			return out, nil
		}
	}
	return w.compact(ctx, history, v, false)
}

// clearOnly clears the tool outputs of v after its head (and marker) but
// those of the last TailOutputs rounds, and returns the result when that
// brings it under every trigger, remembering the clear (a span with the
// view's summary, or none, and more messages cleared) so that the same
// history gets the same result; it reports false otherwise.
func (w *Window) clearOnly(ctx context.Context, history []processor.Message, v view) ([]processor.Message, bool) {
	h, head := v.msgs, v.head
	from := head // the first message the clear may touch, in h
	count := 0
	if v.span != nil {
		count = v.span.Count
		if count > 0 {
			from = head + 1 // after the span's marker (a span that only cleared has none)
		}
	}
	clearEnd := w.clearEnd(h, from)
	if clearEnd <= from {
		return nil, false
	}
	out := make([]processor.Message, 0, len(h))
	out = append(out, h[:from]...)
	out = w.appendCleared(out, h[from:clearEnd])
	out = append(out, h[clearEnd:]...)
	if w.triggered(out) || processor.Validate(out) != nil {
		// Still over (as when nothing could be cleared: out is then h).
		return nil, false
	}
	// In the input history: the head, the summarized messages, then the
	// cleared ones.
	cleared := clearEnd - from
	end := head + count + cleared
	fed, sum, fallback := head+count, "", false // where the view's hasher stands; the view's summary
	if v.span != nil {
		fed, sum, fallback = fed+v.span.Cleared, v.span.Summary, v.span.Fallback
	}
	span := Span{Head: head, Count: count, Cleared: cleared, Digest: w.spanDigest(history, head, v.hash, fed, end), Summary: sum, Fallback: fallback}
	w.save(ctx, w.storeKey(ctx, v, history, head), history, span)
	w.emit(ctx, EventCleared, Event{
		MessagesBefore: len(h), TokensBefore: w.countTail(h),
		MessagesAfter: len(out), TokensAfter: w.countTail(out),
	})
	return out, true
}

// Compact compacts history now, whatever the triggers say (for example
// after the provider reported a context overflow). When the usual tail
// leaves fewer than 2 messages to compact, it keeps only the last request
// (with the call it answers, if any). Unlike Process, it compacts even a
// middle smaller than any summary marker, with the smallest digest (it then
// reports EventFailed with ErrNoSmallerSummary before EventFinished): the
// result has fewer messages, though not fewer characters. When there is
// still nothing to compact, it returns history (with any summary the store
// has for its start applied) unchanged.
func (w *Window) Compact(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.compact(ctx, history, w.view(ctx, history), true)
}

type conversationKey struct{}

// WithConversation returns a copy of ctx that names the conversation a
// request belongs to, for a host that knows it (a proxy whose clients send
// a conversation header): the window then keeps what it summarized for
// that conversation apart from what it summarized for others, even when
// their histories begin with the same messages. Without it, conversations
// are told apart by their content alone, which is enough for a single
// host; an empty id is no id.
func WithConversation(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, conversationKey{}, id)
}

// conversationOf returns the conversation ctx names, or "".
func conversationOf(ctx context.Context) string {
	id, _ := ctx.Value(conversationKey{}).(string)
	return id
}

// view is a history with a saved span applied.
type view struct {
	msgs     []processor.Message
	head     int
	key      Key
	span     *Span   // the span applied, nil when none
	hash     fedHash // the content of history[:head+span.Count+span.Cleared] fed, when span is set
	prepared []Span  // the prepared spans the store has under key, not checked against the history
}

// fedHash is a hasher fed the first messages of a history, or the state
// such a hasher stood in, restored only when more is fed: most requests
// that find their span compact nothing.
type fedHash struct {
	h     *hasher
	state []byte
}

// hasher returns the hasher, restored from the state when it is one; nil
// when f holds neither.
func (f fedHash) hasher() *hasher {
	if f.h == nil && f.state != nil {
		return restore(f.state)
	}
	return f.h
}

// view applies to history the most recent span its store has for it: the
// head, the span's marker (none for a span that only cleared), the
// messages the span cleared with their tool outputs cleared, and the
// messages after.
//
// The head is the one split finds, or, when that runs past the first
// response, the leading requests: a head that ended at the first response
// when a compaction was made (no text answer had come yet) stays there in
// the compacted history, its marker stopping the head, while the full
// history may since have grown a text answer within the head's bound.
func (w *Window) view(ctx context.Context, history []processor.Message) view {
	head := w.split(history, false).head
	v := view{msgs: history, head: head}
	scope := conversationOf(ctx)
	var s *Span
	var h fedHash
	if head < len(history)-1 {
		v.key = w.keys.key(scope, history[:head+1])
		s, h, v.prepared = w.lookup(ctx, history, head, v.key)
	}
	if s == nil {
		lead := slices.IndexFunc(history, func(m processor.Message) bool { return m.Kind == processor.Response })
		if lead < 0 || lead >= head {
			return v
		}
		k := w.keys.key(scope, history[:lead+1])
		if s, h, _ = w.lookup(ctx, history, lead, k); s == nil {
			return v
		}
		v.prepared = nil
		head, v.head, v.key = lead, lead, k
	}
	s = w.retry(ctx, history, head, v.key, s)
	end := head + s.Count
	msgs := make([]processor.Message, 0, len(history)-s.Count+1)
	msgs = append(msgs, history[:head]...)
	if s.Count > 0 {
		msgs = append(msgs, w.marker(s.Summary))
	}
	msgs = w.appendCleared(msgs, history[end:end+s.Cleared])
	v.msgs = append(msgs, history[end+s.Cleared:]...)
	v.span, v.hash = s, h
	return v
}

// lookup returns the span the store has for history, its head ending at
// head, with the hasher find returns (nil when there is none), and the
// prepared spans it has under k.
func (w *Window) lookup(ctx context.Context, history []processor.Message, head int, k Key) (*Span, fedHash, []Span) {
	spans, err := w.store.Spans(ctx, k, func() []Key { return w.keys.lasts(history, head) })
	if err != nil {
		w.storeFailed(ctx, "spans", err)
		return nil, fedHash{}, nil
	}
	var prepared []Span
	if slices.ContainsFunc(spans, func(s Span) bool { return s.Prepared }) {
		used := spans[:0:0]
		for _, s := range spans {
			if s.Prepared {
				prepared = append(prepared, s)
			} else {
				used = append(used, s)
			}
		}
		spans = used
	}
	s, h := w.find(history, head, spans)
	return s, h, prepared
}

// find returns the first of spans (most recent first) whose content
// history starts with, and a hasher that has been fed the content of the
// head and the messages the span covers; nil when none matches. Spans
// whose end is not a place to cut, or whose last message differs from the
// history's at that place, are rejected before any digest is computed;
// the others share one pass over the history's content.
func (w *Window) find(history []processor.Message, head int, spans []Span) (*Span, fedHash) {
	var cands []int // indexes into spans, to check in order of their end
	for i := range spans {
		s := &spans[i]
		end := head + s.Count
		if s.Head != head || s.Count < 0 || s.Cleared < 0 || s.Count+s.Cleared < 1 || end+s.Cleared > len(history)-1 ||
			(s.Count > 0 && answers(history[end])) || w.keys.key("", history[end+s.Cleared-1:end+s.Cleared]) != s.Last {
			continue
		}
		cands = append(cands, i)
	}
	if len(cands) == 0 {
		return nil, fedHash{}
	}
	// The longest candidate whose content checks out wins (the newest of
	// equals): a history sent again from its start finds the span made for
	// each of its lengths, and every replica picks the same. When this
	// window verified the longest before, its content is compared, not
	// hashed; an older span verified before must not win over a longer one
	// another window (a replica) saved since, so only the longest is
	// looked up.
	length := func(i int) int { return spans[i].Count + spans[i].Cleared }
	slices.SortStableFunc(cands, func(a, b int) int { return length(b) - length(a) })
	top := &spans[cands[0]]
	if state, ok := w.memo.match(top.Digest, history[:head+top.Count+top.Cleared]); ok {
		return top, fedHash{state: state}
	}
	slices.Reverse(cands) // shortest first, to feed the hasher once
	h := newHasher(false)
	fed, best := 0, -1
	for _, i := range cands {
		end := head + length(i)
		for ; fed < end; fed++ {
			h.message(&history[fed])
		}
		if h.sum() == spans[i].Digest && (best < 0 || length(i) > length(best)) {
			best = i
		}
	}
	if best < 0 {
		return nil, fedHash{}
	}
	end := head + spans[best].Count + spans[best].Cleared
	if fed > end {
		// A longer candidate was fed too: feed the chosen one's content
		// again, so the hasher stands at its end.
		h = newHasher(false)
		for i := range end {
			h.message(&history[i])
		}
	}
	w.memo.verify(spans[best].Digest, history[:end], h.state())
	return &spans[best], fedHash{h: h}
}

// marker returns the marker of a summary, a new message each time (its
// parts are the caller's), its text made once per summary.
func (w *Window) marker(s string) processor.Message {
	return processor.UserMessage(w.memo.markerText(s))
}

// triggered reports whether h is over a bound.
func (w *Window) triggered(h []processor.Message) bool {
	if w.maxMessages > 0 && len(h) > w.maxMessages {
		return true
	}
	return w.tokenTrigger > 0 && w.count(h) > w.tokenTrigger
}

// compact replaces the middle of v.msgs with a summary marker.
func (w *Window) compact(ctx context.Context, history []processor.Message, v view, force bool) ([]processor.Message, error) {
	h := v.msgs
	c := w.split(h, force)
	head, start := c.head, c.start
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
	var waited time.Duration // for a summary another process was writing
	if !force && w.aheadOn(ctx) {
		var out []processor.Message
		var ok bool
		var err error
		if out, ok, waited, err = w.fromAhead(ctx, history, v, c); ok {
			return out, err
		}
	}
	// The tail's old outputs to clear (TailOutputs): h[start:clearEnd].
	clearEnd := w.clearEnd(h, start)
	out := make([]processor.Message, 0, head+1+len(h)-start)
	out = append(out, h[:head]...)
	out = append(out, w.blank) // replaced by the marker below
	out = w.appendCleared(out, h[start:clearEnd])
	out = append(out, h[clearEnd:]...)
	if processor.Validate(out) != nil {
		// Only an invalid input can lead here; leave it as it came.
		return h, nil
	}
	k := w.storeKey(ctx, v, history, head)
	prev, prevFacts, fresh, replaced := w.sortMiddle(ctx, h[head:start])
	// The cleared outputs go to the summarizer with their calls, after the
	// middle; what clearing saves counts as replaced.
	for i := start; i < clearEnd; i++ {
		fresh = append(fresh, h[i])
		replaced += processor.Chars(h[i]) - processor.Chars(out[head+1+i-start])
	}
	// The wait is keyed by the head as the view shows it (its marker
	// included), which every host mode sees alike: a host that sends its
	// full history and one that sends the processed one wait the same.
	waitKey := k
	if v.span != nil {
		waitKey = w.keys.key(conversationOf(ctx), h[:head+1])
	}
	if !force && (replaced <= w.framing || replaced < w.memo.wait(waitKey)) {
		// No marker could be smaller than this middle (not even an empty
		// one, or no summary was lately): wait until it has grown.
		return h, nil
	}

	// What the new span covers, in the input history: the head, the span
	// applied to it (if any) and the rest of the middle.
	covered := c.middle()
	cleared := clearEnd - start
	from := 0 // where the view's hasher stands in history
	if v.span != nil {
		if v.span.Count > 0 {
			covered += v.span.Count - 1 // the view's marker stands for them
		}
		from = head + v.span.Count + v.span.Cleared
	}
	end := head + covered + cleared
	d := w.spanDigest(history, head, v.hash, from, end)

	ev := Event{
		MessagesBefore: len(h),
		TokensBefore:   w.countTail(h),
		Summarized:     len(fresh),
	}
	w.emit(ctx, EventStarted, ev)
	began := w.now()
	write := func() result {
		var r result
		facts := w.factsOf(fresh, prevFacts, replaced)
		mctx, meter := processor.WithUsageMeter(ctx)
		r.summary, r.failure, r.err = w.summarize(mctx, w.clipForSummary(fresh), prev, replaced-len(facts)-2, force)
		r.usage, _ = meter.Usage()
		if r.err == nil && r.summary != "" {
			r.summary = summary.WithFacts(r.summary, facts)
		}
		return r
	}
	var res result
	var shared bool
	var err error
	if unpaid(ctx) {
		// A digest costs nothing: no flight to share, and nothing saved.
		res = write()
	} else {
		res, shared, err = w.flights.do(ctx, d, write)
	}
	if err == nil {
		err = res.err
	}
	if err != nil {
		// ctx ended: close the compaction the host saw start.
		failed := ev
		failed.MessagesAfter, failed.TokensAfter = ev.MessagesBefore, ev.TokensBefore
		failed.Err, failed.Reason, failed.Duration = err, "canceled", w.now().Sub(began)
		w.emit(ctx, EventFailed, failed)
		return nil, err
	}
	sum, failure := res.summary, res.failure
	if failure != nil && errors.Is(failure.err, ErrNoSmallerSummary) && (!force || sum == "") {
		// Compacting would make the request bigger: send it as it is, and
		// do not try again before the middle has grown.
		w.memo.setWait(waitKey, replaced+max(replaced/2, w.framing))
		failed := ev
		failed.MessagesAfter, failed.TokensAfter = len(h), ev.TokensBefore
		failed.Err, failed.Reason, failed.Duration, failed.Shared = failure.err, failure.reason, failure.took, shared
		w.emit(ctx, EventFailed, failed)
		return h, nil
	}
	out[head] = w.marker(sum)
	w.memo.trust(w.memo.ref(sum))
	if !shared {
		w.save(ctx, k, history, Span{Head: head, Count: covered, Cleared: cleared, Digest: d, Summary: sum,
			Fallback: (failure != nil && failure.retry) || (v.span != nil && v.span.Fallback)})
	}
	for _, j := range w.jobs.takeAll(&k) {
		w.drop(j, "superseded") // written ahead for a compaction that came otherwise
	}

	ev.MessagesAfter = len(out)
	ev.TokensAfter = w.countTail(out)
	ev.SummaryChars = len(sum)
	ev.Fallback = failure != nil
	ev.Shared = shared
	ev.Summary, ev.Replaced = sum, w.describe(h[head:start])
	ev.From, ev.To, ev.Key, ev.Span = head, head+covered, k, d
	if !shared {
		ev.SummarizerUsage = res.usage
	}
	if failure != nil {
		failed := ev
		failed.Err, failed.Reason, failed.Duration = failure.err, failure.reason, failure.took
		w.emit(ctx, EventFailed, failed)
	}
	ev.Duration = w.now().Sub(began)
	ev.Waited = waited + ev.Duration
	w.emit(ctx, EventFinished, ev)
	return out, nil
}

// storeKey returns the key the view's span was found under, or, without
// one, the key of history's head ending at head.
func (w *Window) storeKey(ctx context.Context, v view, history []processor.Message, head int) Key {
	if v.key != (Key{}) {
		return v.key
	}
	return w.keys.key(conversationOf(ctx), history[:head+1])
}

// spanDigest returns the digest of the content of history[:end], going on from
// from (when it holds a hasher or a state), which has been fed
// history[:fed], when it stands within; the memo remembers the digest as
// verified. Without it, it goes
// on from the hash state after the head (history[:head]) when the memo
// has it for the same content, and else gives the memo that state: a
// conversation's head is the same at each of its compactions, and a host
// that sends the processed history has its marker after it, so no span is
// found to go on from.
func (w *Window) spanDigest(history []processor.Message, head int, from fedHash, fed, end int) Digest {
	var headKey Key
	var hash *hasher
	if fed <= end {
		hash = from.hasher()
	}
	if hash == nil {
		fed = 0
		if 0 < head && head <= end {
			headKey = w.keys.key("", history[:head])
			if state, ok := w.memo.headState(headKey, history[:head]); ok {
				hash, fed = restore(state), head
			}
		}
		if hash == nil {
			hash = newHasher(false)
		}
	}
	for i := fed; i < end; i++ {
		hash.message(&history[i])
		if i+1 == head && headKey != (Key{}) {
			w.memo.rememberHead(headKey, history[:head], hash.state())
		}
	}
	d := hash.sum()
	w.memo.verify(d, history[:end], hash.state())
	return d
}

// save saves span, which covers history up to its end (head, count and
// cleared messages), under k, with its last message's key; a store that
// fails is reported, not returned.
func (w *Window) save(ctx context.Context, k Key, history []processor.Message, span Span) {
	end := span.Head + span.Count + span.Cleared
	span.Last = w.keys.key("", history[end-1:end])
	if unpaid(ctx) {
		return // nothing is kept for a request nobody pays for
	}
	if err := w.store.Save(ctx, k, span); err != nil {
		w.storeFailed(ctx, "save", err)
	}
}

// clearEnd returns where the outputs to clear in the tail h[start:] end:
// before the last TailOutputs tool rounds (never in the last message);
// start when nothing is cleared.
func (w *Window) clearEnd(h []processor.Message, start int) int {
	if w.tailOutputs <= 0 {
		return start
	}
	rounds := 0
	for i := len(h) - 2; i >= start; i-- {
		if h[i].HasToolCalls() {
			if rounds++; rounds == w.tailOutputs {
				return i
			}
		}
	}
	return start
}

// appendCleared appends ms to out with their tool outputs cleared.
func (w *Window) appendCleared(out, ms []processor.Message) []processor.Message {
	for _, m := range ms {
		if parts := summary.ClearParts(m.Parts, w.recall, nil); parts != nil {
			m.Parts = parts
		}
		out = append(out, m)
	}
	return out
}

// trusted reports whether a marker with reference ref is one a window
// wrote: one this window wrote or trusted before, or one its store knows.
func (w *Window) trusted(ctx context.Context, ref string) bool {
	if w.memo.trusts(ref) {
		return true
	}
	_, ok, err := w.store.Summary(ctx, ref)
	if err != nil {
		w.storeFailed(ctx, "summary", err)
		return false
	}
	if ok {
		w.memo.trust(ref)
	}
	return ok
}

// failure describes why the summarizer's summary was not used.
type failure struct {
	err    error
	reason string
	took   time.Duration
	retry  bool // the summarizer could not write a summary: ask again later
}

// summarize returns the summary of fresh merged with prev, from the
// summarizer or, when it cannot be used, from the fallback (then failure
// says why). Whatever its source, the summary's marker is smaller than
// budget characters: when neither the summarizer's nor the fallback's is,
// a digest sized to fit is used, and when even that is not smaller,
// failure.err is ErrNoSmallerSummary and nothing should be compacted,
// unless force is set: then the smallest summary found is returned with
// that failure (a forced compaction still leaves fewer messages). It
// fails only when ctx is done.
func (w *Window) summarize(ctx context.Context, fresh []processor.Message, prev string, budget int, force bool) (string, *failure, error) {
	if len(fresh) == 0 {
		// Only markers in the middle: merge their summaries as they are.
		if w.fits(prev, budget) || (force && strings.TrimSpace(prev) != "") {
			return prev, nil, nil
		}
		return "", &failure{err: ErrNoSmallerSummary, reason: "no smaller summary"}, nil
	}
	s, f := w.ask(ctx, fresh, prev, budget)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if f == nil {
		return s, nil, nil
	}
	s, f = w.complete(ctx, fresh, prev, budget, force, f)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return s, f, nil
}

// fits reports whether the marker of summary s is smaller than budget
// characters (told without making it: its framing and the summary it
// trims).
func (w *Window) fits(s string, budget int) bool {
	s = strings.TrimSpace(s)
	return s != "" && w.framing+len(s) < budget
}

// ask returns the summarizer's summary of fresh merged with prev, when it
// writes one whose marker is smaller than budget characters, or why it
// did not. It asks only when the request is paid for and the payer's
// breaker is closed, and counts the outcome toward the breaker.
func (w *Window) ask(ctx context.Context, fresh []processor.Message, prev string, budget int) (string, *failure) {
	began := w.now()
	var reason string
	var err error
	payer := payerOf(ctx)
	switch {
	case unpaid(ctx):
		reason, err = "unpaid", ErrUnpaid
	case w.breakerOpen(payer):
		reason, err = "circuit open", ErrCircuitOpen
	default:
		var s string
		s, err = w.call(ctx, w.sum, fresh, prev)
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
		case !w.fits(s, budget):
			reason, err = "summary too large", ErrSummaryTooLarge
		}
		w.tally(payer, err)
		if err == nil {
			return strings.TrimSpace(s), nil
		}
	}
	// A summary the summarizer could not write (as opposed to one it
	// wrote too large) may be written when the span is next needed.
	return "", &failure{err: err, reason: reason, took: w.now().Sub(began),
		retry: reason != "summary too large" && reason != "unpaid"}
}

// complete returns the fallback's summary of fresh merged with prev after
// the summarizer's failure f, or a digest sized to fit in budget, and the
// failure to report; see summarize.
func (w *Window) complete(ctx context.Context, fresh []processor.Message, prev string, budget int, force bool, f *failure) (string, *failure) {
	fallback := w.fallback
	if unpaid(ctx) {
		fallback = w.digest
	}
	s, ferr := w.call(ctx, fallback, fresh, prev)
	if ctx.Err() != nil {
		return "", f
	}
	if ferr == nil && w.fits(s, budget) {
		return strings.TrimSpace(s), f
	}
	// A digest bounded by what the middle leaves once the marker's framing
	// is paid for (for a forced compaction, at least a small one).
	room := budget - w.framing - 1
	if force {
		room = max(room, 1)
	}
	var best string
	if room > 0 {
		s, _ = summary.NewDigest(summary.DigestOptions{MaxChars: room}).Summarize(ctx, fresh, prev)
		if w.fits(s, budget) {
			return strings.TrimSpace(s), f
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
	if !force {
		best = ""
	}
	return best, &g
}

// clipForSummary returns ms with their texts clipped to the window's clip
// for the summarizer (ms itself when none is longer; new messages for
// those that change).
func (w *Window) clipForSummary(ms []processor.Message) []processor.Message {
	if w.clip <= 0 {
		return ms
	}
	var out []processor.Message // nil until a message changes
	for i, m := range ms {
		c, changed := summary.ClipTexts(m, w.clip)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(ms)
		}
		out[i] = c
	}
	if out == nil {
		return ms
	}
	return out
}

// SummaryClip returns the size each text is clipped to for the summarizer
// (Options.SummaryClip), or a negative number when nothing is clipped.
func (w *Window) SummaryClip() int { return w.clip }

// factsOf returns the facts section of fresh merged with previous, or ""
// when the window keeps no facts or the middle (replaced characters) is too
// small to hold them beside a summary: they may take a third of it at most.
func (w *Window) factsOf(fresh []processor.Message, previous string, replaced int) string {
	if w.facts == nil {
		return ""
	}
	room := (replaced - w.framing) / 3
	if room < 200 {
		return ""
	}
	return w.facts.Section(fresh, previous, room)
}

// call asks s for the summary of fresh merged with prev, within the
// timeout.
func (w *Window) call(ctx context.Context, s Summarizer, fresh []processor.Message, prev string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	return s.Summarize(ctx, fresh, prev)
}

func (w *Window) emit(ctx context.Context, t EventType, ev Event) {
	if w.onEvent == nil {
		return
	}
	ev.Type = t
	w.onEvent(ctx, ev)
}

// storeFailed reports a failure of the store's method named op.
func (w *Window) storeFailed(ctx context.Context, op string, err error) {
	w.emit(ctx, EventStoreFailed, Event{Err: err, Reason: op})
}
