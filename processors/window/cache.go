package window

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/abridge-go/abridge/internal/extend"
	"github.com/abridge-go/abridge/processor"
)

// DefaultCacheSize is the number of conversations whose last summary a
// window remembers when [Options.CacheSize] is 0.
const DefaultCacheSize = 256

// entriesPerKey bounds the spans remembered for one conversation key.
const entriesPerKey = 4

// span is a compacted stretch of a history and the summary that replaced
// it: the count messages right after the head (the first head messages).
// It keeps the head and the covered messages as they were seen (in
// chunks: copies that share no slice with the host's), so that checking a
// later history against it costs a comparison per message that is almost
// free while the host passes the very same messages (same parts, same
// strings), and a content hash only of a message that differs from the
// one remembered. The messages are kept, not only their hashes, because a
// pointer remembered without its string could be reused by another string
// of the same length once the first is freed.
type span struct {
	head    int
	count   int
	chunks  []*chunk // the head and covered messages, in order
	summary string
	marker  processor.Message
}

// cache remembers, per conversation, the last spans compacted and their
// summaries, so that a host which keeps its full history and runs the
// window before every request gets the same cut and the same marker back,
// and a later compaction folds only the new messages into the summary. It
// is a bounded LRU, safe for concurrent use.
type cache struct {
	seed maphash.Seed
	size int

	hashed atomic.Int64 // messages hashed over the cache's life (tests read it)

	mu    sync.Mutex
	order *list.List // of *cacheItem, most recent first
	items map[uint64]*list.Element
	keys  map[uintptr]*keyMemo // keys computed lately (see key)
}

type cacheItem struct {
	key   uint64
	spans []span  // most recent first
	wait  int     // compact again only a middle of at least this many characters
	out   *output // the last history a span was applied to, nil while a call extends it
}

func newCache(size int) *cache {
	return &cache{seed: maphash.MakeSeed(), size: size, order: list.New(), items: map[uint64]*list.Element{}, keys: map[uintptr]*keyMemo{}}
}

// key identifies a conversation by its head and the first message after
// it (the first compacted one). It reads only the shape of those messages
// and the ends of their texts, so it costs little whatever their size; two
// conversations sharing a key are told apart by matches, which checks the
// head too. A key computed before from the very same messages (see
// keyMemo) is not computed again.
func (c *cache) key(h []processor.Message, head int) uint64 {
	end := min(head+1, len(h))
	id := uintptr(unsafe.Pointer(unsafe.SliceData(h[0].Parts)))
	if m := c.memo(id); m != nil && m.holds(h[:end]) {
		return m.key
	}
	key := c.hashKey(h[:end])
	for _, m := range h[:end] {
		if m.Meta != nil || !extend.Plain(m) {
			return key
		}
	}
	c.setMemo(id, &keyMemo{key: key, msgs: extend.Copy(h[:end])})
	return key
}

// hashKey returns the key of the messages ms, the head and the message
// after it (see key), computed.
func (c *cache) hashKey(ms []processor.Message) uint64 {
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	num(&mh, len(ms))
	for _, m := range ms {
		writeMessage(&mh, m, true)
	}
	return mh.Sum64()
}

// keyMemo is a key and copies of the messages it was computed from,
// messages whose parts hold no slice (extend.Plain) and with no metadata,
// so that finding their very parts again (the same boxed values, which
// the copies share with them) means finding the same content, hence the
// same key: a host that passes the same head request after request, full
// history or processed, gets its key without hashing it again.
type keyMemo struct {
	key  uint64
	msgs []processor.Message
}

// holds reports whether ms are the messages m was computed from: as
// many, with the same kind, no metadata and the very same parts.
func (m *keyMemo) holds(ms []processor.Message) bool {
	if len(ms) != len(m.msgs) {
		return false
	}
	for i := range ms {
		if ms[i].Kind != m.msgs[i].Kind || ms[i].Meta != nil || !extend.SameParts(ms[i].Parts, m.msgs[i].Parts) {
			return false
		}
	}
	return true
}

// memo returns the key memo last made for a history whose first message
// has its parts at id, or nil. It is only a candidate, to check with
// holds: id may be another message's by now.
func (c *cache) memo(id uintptr) *keyMemo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys[id]
}

// setMemo remembers m under id (see memo), at most 4 × size memos (at
// least 64).
func (c *cache) setMemo(id uintptr, m *keyMemo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.keys) >= max(4*c.size, 64) {
		clear(c.keys)
	}
	c.keys[id] = m
}

