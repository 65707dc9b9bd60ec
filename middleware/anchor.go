package middleware

import (
	"sync"

	"github.com/abridge-go/abridge/processor"
)

// DefaultAnchors is the number of conversations whose last reported usage
// the middleware remembers when Options.Anchors is 0.
const DefaultAnchors = 4096

// anchors remembers, for the last requests of a bounded number of
// conversations, the input tokens the provider reported, so that the next
// request of each is measured from that figure rather than from the
// characters alone (see processor.EstimateTokens, as abridge's agent
// does). A conversation is found by its content: the history the client
// sent with a request, hashed once a request (each message by the digest
// of its content); its next request holds that history, the provider's
// answer to it (a response), and what the client added since. The key covers the client's history, the request's API and
// model, and the conversation header's id, if any. Entries are a few
// bytes each (no message is kept), the least recently used is dropped
// first, and it is safe for concurrent use.
type anchors struct {
	limit int

	mu    sync.Mutex
	items map[uint64]*anchorEntry
	ring  anchorEntry // the sentinel of the list, most recently used first
}

// anchorEntry is what the provider reported for one request.
type anchorEntry struct {
	key uint64
	// sent is the number of messages of the history the request
	// forwarded (after the processors): the index at which the provider's
	// answer follows it in the processors' view of the next request.
	sent       int
	usage      processor.Usage
	prev, next *anchorEntry
}

func newAnchors(limit int) *anchors {
	a := &anchors{limit: limit, items: map[uint64]*anchorEntry{}}
	a.ring.prev, a.ring.next = &a.ring, &a.ring
	return a
}

// conversation is what anchors know of one request's history: the keys
// of the history and of its part before its last response.
type conversation struct {
	// last is the index of the history's last response, -1 when it has
	// none: the answer to the conversation's previous request.
	last int
	// before is the key of history[:last], the previous request's
	// history; whole the key of the history itself, under which this
	// request's usage is remembered.
	before, whole uint64
}

// keys hashes history, with the request's wire API and model and the
// conversation header's id (or ""): a conversation's usage anchors its
// next request in the same API, to the same model. Each message counts by
// its content's digest.
func (a *anchors) keys(api, model, id string, history []processor.Message) conversation {
	c := conversation{last: -1}
	for i := len(history) - 1; i > 0; i-- {
		if history[i].Kind == processor.Response {
			c.last = i
			break
		}
	}
	var h hasher
	h.Text(api)
	h.Text(model)
	h.Text(id)
	for i := range history {
		if i == c.last {
			c.before = keyOf(h, i)
		}
		h.Num(digest(history[i]))
	}
	c.whole = keyOf(h, len(history))
	return c
}

// anchor gives history's last response the usage the provider reported
// for the request it answers, when that request's history is the one
// before it: Usage.PromptMessages is then the number of messages that
// request forwarded, so that processor.EstimateTokens trusts the figure
// only where the processors' view of history has that many before the
// response (the window's stored cut applied as it was). history's array
// is the caller's own; the message is replaced, never written to. It
// reports whether it anchored.
func (a *anchors) anchor(history []processor.Message, c conversation) bool {
	if c.last <= 0 {
		return false
	}
	a.mu.Lock()
	e := a.items[c.before]
	var sent int
	var u processor.Usage
	if e != nil {
		a.unlink(e)
		a.pushFront(e)
		sent, u = e.sent, e.usage
	}
	a.mu.Unlock()
	if e == nil || sent <= 0 || u.InputTokens <= 0 {
		return false
	}
	m := history[c.last]
	meta := processor.Meta{}
	if m.Meta != nil {
		meta = *m.Meta
	}
	meta.Usage = processor.Usage{InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens, OutputTokens: u.OutputTokens, PromptMessages: sent}
	m.Meta = &meta
	history[c.last] = m
	return true
}

// put remembers u, the usage of a request whose history had key whole and
// which forwarded sent messages.
func (a *anchors) put(whole uint64, sent int, u processor.Usage) {
	if u.InputTokens <= 0 || sent <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.items[whole]; e != nil {
		e.sent, e.usage = sent, u
		a.unlink(e)
		a.pushFront(e)
		return
	}
	if len(a.items) >= a.limit {
		old := a.ring.prev
		a.unlink(old)
		delete(a.items, old.key)
	}
	e := &anchorEntry{key: whole, sent: sent, usage: u}
	a.items[whole] = e
	a.pushFront(e)
}

func (a *anchors) unlink(e *anchorEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (a *anchors) pushFront(e *anchorEntry) {
	e.prev, e.next = &a.ring, a.ring.next
	a.ring.next.prev = e
	a.ring.next = e
}

// anchored reports whether processor.EstimateTokens(history) anchors on a
// provider's usage: whether a response holds usage it trusts.
func anchored(history []processor.Message) bool {
	for i := len(history) - 1; i >= 0; i-- {
		m := &history[i]
		if m.Kind != processor.Response || m.Meta == nil {
			continue
		}
		if u := m.Meta.Usage; u.InputTokens > 0 && u.PromptMessages > 0 && u.PromptMessages == i {
			return true
		}
	}
	return false
}

// keyOf returns a conversation's key: what h was fed (the request's API,
// model and id, then the digest of each message's content) and the
// number of messages, n. h is a copy: the caller's goes on.
func keyOf(h hasher, n int) uint64 {
	h.Num(uint64(n) | 1<<63)
	return h.Sum()
}
