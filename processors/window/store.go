package window

import (
	"container/list"
	"context"
	"encoding/hex"
	"sync"

	"github.com/abridge-go/abridge/summary"
)

// Key names a conversation in a [Store]: a hash of the history's head and
// the first message after it. It reads only the shape of those messages
// and the ends of their texts, so computing it costs little whatever their
// size; it is a place to look, not proof of anything: every [Span] found
// under it is checked against the history's content before it is used.
type Key [16]byte

// String returns the key in hexadecimal.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Digest is the SHA-256 of the content of a run of messages: every text,
// ID, name and argument a provider would see, in order (metadata such as
// usage or the model's name left out). Equal digests mean equal content.
type Digest [32]byte

// String returns the digest in hexadecimal.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Span is one compaction a window made: the messages right after a
// history's head that a summary replaced, found again by content.
type Span struct {
	// Head is the number of messages of the head the span follows.
	Head int
	// Count is the number of messages the summary stands for, right after
	// the head; 0 for a span of cleared outputs alone (no summary).
	Count int
	// Cleared is the number of messages right after those the summary
	// stands for whose tool outputs were cleared when it was made (see
	// Options.TailOutputs); 0 when none were.
	Cleared int
	// Digest is the content digest of the head, the Count messages after
	// it and the Cleared messages after those: a history whose first
	// Head+Count+Cleared messages have this digest gets this span's
	// summary in place of the Count messages, and the outputs of the
	// Cleared ones cleared.
	Digest Digest
	// Last is the [Key] of the last message of the span (the last cleared
	// one when Cleared is positive): a cheap first check before the
	// digest is computed.
	Last Key
	// Summary is the summary that replaced the messages; its marker is
	// summary.Marker(Summary).
	Summary string
}

// Store remembers the spans windows summarized, so that a history sent
// again (by an agent that keeps its processed history, by a host that
// keeps its full one and passes it in the same memory, or decoded afresh
// for each request as a proxy sees it, by a restarted process or by
// another replica) gets the same summary back instead of a new one. A
// store only keeps what it is given and returns it: every span it returns
// is checked against the content of the history before the window uses
// it, so a store may drop spans at will (a bounded cache) or return spans
// of other conversations under one key. Implementations must be safe for
// concurrent use. [NewMemoryStore] is the default; package session has one
// on SQLite and PostgreSQL shared by processes.
type Store interface {
	// Spans returns the spans saved under key, the most recently saved
	// first, or none.
	Spans(ctx context.Context, key Key) ([]Span, error)
	// Save records span under key. Saving a span with the digest of one
	// already saved under key replaces it.
	Save(ctx context.Context, key Key, span Span) error
	// Summary returns the summary of a span saved under any key whose
	// summary has the reference ref (see summary.Ref), and whether there
	// is one. The window trusts a marker it finds in a history only when
	// its store knows the marker's reference: a text that only looks like
	// a marker is summarized as what it is, a message.
	Summary(ctx context.Context, ref string) (string, bool, error)
}

// DefaultStoreConversations is how many conversations a
// [NewMemoryStore] of size 0 remembers.
const DefaultStoreConversations = 1024

// spansPerKey bounds the spans a MemoryStore keeps under one key.
const spansPerKey = 4

// MemoryStore is a [Store] in memory, bounded: it keeps the spans of the
// most recently used conversations (keys) and forgets the least recently
// used beyond its size, each with its last few spans. It is safe for
// concurrent use.
type MemoryStore struct {
	size int

	mu    sync.Mutex
	order *list.List            // of *memEntry, most recently used first
	items map[Key]*list.Element // by key
	refs  map[string]*refCount  // the kept spans' summaries, by reference
}

// refCount is a summary kept by a MemoryStore and how many of its spans
// hold it.
type refCount struct {
	summary string
	n       int
}

type memEntry struct {
	key   Key
	spans []Span // most recent first
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns a MemoryStore remembering up to conversations
// conversations; 0 or less means [DefaultStoreConversations].
func NewMemoryStore(conversations int) *MemoryStore {
	if conversations <= 0 {
		conversations = DefaultStoreConversations
	}
	return &MemoryStore{size: conversations, order: list.New(), items: map[Key]*list.Element{}, refs: map[string]*refCount{}}
}

// Spans returns the spans saved under key, most recent first, and counts
// the conversation as used. The slice is the caller's.
func (s *MemoryStore) Spans(_ context.Context, key Key) ([]Span, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.items[key]
	if !ok {
		return nil, nil
	}
	s.order.MoveToFront(el)
	return append([]Span(nil), el.Value.(*memEntry).spans...), nil
}

// Save records span under key, keeping the last few spans of the key and
// forgetting the least recently used conversation when full.
func (s *MemoryStore) Save(_ context.Context, key Key, span Span) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.items[key]
	if !ok {
		el = s.order.PushFront(&memEntry{key: key})
		s.items[key] = el
	}
	e := el.Value.(*memEntry)
	spans := make([]Span, 0, spansPerKey)
	spans = append(spans, span)
	for _, old := range e.spans {
		if old.Digest == span.Digest || len(spans) == spansPerKey {
			s.drop(old)
			continue
		}
		spans = append(spans, old)
	}
	e.spans = spans
	if span.Summary != "" {
		r := summary.Ref(span.Summary)
		if rc := s.refs[r]; rc != nil {
			rc.n++
		} else {
			s.refs[r] = &refCount{summary: span.Summary, n: 1}
		}
	}
	s.order.MoveToFront(el)
	for s.order.Len() > s.size {
		last := s.order.Back()
		s.order.Remove(last)
		old := last.Value.(*memEntry)
		delete(s.items, old.key)
		for _, sp := range old.spans {
			s.drop(sp)
		}
	}
	return nil
}

// Summary returns the summary with reference r, if a kept span holds it.
func (s *MemoryStore) Summary(_ context.Context, r string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rc := s.refs[r]; rc != nil {
		return rc.summary, true, nil
	}
	return "", false, nil
}

// drop forgets the reference of a span no longer kept. s.mu must be held.
func (s *MemoryStore) drop(sp Span) {
	if sp.Summary == "" {
		return
	}
	r := summary.Ref(sp.Summary)
	if rc := s.refs[r]; rc != nil {
		if rc.n--; rc.n <= 0 {
			delete(s.refs, r)
		}
	}
}

// Len returns the number of conversations remembered.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
