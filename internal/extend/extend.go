// Package extend lets a processor extend, in place, a result it returned
// before, when the same history comes back grown by a few messages: the
// case of a host that keeps its full history and runs the chain on it
// before every request. The new messages then cost work, and the whole
// history no new copy.
//
// The rule that makes this safe: every result is returned clipped (its
// capacity cut to its length), so no caller can see, through a slice it
// holds, the part of the array past the result's length; a later result
// may fill that part, and never changes what an earlier result holds.
// Callers must not change a result either (the processors document it).
package extend

import (
	"sync"
	"unsafe"

	"github.com/abridge-go/abridge/processor"
)

// Entry is what a processor remembers of one conversation: copies (see
// [Copy]) of the input messages from From on, as last seen, where the
// input held their parts and metadata, and the result last returned,
// whose array has room past its length.
type Entry struct {
	// From is the position in the input of the first message remembered.
	From int
	// Out is the last result, unclipped.
	Out []processor.Message

	seen  [][]processor.Message // copies of the input from From on, in chunks
	n     int                   // messages in seen
	refs  []ref                 // where the input held each remembered message's parts and metadata
	owned []uint64              // bit j: Out[j] was made by the processor

	// Room for later chunks and their parts past the last ones: the
	// copies are laid out one after the other, so that checking them
	// reads memory in order.
	msgs  []processor.Message
	parts []processor.Part
}

// ref is where the input held a remembered message's parts slice and
// metadata. Holding the pointers keeps what they point to alive, so an
// address equal to one of them is the very same array or Meta, never a
// new one at a reused address.
type ref struct {
	parts *processor.Part
	meta  *processor.Meta
}

// Own records that Out[j] holds a message the processor made (a changed
// copy of the input's), not the input's message itself.
func (e *Entry) Own(j int) {
	for len(e.owned) <= j/64 {
		e.owned = append(e.owned, 0)
	}
	e.owned[j/64] |= 1 << (j % 64)
}

// Owns reports whether Own(j) was called.
func (e *Entry) Owns(j int) bool {
	return j/64 < len(e.owned) && e.owned[j/64]&(1<<(j%64)) != 0
}

// Current reports whether Out, up to the input length e last saw, holds
// history's very messages where the processor did not make its own: the
// same parts slice and the same metadata, not equal copies. With Extends,
// it makes a result built on Out show the parts history holds now even
// when the host swapped a message for an equal copy and then reused the
// old one's parts. A message the processor made must still have history's
// metadata. A nil Out (the result was the input itself) is current.
func (e *Entry) Current(history []processor.Message) bool {
	if e.Out == nil {
		return true
	}
	for j := range min(e.End(), len(e.Out), len(history)) {
		o, h := &e.Out[j], &history[j]
		if o.Meta != h.Meta {
			return false
		}
		if !e.Owns(j) && (len(o.Parts) != len(h.Parts) || unsafe.SliceData(o.Parts) != unsafe.SliceData(h.Parts)) {
			return false
		}
	}
	return true
}

// End is the length of the input e last saw.
func (e *Entry) End() int { return e.From + e.n }

// Extends reports whether history still holds, from From on, the messages
// e saw: then a result for history is e.Out extended by what comes after
// them. While the host passes the very same messages, each check is a few
// comparisons of words (see [processor.Equal]).
func (e *Entry) Extends(history []processor.Message) bool {
	if len(history) < e.End() {
		return false
	}
	i := e.From
	for _, ch := range e.seen {
		for k := range ch {
			if !processor.Equal(history[i], ch[k]) {
				return false
			}
			i++
		}
	}
	return true
}

// Reuses reports whether a result for history is e.Out extended by what
// comes after the messages e saw: when Extends and Current both report
// it, or when history holds, from From on (0), the very messages e saw.
// The latter is checked first, in one pass that reads no content: each
// message must have the kind seen, the metadata and the parts slice seen
// (the same addresses), holding the parts copied (the same boxed values,
// which a copy shares only for a part holding no slice, see Plain). Out
// then holds, where the processor did not make its own message (Own),
// the message seen there, hence history's, and otherwise one with its
// metadata, as a processor keeps it: Reuses relies on that.
func (e *Entry) Reuses(history []processor.Message) bool {
	if len(history) < e.End() {
		return false
	}
	if e.From == 0 && e.same(history) {
		return true
	}
	return e.Extends(history) && e.Current(history)
}

