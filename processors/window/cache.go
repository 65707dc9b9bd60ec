package window

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/abridge-go/abridge/processor"
)

// DefaultCacheSize is the number of conversations whose last summary a
// window remembers when [Options.CacheSize] is 0.
const DefaultCacheSize = 256

// entriesPerKey bounds the spans remembered for one conversation key.
const entriesPerKey = 4

// span is a compacted stretch of a history and the summary that replaced
// it: the count messages right after the head (the first head messages),
// whose fingerprint is fp. It keeps the head and the covered messages as
// they were seen (in chunks: copies that share no slice with the host's)
// and the content hash of each, so that checking a later history
// against it costs a comparison per message that is almost free while the
// host passes the very same messages (same strings), and a hash only of a
// message that differs from the one remembered. The messages are kept, not
// only their hashes, because a pointer remembered without its string could
// be reused by another string of the same length once the first is freed.
type span struct {
	head    int
	count   int
	fp      uint64
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
}

type cacheItem struct {
	key   uint64
	spans []span // most recent first
	wait  int    // compact again only a middle of at least this many characters
}

func newCache(size int) *cache {
	return &cache{seed: maphash.MakeSeed(), size: size, order: list.New(), items: map[uint64]*list.Element{}}
}

// key identifies a conversation by its head and the first message after
// it (the first compacted one). It reads only the shape of those messages
// and the ends of their texts, so it costs little whatever their size; two
// conversations sharing a key are told apart by matches, which checks the
// head too.
func (c *cache) key(h []processor.Message, head int) uint64 {
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	end := min(head+1, len(h))
	num(&mh, end)
	for _, m := range h[:end] {
		writeMessage(&mh, m, true)
	}
	return mh.Sum64()
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
// the host's ([processor.Clone]), whether each holds no slice but its
// parts (see plainParts), and the content hash of each. A chunk never changes once
// made, so later spans of a conversation share the chunks of earlier ones
// and remembering a new span costs only its new messages.
type chunk struct {
	msgs   []processor.Message
	plain  []bool
	hashes []uint64
}

// newSpan returns the span whose first head messages are the head and
// the rest the covered ones, replaced by summary and marker. When known
// (the span the history was found to match, or the zero span) covers a
// prefix of ms, its chunks are shared and only the other messages are
// copied and hashed.
func (c *cache) newSpan(ms []processor.Message, head int, known span, summary string, marker processor.Message) span {
	var chunks []*chunk
	n := 0
	if k := known.head + known.count; known.chunks != nil && k <= len(ms) {
		chunks = append(chunks, known.chunks...)
		n = k
	}
	if n < len(ms) {
		rest := ms[n:]
		ch := &chunk{msgs: processor.Clone(rest), plain: make([]bool, len(rest)), hashes: make([]uint64, len(rest))}
		for i, m := range rest {
			ch.plain[i] = plainParts(m)
			ch.hashes[i] = c.hash(m)
		}
		chunks = append(chunks, ch)
	}
	return span{
		head:    head,
		count:   len(ms) - head,
		fp:      c.combine(chunks),
		chunks:  chunks,
		summary: summary,
		marker:  marker,
	}
}

// plainParts reports whether no part of m holds a slice (whose array the
// host could change in place while the part's box stays the same).
func plainParts(m processor.Message) bool {
	for _, p := range m.Parts {
		switch q := p.(type) {
		case processor.UserPrompt:
			if q.Contents != nil {
				return false
			}
		case processor.ToolReturn:
			if q.JSON != nil || q.Contents != nil {
				return false
			}
		case processor.SystemPrompt, processor.RetryPrompt, processor.Text, processor.ToolCall, processor.Thinking:
		default:
			return false // a part type this check does not know
		}
	}
	return true
}

// iface is the layout of an interface value: its type and its data word.
type iface struct {
	typ, data unsafe.Pointer
}

// sameRef reports whether a holds the very parts of b (the same boxed
// values, compared by their words, not their contents), the same kind and
// refusal: then, b's parts being plain (plainParts), a has b's content. It
// is the fast path of matches, reading no part's content.
func sameRef(a, b *processor.Message) bool {
	if a.Kind != b.Kind || len(a.Parts) != len(b.Parts) || a.Refusal() != b.Refusal() {
		return false
	}
	for j := range a.Parts {
		x := (*iface)(unsafe.Pointer(&a.Parts[j]))
		y := (*iface)(unsafe.Pointer(&b.Parts[j]))
		if x.typ != y.typ || x.data != y.data {
			return false
		}
	}
	return true
}

// combine returns the fingerprint of a sequence of message hashes.
func (c *cache) combine(chunks []*chunk) uint64 {
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	var buf [8]byte
	for _, ch := range chunks {
		for _, h := range ch.hashes {
			binary.LittleEndian.PutUint64(buf[:], h)
			mh.Write(buf[:])
		}
	}
	return mh.Sum64()
}

// matches reports whether ms has the same content as the head and the
// messages s covers. A message equal to the one remembered (processor.Equal, which
// compares strings by pointer before their bytes) is accepted without
// hashing; any other is hashed and compared with the remembered hash, so a
// message that changed in place is always noticed, and one that differs
// only in metadata is still accepted.
func (c *cache) matches(ms []processor.Message, s span) bool {
	if len(ms) != s.head+s.count {
		return false
	}
	i := 0
	for _, ch := range s.chunks {
		if i+len(ch.msgs) > len(ms) || len(ch.plain) != len(ch.msgs) || len(ch.hashes) != len(ch.msgs) {
			return false
		}
		for k := range ch.msgs {
			m := &ms[i]
			i++
			if (ch.plain[k] && sameRef(m, &ch.msgs[k])) || processor.Equal(*m, ch.msgs[k]) {
				continue
			}
			if c.hash(*m) != ch.hashes[k] {
				return false
			}
		}
	}
	return i == len(ms)
}

// get returns the spans remembered under key, most recent first.
func (c *cache) get(key uint64) []span {
	if c.size <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return append([]span(nil), el.Value.(*cacheItem).spans...)
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
			if old.head != s.head || old.count != s.count || old.fp != s.fp {
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