// hash returns the content hash of m.
func (c *cache) hash(m processor.Message) uint64 {
	c.hashed.Add(1)
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	writeMessage(&mh, m, false)
	return mh.Sum64()
}

// chunk is a run of remembered messages: copies that share no slice with
// the host's (extend.Copy), which share a part's boxed value with the
// host's message only where the part holds no slice (extend.Plain): the
// very same parts then mean the same content. A chunk never changes once
// made, so later spans of a conversation share the chunks of earlier ones
// and remembering a new span costs only its new messages.
type chunk struct {
	msgs []processor.Message
}

// newSpan returns the span whose first head messages are the head and
// the rest the covered ones, replaced by summary and marker. When known
// (the span the history was found to match, or the zero span) covers a
// prefix of ms, its chunks are shared and only the other messages are
// copied.
func (c *cache) newSpan(ms []processor.Message, head int, known span, summary string, marker processor.Message) span {
	var chunks []*chunk
	n := 0
	if k := known.head + known.count; known.chunks != nil && k <= len(ms) {
		chunks = append(chunks, known.chunks...)
		n = k
	}
	if n < len(ms) {
		chunks = append(chunks, &chunk{msgs: extend.Copy(ms[n:])})
	}
	return span{
		head:    head,
		count:   len(ms) - head,
		chunks:  chunks,
		summary: summary,
		marker:  marker,
	}
}

// sameRef reports whether a holds the very parts of b (the same boxed
// values, compared by their words, not their contents), the same kind and
// refusal: then, b being a copy in a chunk, a has b's content. It is the
// fast path of matches, reading no part's content.
func sameRef(a, b *processor.Message) bool {
	return a.Kind == b.Kind && extend.SameParts(a.Parts, b.Parts) && a.Refusal() == b.Refusal()
}

// same reports whether m has the content of r, a message remembered in a
// chunk: the very same parts, an equal message (processor.Equal, which
// compares strings by pointer before their bytes), or the same content
// hash, so that a message that changed in place is always noticed and
// one that differs only in metadata is still accepted.
func (c *cache) same(m, r *processor.Message) bool {
	return sameRef(m, r) || processor.Equal(*m, *r) || c.hash(*m) == c.hash(*r)
}

// matches reports whether ms has the same content as the head and the
// messages s covers (see same).
func (c *cache) matches(ms []processor.Message, s span) bool {
	if len(ms) != s.head+s.count {
		return false
	}
	i := 0
	for _, ch := range s.chunks {
		if i+len(ch.msgs) > len(ms) {
			return false
		}
		for k := range ch.msgs {
			m, r := &ms[i], &ch.msgs[k]
			i++
			// sameRef, inlined for messages without metadata (most).
			if m.Kind == r.Kind && m.Meta == nil && r.Meta == nil && extend.SameParts(m.Parts, r.Parts) {
				continue
			}
			if !c.same(m, r) {
				return false
			}
		}
	}
	return i == len(ms)
}

// sameSpan reports whether a and b cover the same head and messages, with
// the same content (see same).
func (c *cache) sameSpan(a, b span) bool {
	if a.head != b.head || a.count != b.count {
		return false
	}
	var ka, kb int // positions in the first chunk of each
	ca, cb := a.chunks, b.chunks
	for len(ca) > 0 && len(cb) > 0 {
		x, y := ca[0], cb[0]
		switch {
		case x == y && ka == kb:
			ka, kb = len(x.msgs), len(y.msgs) // a chunk both share
		case c.same(&x.msgs[ka], &y.msgs[kb]):
			ka, kb = ka+1, kb+1
		default:
			return false
		}
		if ka == len(x.msgs) {
			ca, ka = ca[1:], 0
		}
		if kb == len(y.msgs) {
			cb, kb = cb[1:], 0
		}
	}
	return len(ca) == 0 && len(cb) == 0
}

// get returns the spans remembered under key, most recent first, and
// counts the conversation as used (the least recently used is forgotten
// first). The slice is shared: callers must not change it (put makes a
// new one).
func (c *cache) get(key uint64) []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, it := c.lookup(key)
	if it == nil {
		return nil
	}
	c.order.MoveToFront(el)
	return it.spans
}

// takeOutput takes out the output of the conversation under key, nil
// when there is none: a call that takes it has it to itself until it
// puts it back (putOutput).
func (c *cache) takeOutput(key uint64) *output {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, it := c.lookup(key)
	if it == nil {
		return nil
	}
	o := it.out
	it.out = nil
	return o
}

