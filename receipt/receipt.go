// Package receipt describes what abridge did to a conversation, so that an
// operator, a client or a user evaluating abridge can review it: a
// [Receipt] for each compaction (the messages the window replaced, the
// summary marker that replaced them, who wrote the summary and what it
// cost, and the provider's usage of the requests sent with it), a
// [Request] for each request a proxy forwarded (its size as the client sent
// it and as forwarded, the provider's usage, the compaction it carried) and
// a [Conversation] that sums up a conversation's requests.
//
// A receipt is made from the window's [window.EventFinished] (see [New]);
// its id ([ID]) is a digest of the window's key, the compacted span and the
// summary, so every process and replica that makes or logs the same
// compaction names it alike. A [Recorder] collects the receipts of one
// request from the window's events. Conversations are named by an opaque
// digest ([ConversationID]), never by their content.
//
// Sizes are counted in two ways, and each field says which: the window's
// (what it was given and what it returned, after the processors before it
// such as the tool-output trimmer, counted by the window's token counter),
// and the history as the client sent it or as it was forwarded (about 4
// characters a token, processor.ContentTokens).
package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// Writers of a summary ([Receipt.Writer]).
const (
	// WriterModel: the summarizer's model wrote the summary.
	WriterModel = "model"
	// WriterDigest: the offline digest wrote it, as the configured
	// summarizer or in place of the model (Reason says why).
	WriterDigest = "digest"
)

// Size is the size of a history: its messages and estimated tokens. What
// history, and how its tokens are counted, is said by the field holding it.
type Size struct {
	// Messages is the number of messages.
	Messages int `json:"messages"`
	// Tokens is the estimated prompt tokens.
	Tokens int `json:"tokens"`
}

// Usage is the token usage a provider reported for one model request.
type Usage struct {
	// Input is the prompt tokens of the request, cache reads and writes
	// included.
	Input int64 `json:"input"`
	// Cached is how many of Input were read from the provider's prompt
	// cache.
	Cached int64 `json:"cached"`
	// CacheWrite is how many of Input were written to it (Anthropic).
	CacheWrite int64 `json:"cache_write,omitempty"`
	// Output is the tokens of the answer.
	Output int64 `json:"output"`
}

// UsageOf returns u as a Usage.
func UsageOf(u processor.Usage) Usage {
	return Usage{Input: u.InputTokens, Cached: u.CachedInputTokens, CacheWrite: u.CacheWriteInputTokens, Output: u.OutputTokens}
}

// IsZero reports whether u reports nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// Replaced describes one message a marker replaced.
type Replaced struct {
	// Role is "system", "user", "tool" or "assistant".
	Role string `json:"role"`
	// Tools names the tools the message called or answered, in order.
	Tools []string `json:"tools,omitempty"`
	// Chars is the message's size in characters.
	Chars int `json:"chars"`
	// Marker is set for a previous summary marker, folded into this
	// summary.
	Marker bool `json:"marker,omitempty"`
}

