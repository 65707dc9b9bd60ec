package window

import (
	"cmp"
	"container/list"
	"context"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/abridge-go/abridge/summary"
)

// Key names a conversation in a [Store]: a hash of the shape and the ends
// of the texts of its head and the message after it. It is a place to
// look, not proof: every [Span] found under it is checked against the
// history's content.
type Key [16]byte

// String returns the key in hexadecimal.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Digest is the SHA-256 of the content of a run of messages: every text,
// ID, name and argument a provider would see, in order. Equal digests mean
// equal content.
type Digest [32]byte

// String returns the digest in hexadecimal.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Span is one compaction a window made: the messages right after a
// history's head that a summary replaced.
type Span struct {
	// Head is the number of messages in the head before the span.
	Head int
	// Count is the number of messages the summary stands for, right after
	// the head; 0 for a span of cleared outputs alone (no summary).
	Count int
	// Cleared is the number of messages after those whose tool outputs
	// were cleared (see Options.TailOutputs).
	Cleared int
	// Digest is the content digest of the span's Head+Count+Cleared
	// messages: a history that starts with them gets the span applied.
	Digest Digest
	// Last is the [Key] of the span's last message (see [Store.Spans]).
	Last Key
	// Summary is the summary that replaced the messages.
	Summary string
	// Fallback is true when the summary is the fallback's, or merges one:
	// the window asks the summarizer again when the span is next needed,
	// and replaces it on success.
	Fallback bool
	// Prepared is true for a summary written ahead (see Options.Ahead),
	// not applied yet: the summarizer's prose alone, the facts added when
	// a compaction uses it and saves the span again.
	Prepared bool
}

// Store remembers the spans windows summarized, so that a history sent
// again, in any host mode, by a restarted process or a replica, gets the
// same summary back. The window checks every span it returns against the
// history, so a store may drop spans at will or return other
// conversations' under one key; it should drop the least recently saved or
// returned, whatever their key. It must be safe for concurrent use.
// Package session has one on SQLite and PostgreSQL shared by processes.
type Store interface {
	// Spans returns the spans saved under key whose Last is among the keys
	// lasts returns (those of the messages where a span of the history at
	// hand may end), most recently saved first. lasts costs a hash a
	// message: a store calls it at most once, and need not when it has
	// nothing under key.
	Spans(ctx context.Context, key Key, lasts func() []Key) ([]Span, error)
	// Save records span under key, replacing the one with its digest
	// unless the new span is a fallback and the saved one is not, or the
	// new one is prepared and the saved one is not.
	Save(ctx context.Context, key Key, span Span) error
	// Summary returns the summary with the reference ref (see
	// summary.Ref) of a span saved under any key, if there is one. The
	// window trusts a marker only when its store knows its reference: a
	// text that merely looks like one is summarized as a message.
	Summary(ctx context.Context, ref string) (string, bool, error)
}

// DefaultStoreConversations is how many conversations a
// [NewMemoryStore] of size 0 is sized for, 4 spans each.
const DefaultStoreConversations = 1024

// MemoryStore is a [Store] in memory that forgets the least recently saved
// or returned spans beyond its size. It is safe for concurrent use.
type MemoryStore struct {
	size int

	mu    sync.Mutex
	order *list.List                       // of *memSpan, most recently used first
	items map[Key]map[Digest]*list.Element // by key, then digest
	saves uint64                           // spans saved so far
}

type memSpan struct {
	key   Key
	span  Span
	ref   string // the reference of span.Summary ("" when it has none)
	saved uint64 // when it was saved, in saves
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns a MemoryStore of 4 spans for each of
// conversations; 0 or less means [DefaultStoreConversations].
func NewMemoryStore(conversations int) *MemoryStore {
	size := 4 * positiveOr(conversations, DefaultStoreConversations)
	return &MemoryStore{size: size, order: list.New(), items: map[Key]map[Digest]*list.Element{}}
}

// Spans returns the spans saved under key whose Last is among lasts(), most
// recently saved first, and counts them as used.
func (s *MemoryStore) Spans(_ context.Context, key Key, lasts func() []Key) ([]Span, error) {
	s.mu.Lock()
	n := len(s.items[key])
	s.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	ends := map[Key]bool{}
	for _, k := range lasts() { // outside the lock: it hashes
		ends[k] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []*memSpan
	for _, el := range s.items[key] {
		if e := el.Value.(*memSpan); ends[e.span.Last] {
			found = append(found, e)
			s.order.MoveToFront(el)
		}
	}
	slices.SortFunc(found, func(a, b *memSpan) int { return cmp.Compare(b.saved, a.saved) })
	out := make([]Span, len(found))
	for i, e := range found {
		out[i] = e.span
	}
	return out, nil
}

// Save records span under key.
func (s *MemoryStore) Save(_ context.Context, key Key, span Span) error {
	ref := ""
	if span.Summary != "" {
		ref = summary.Ref(span.Summary)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	byDigest := s.items[key]
	if byDigest == nil {
		byDigest = map[Digest]*list.Element{}
		s.items[key] = byDigest
	}
	if el := byDigest[span.Digest]; el != nil {
		s.order.MoveToFront(el)
		e := el.Value.(*memSpan)
		if (span.Fallback && !e.span.Fallback) || (span.Prepared && !e.span.Prepared) {
			return nil
		}
		e.span, e.ref, e.saved = span, ref, s.saves
		return nil
	}
	byDigest[span.Digest] = s.order.PushFront(&memSpan{key: key, span: span, ref: ref, saved: s.saves})
	for s.order.Len() > s.size {
		old := s.order.Remove(s.order.Back()).(*memSpan)
		delete(s.items[old.key], old.span.Digest)
		if len(s.items[old.key]) == 0 {
			delete(s.items, old.key)
		}
	}
	return nil
}

// Summary returns the summary with reference r, if a kept span holds it.
func (s *MemoryStore) Summary(_ context.Context, r string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for el := s.order.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*memSpan); e.ref == r && r != "" {
			return e.span.Summary, true, nil
		}
	}
	return "", false, nil
}

// Len returns the number of spans remembered.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
