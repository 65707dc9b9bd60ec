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
	// Fallback is true when the summary is the fallback's (the summarizer
	// failed, or its circuit was open), or merges one: the window applies
	// the span, and asks the summarizer again for the messages it stands
	// for when it is next needed, replacing it on success.
	Fallback bool
	// Prepared is true for a summary written ahead of the compaction that
	// will use it (see Options.Ahead): the window applies such a span
	// only once a trigger fires, and then saves it again as an ordinary
	// span. Its Summary is the summarizer's prose alone; the facts are
	// added when it is used.
	Prepared bool
}

// Store remembers the spans windows summarized, so that a history sent
// again (by an agent that keeps its processed history, by a host that
// keeps its full one and passes it in the same memory, or decoded afresh
// for each request as a proxy sees it, by a restarted process or by
// another replica) gets the same summary back instead of a new one. A
// store only keeps what it is given and returns it: every span it returns
// is checked against the content of the history before the window uses
// it, so a store may drop spans at will (a bounded cache) or return spans
// of other conversations under one key. A store should keep spans by how
// recently they were saved or returned, not by how many share a key: many
// conversations may begin alike, and one's traffic must not push another's
// spans out. Implementations must be safe for concurrent use.
// [NewMemoryStore] is the default; package session has one on SQLite and
// PostgreSQL shared by processes.
type Store interface {
	// Spans returns the spans saved under key whose Last is one of the
	// keys lasts returns (those of the messages where a span of the
	// history at hand may end), the most recently saved first, or none.
	// Computing them costs a hash a message: a store calls lasts at most
	// once, and need not when it has nothing under key.
	Spans(ctx context.Context, key Key, lasts func() []Key) ([]Span, error)
	// Save records span under key. Saving a span with the digest of one
	// already saved under key replaces it, unless the new span is a
	// fallback and the saved one is not (a summarizer's summary is never
	// replaced by a fallback for the same messages), or the new span is
	// prepared and the saved one is not (a span in use is never taken
	// back to prepared).
	Save(ctx context.Context, key Key, span Span) error
	// Summary returns the summary of a span saved under any key whose
	// summary has the reference ref (see summary.Ref), and whether there
	// is one. The window trusts a marker it finds in a history only when
	// its store knows the marker's reference: a text that only looks like
	// a marker is summarized as what it is, a message.
	Summary(ctx context.Context, ref string) (string, bool, error)
}

// DefaultStoreConversations is how many conversations a
// [NewMemoryStore] of size 0 is sized for.
const DefaultStoreConversations = 1024

// spansPerConversation is how many spans a MemoryStore keeps per
// conversation it is sized for.
const spansPerConversation = 4

// MemoryStore is a [Store] in memory, bounded: it keeps the most recently
// saved or returned spans, whatever their keys, and forgets the least
// recently used beyond its size. It is safe for concurrent use.
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

// NewMemoryStore returns a MemoryStore sized for conversations
// conversations (4 spans each); 0 or less means
// [DefaultStoreConversations].
func NewMemoryStore(conversations int) *MemoryStore {
	if conversations <= 0 {
		conversations = DefaultStoreConversations
	}
	return &MemoryStore{size: conversations * spansPerConversation, order: list.New(), items: map[Key]map[Digest]*list.Element{}}
}

// Spans returns the spans saved under key whose Last is among lasts(), most
// recently saved first, and counts them as used. The slice is the
// caller's.
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

// Save records span under key, forgetting the least recently used spans
// when full.
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