// Receipt is the record of one compaction.
type Receipt struct {
	// ID names the receipt (see [ID]).
	ID string `json:"id"`
	// Conversation is the conversation's opaque id (see
	// [ConversationID]), or a name the host gave it (a replay's
	// transcript).
	Conversation string `json:"conversation"`
	// API is the wire API of the request compacted ("chat", "responses",
	// "messages"); "" when not made for a proxied request.
	API string `json:"api,omitempty"`
	// Model is the model that request was for.
	Model string `json:"model,omitempty"`
	// Time is when the compaction finished.
	Time time.Time `json:"time"`
	// Request numbers the request of the conversation the compaction was
	// made for, from 1, where the host counts them (a replay); 0 when
	// unknown.
	Request int `json:"request,omitempty"`
	// Client is the history as the client sent it, its tokens about 4
	// characters each (processor.ContentTokens); zero when not made for
	// a proxied request.
	Client Size `json:"client"`
	// Before is the history the window was given, as it would have been
	// sent without this compaction: after the processors before the window
	// (the tool-output trimmer), with the conversation's previous summary
	// applied. After is the history the window returned. Both are counted
	// by the window (its token counter: about 4 characters a token and 4
	// a message unless configured otherwise), so they compare.
	Before Size `json:"before"`
	After  Size `json:"after"`
	// From and To delimit the messages the marker stands for in the
	// history the window was given: history[From:To].
	From int `json:"from"`
	To   int `json:"to"`
	// Replaced lists the messages the marker replaced, in order; a
	// previous marker among them is one entry.
	Replaced []Replaced `json:"replaced"`
	// Summary is the summary the marker carries, facts included.
	Summary string `json:"summary"`
	// Ref is the summary's reference (summary.Ref), which the marker
	// carries.
	Ref string `json:"ref"`
	// Writer is who wrote the summary: WriterModel, WriterDigest, or the
	// name of another summarizer.
	Writer string `json:"writer"`
	// Reason says why the digest stood in for the model (the window's
	// reason: "timeout", "summarizer error", "unpaid", ...); "" when it
	// did not.
	Reason string `json:"reason,omitempty"`
	// Shared is set when the summary was written for a concurrent
	// request of the same conversation and reused.
	Shared bool `json:"shared,omitempty"`
	// SummarizerUsage is what the summarizer's model calls used, where
	// its model reports usage (zero for the digest, or a summary shared
	// or prepared ahead).
	SummarizerUsage Usage `json:"summarizer_usage"`
	// Duration is how long the compaction took, the summary included.
	Duration time.Duration `json:"duration_ns"`
	// FirstUsage is the provider's usage of the request first sent with
	// the marker (the one compacted), when reported: its cached tokens
	// show what of the prompt cache the compaction kept.
	FirstUsage *Usage `json:"first_usage,omitempty"`
	// NextUsage is the provider's usage of the next request sent with the
	// marker, when reported: its cached tokens show the marker itself
	// read from the cache.
	NextUsage *Usage `json:"next_usage,omitempty"`
}

// Marker returns the text of the marker as the model received it.
func (r Receipt) Marker() string {
	text, _, _ := summary.MarkerRef(r.Summary)
	return text
}

// New returns the receipt of a finished compaction e (its Type is
// window.EventFinished): its id, sizes, range, replaced messages, summary
// and cost. reason is the window's reason when a digest stood in (the
// window reports it in the window.EventFailed before e; see [Reasons]).
// The writer is WriterDigest when the window fell back, else writer. The
// caller sets the rest (the conversation, API, model, time, client size).
func New(e window.Event, reason, writer string) Receipt {
	ref := summary.Ref(e.Summary)
	r := Receipt{
		ID:              ID(e.Key, e.Span, ref),
		Before:          Size{Messages: e.MessagesBefore, Tokens: e.TokensBefore},
		After:           Size{Messages: e.MessagesAfter, Tokens: e.TokensAfter},
		From:            e.From,
		To:              e.To,
		Replaced:        make([]Replaced, len(e.Replaced)),
		Summary:         e.Summary,
		Ref:             ref,
		Writer:          writer,
		Shared:          e.Shared,
		SummarizerUsage: UsageOf(e.SummarizerUsage),
		Duration:        e.Duration,
	}
	if e.Fallback {
		r.Writer, r.Reason = WriterDigest, reason
	}
	for i, m := range e.Replaced {
		r.Replaced[i] = Replaced{Role: m.Role, Tools: slices.Clone(m.Tools), Chars: m.Chars, Marker: m.Marker}
	}
	return r
}