// same reports whether history holds, from From on, the very messages e
// saw (see Reuses).
func (e *Entry) same(history []processor.Message) bool {
	i := e.From
	for _, ch := range e.seen {
		for k := range ch {
			h, r := &history[i], &e.refs[i-e.From]
			if h.Kind != ch[k].Kind || h.Meta != r.meta || unsafe.SliceData(h.Parts) != r.parts || !SameParts(h.Parts, ch[k].Parts) {
				return false
			}
			i++
		}
	}
	return true
}

// Remember records copies of the messages of history past those e has. The
// copies are kept in chunks, one per call, so that remembering a few more
// messages never copies the ones remembered before; the chunks and their
// parts lie one after the other in a few arrays.
func (e *Entry) Remember(history []processor.Message) {
	if len(history) <= e.End() {
		return
	}
	rest := history[e.End():]
	ch := room(&e.msgs, len(rest))
	copyInto(ch, room(&e.parts, countParts(rest)), rest)
	for _, m := range rest {
		e.refs = append(e.refs, ref{parts: unsafe.SliceData(m.Parts), meta: m.Meta})
	}
	e.seen = append(e.seen, ch)
	e.n += len(ch)
}

// Spare is the room to leave past n messages in a new result array that
// later calls may extend.
func Spare(n int) int { return n/4 + 16 }

// Clip returns s with its capacity cut to its length: the form in which
// every result is returned.
func Clip(s []processor.Message) []processor.Message { return s[:len(s):len(s)] }

// Cache holds the entries of a bounded number of conversations. An entry is
// taken out while a call works on it and put back after, so that two
// calls never extend the same array. It is safe for concurrent use.
type Cache[K comparable] struct {
	mu         sync.Mutex
	items      map[K]*slot // a taken entry leaves its slot empty
	candidates map[K]struct{}
	limit      int
}

// slot holds the entry of a key, nil while it is taken out. Taking an
// entry out and putting it back then costs a lookup each, not a deletion
// and an insertion.
type slot struct {
	e *Entry
}

// NewCache returns a Cache of at most limit entries (at least 1).
func NewCache[K comparable](limit int) *Cache[K] {
	return &Cache[K]{items: map[K]*slot{}, candidates: map[K]struct{}{}, limit: max(limit, 1)}
}

// Take removes and returns the entry for key (its slot stays, empty), or
// nil when there is none.
func (c *Cache[K]) Take(key K) *Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.items[key]
	if !ok {
		return nil
	}
	e := s.e
	s.e = nil
	return e
}

// Put stores e under key, forgetting another entry when the cache is full.
// Empty slots count as entries, and are forgotten first: a key taken out
// and not put back leaves no entry a later Take could find.
func (c *Cache[K]) Put(key K, e *Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.items[key]; ok {
		s.e = e
		return
	}
	if len(c.items) >= c.limit {
		c.forget()
	}
	c.items[key] = &slot{e: e}
}

// forget removes an empty slot when there is one, and any entry
// otherwise.
func (c *Cache[K]) forget() {
	var victim K
	found := false
	for k, s := range c.items {
		if s.e == nil {
			delete(c.items, k)
			return
		}
		if !found {
			victim, found = k, true
		}
	}
	if found {
		delete(c.items, victim)
	}
}

// Mark remembers key as sighted (see Sighted).
func (c *Cache[K]) Mark(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.candidates) >= 4*c.limit {
		clear(c.candidates)
	}
	c.candidates[key] = struct{}{}
}

// Sighted reports whether key was offered to Sighted before (and not
// forgotten since), and remembers it otherwise. A processor whose keys
// are only hints (an address) uses it to start an entry on a key's second
// sighting, so that a host which never passes the same history twice
// costs a lookup and no copy. Up to 4 × limit keys are remembered.
func (c *Cache[K]) Sighted(key K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.candidates[key]; ok {
		delete(c.candidates, key)
		return true
	}
	if len(c.candidates) >= 4*c.limit {
		clear(c.candidates)
	}
	c.candidates[key] = struct{}{}
	return false
}
