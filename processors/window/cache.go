package window

import (
	"container/list"
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/abridge-go/abridge/processor"
)

// DefaultCacheSize is the number of conversations whose last summary a
// window remembers when [Options.CacheSize] is 0.
const DefaultCacheSize = 256

// entriesPerKey bounds the spans remembered for one conversation key.
const entriesPerKey = 4

// span is a compacted stretch of a history and the summary that replaced
// it: the count messages right after the head, whose fingerprint is fp.
type span struct {
	count   int
	fp      uint64
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

	mu    sync.Mutex
	order *list.List // of *cacheItem, most recent first
	items map[uint64]*list.Element
}

type cacheItem struct {
	key   uint64
	spans []span // most recent first
}

func newCache(size int) *cache {
	return &cache{seed: maphash.MakeSeed(), size: size, order: list.New(), items: map[uint64]*list.Element{}}
}

// key identifies a conversation by its head and the first message after
// it (the first compacted one).
func (c *cache) key(h []processor.Message, head int) uint64 {
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	end := min(head+1, len(h))
	for _, m := range h[:end] {
		writeMessage(&mh, m)
	}
	return mh.Sum64()
}

// fingerprint hashes the content of ms.
func (c *cache) fingerprint(ms []processor.Message) uint64 {
	var mh maphash.Hash
	mh.SetSeed(c.seed)
	for _, m := range ms {
		writeMessage(&mh, m)
	}
	return mh.Sum64()
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
			if old.count != s.count || old.fp != s.fp {
				spans = append(spans, old)
			}
		}
		it.spans = spans
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheItem{key: key, spans: []span{s}})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}

// len returns the number of conversations remembered.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// writeMessage feeds the content of m (not its metadata) to mh.
func writeMessage(mh *maphash.Hash, m processor.Message) {
	var buf [8]byte
	num := func(n int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(n))
		mh.Write(buf[:])
	}
	str := func(s string) {
		num(len(s))
		mh.WriteString(s)
	}
	num(int(m.Kind))
	num(len(m.Parts))
	str(m.Refusal)
	for _, p := range m.Parts {
		str(p.PartKind())
		switch p := p.(type) {
		case processor.SystemPrompt:
			str(p.Content)
		case processor.UserPrompt:
			str(p.Content)
			num(len(p.Contents))
			for _, c := range p.Contents {
				str(c.Type)
				str(c.Text)
				str(string(c.Data))
			}
		case processor.ToolReturn:
			str(p.ToolCallID)
			str(p.ToolReturnContent())
		case processor.RetryPrompt:
			str(p.ToolCallID)
			str(p.Content)
		case processor.Text:
			str(p.Content)
		case processor.ToolCall:
			str(p.ToolCallID)
			str(p.ToolName)
			str(p.Args)
		case processor.Thinking:
			str(p.Content)
		}
	}
}