// ID returns the id of the receipt of the compaction of span under key
// whose summary has reference ref: 24 hexadecimal digits of their SHA-256.
// The same compaction gets the same id in every process; a summary
// written again for the same span (after a fallback) gets another.
func ID(key window.Key, span window.Digest, ref string) string {
	h := sha256.New()
	h.Write([]byte("abridge receipt\x00"))
	h.Write(key[:])
	h.Write(span[:])
	h.Write([]byte(ref))
	return hex.EncodeToString(h.Sum(nil)[:12])
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

// ValidID reports whether s has the form of an id of [ID] or
// [ConversationID].
func ValidID(s string) bool { return idPattern.MatchString(s) }

// ConversationID returns the opaque id of the conversation history belongs
// to: a digest of scope (the conversation id the client named, or "") and
// of the leading requests of history (the messages before its first
// response or summary marker: the system prompt and the first user
// prompt), which no compaction changes. Conversations that begin alike
// share an id unless their clients name them apart.
func ConversationID(scope string, history []processor.Message) string {
	h := sha256.New()
	h.Write([]byte("abridge conversation\x00"))
	h.Write([]byte(scope))
	for _, m := range history {
		if m.Kind != processor.Request || summary.IsMarker(m) {
			break
		}
		for _, p := range m.Parts {
			io.WriteString(h, "\x00"+p.PartKind()+"\x00")
			switch p := p.(type) {
			case processor.SystemPrompt:
				io.WriteString(h, p.Content)
			case processor.UserPrompt:
				io.WriteString(h, p.Content)
				for _, c := range p.Contents {
					io.WriteString(h, "\x00"+c.Type+"\x00"+c.Text)
					h.Write(c.Data)
				}
			default:
				io.WriteString(h, processor.Describe(p, 0))
			}
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// LastMarkerRef returns the reference of the last summary marker in
// history, or "" when it holds none.
func LastMarkerRef(history []processor.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if _, ref, ok := summary.ParseMarker(history[i]); ok {
			return ref
		}
	}
	return ""
}

// Reasons pairs the window's events of a compaction: the reason of an
// window.EventFailed whose fallback's summary was used, with the
// window.EventFinished that follows it for the same span. It is safe for
// concurrent use; the zero value is ready.
type Reasons struct {
	mu      sync.Mutex
	pending map[window.Digest]string
}

// maxPending bounds the reasons held: a failure is followed at once by
// its compaction's end, so only compactions in flight are held.
const maxPending = 1024

// Note takes one event: it keeps the reason of a fallback's
// window.EventFailed, and returns, for a window.EventFinished, the reason
// kept for its span ("" when none).
func (r *Reasons) Note(e window.Event) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case e.Type == window.EventFailed && e.Fallback && e.Span != (window.Digest{}):
		if r.pending == nil || len(r.pending) >= maxPending {
			r.pending = map[window.Digest]string{}
		}
		r.pending[e.Span] = e.Reason
	case e.Type == window.EventFinished:
		reason := r.pending[e.Span]
		delete(r.pending, e.Span)
		return reason
	}
	return ""
}

// Recorder collects the receipts of the compactions made while one
// request was processed: give its Observe to the window as the request's
// window.Request.OnEvent (the middleware does). It is safe for concurrent
// use; the zero value is ready.
type Recorder struct {
	reasons Reasons
	mu      sync.Mutex
	events  []window.Event
	reason  []string
}

// Observe records e, one of the window's events: a compaction's end
// (window.EventFinished), and the failure whose fallback it used.
func (r *Recorder) Observe(e window.Event) {
	if e.Type != window.EventFailed && e.Type != window.EventFinished {
		return
	}
	reason := r.reasons.Note(e)
	if e.Type != window.EventFinished {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.reason = append(r.reason, reason)
	r.mu.Unlock()
}

// Take returns the receipts recorded since the last Take, in the order
// the compactions finished, made by [New] with writer.
func (r *Recorder) Take(writer string) []Receipt {
	r.mu.Lock()
	events, reasons := r.events, r.reason
	r.events, r.reason = nil, nil
	r.mu.Unlock()
	out := make([]Receipt, len(events))
	for i, e := range events {
		out[i] = New(e, reasons[i], writer)
	}
	return out
}