// putOutput puts o back as the output of the conversation under key,
// when the cache still remembers it.
func (c *cache) putOutput(key uint64, o *output) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, it := c.lookup(key); it != nil {
		it.out = o
	}
}

// lookup returns the conversation under key and its element of the
// order, or nils. c.mu must be held.
func (c *cache) lookup(key uint64) (*list.Element, *cacheItem) {
	el, ok := c.items[key]
	if !ok {
		return nil, nil
	}
	return el, el.Value.(*cacheItem)
}

// put remembers s under key, evicting the least recently used
// conversation when the cache is full.
func (c *cache) put(key uint64, s span) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		it := el.Value.(*cacheItem)
		spans := []span{s}
		for _, old := range it.spans {
			if len(spans) == entriesPerKey {
				break
			}
			if !c.sameSpan(old, s) {
				spans = append(spans, old)
			}
		}
		it.spans = spans
		it.wait = 0
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, spans: []span{s}})
	c.evict()
}

// evict forgets the least recently used conversations beyond the size.
func (c *cache) evict() {
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}

// wait returns the size a middle must reach before this conversation is
// compacted again (0: no wait).
func (c *cache) wait(key uint64) int {
	if c.size <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		return el.Value.(*cacheItem).wait
	}
	return 0
}

// setWait remembers that a middle smaller than n characters is not worth
// compacting in this conversation.
func (c *cache) setWait(key uint64, n int) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheItem).wait = n
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, wait: n})
	c.evict()
}

// len returns the number of conversations remembered.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// output is the last history of a conversation a span was applied to, as
// returned, with room past its length: the head, the span's marker, and
// the messages of the input from the end of the span on. A host that
// keeps its full history passes it again grown by a few messages, which
// are then appended in that room, in place of a new copy of the whole.
// As for the trimmer's results (internal/extend), what was returned is
// returned clipped and never changed: only the room past it is written.
type output struct {
	msgs   []processor.Message
	marker *processor.Part // the span's marker's parts: which span was applied
}

// apply returns history with the messages s covers replaced by its
// marker (history's head, the marker, and the rest of history), made by
// extending o when o holds s applied to the messages history starts
// with, and the output to remember for the next call.
func (o *output) apply(history []processor.Message, s span) ([]processor.Message, *output) {
	from := s.head + s.count
	marker := unsafe.SliceData(s.marker.Parts)
	if o == nil || o.marker != marker || !o.prefixOf(history, s.head, from) {
		n := len(history) - s.count + 1
		msgs := make([]processor.Message, 0, n+extend.Spare(n))
		msgs = append(msgs, history[:s.head]...)
		msgs = append(msgs, s.marker)
		o = &output{msgs: append(msgs, history[from:]...), marker: marker}
		return extend.Clip(o.msgs), o
	}
	o.msgs = append(o.msgs, history[from+len(o.msgs)-s.head-1:]...)
	return extend.Clip(o.msgs), o
}

// prefixOf reports whether o holds the very messages of history before
// head, and from from on as many as it has: the same values (kind, parts
// slice and metadata), not equal copies, so that the result is the one a
// new copy would be.
func (o *output) prefixOf(history []processor.Message, head, from int) bool {
	n := from + len(o.msgs) - head - 1 // the input's messages o holds end there
	if len(o.msgs) <= head || n > len(history) {
		return false
	}
	return sameValues(o.msgs[:head], history[:head]) && sameValues(o.msgs[head+1:], history[from:n])
}

// sameValues reports whether a and b hold the same message values: the
// same kinds, parts slices (address, length and capacity) and metadata.
func sameValues(a, b []processor.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Kind != y.Kind || x.Meta != y.Meta || unsafe.SliceData(x.Parts) != unsafe.SliceData(y.Parts) ||
			len(x.Parts) != len(y.Parts) || cap(x.Parts) != cap(y.Parts) {
			return false
		}
	}
	return true
}

// num feeds n to mh.
func num(mh *maphash.Hash, n int) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(n))
	mh.Write(buf[:])
}

// keyChars is how much of each end of a text a cheap key reads.
const keyChars = 32

// writeMessage feeds the content of m (not its metadata) to mh. With
// cheap, only the length and the first and last keyChars bytes of each
// text are fed.
func writeMessage(mh *maphash.Hash, m processor.Message, cheap bool) {
	processor.WalkContent(m, func(n int) { num(mh, n) }, func(s string) {
		num(mh, len(s))
		if cheap && len(s) > 2*keyChars {
			mh.WriteString(s[:keyChars])
			mh.WriteString(s[len(s)-keyChars:])
			return
		}
		mh.WriteString(s)
	})
}
