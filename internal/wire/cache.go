package wire

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/abridge-go/abridge/processor"
)

// DefaultCacheBytes bounds a [Cache] made by NewCache(0): the bytes of the
// messages it keeps, raw and decoded.
const DefaultCacheBytes = 64 << 20

// Cache remembers messages it decoded, by their bytes: a host that receives
// a conversation's whole history with every request (a proxy, an HTTP
// middleware) then decodes each message once, not once a request. A
// message is found by a hash of its bytes, or, after one the cache holds,
// as the message that followed that one before, and taken only when its
// bytes are those remembered, compared in full. The messages it gives are shared
// between the requests that hold them: read-only, as processors treat
// their input. It is bounded (emptied when full) and safe for concurrent
// use. A Cache serves one API: what a codec keeps beside a message is its
// own, and a message's bytes can be the same in two APIs, so each codec
// needs a Cache of its own (openaimw keeps one per API).
type Cache struct {
	seed  maphash.Seed
	limit int

	mu    sync.Mutex
	items map[uint64][]*cached
	bytes int

	rw rewrites // the rewrites, apart

	// lastItems is the length of the last history read through the cache:
	// a conversation's next request has a few more, so the scan sizes its
	// list of elements for that many at once rather than growing it.
	lastItems atomic.Int32
}

// itemsHint returns the capacity to give a history's list of elements:
// the last history's length and some (a few if there was none).
func (c *Cache) itemsHint() int {
	n := 8
	if c != nil {
		n += int(c.lastItems.Load())
	}
	return n
}

// sawItems notes the length of a history read.
func (c *Cache) sawItems(n int) {
	if c != nil && n <= 1<<20 {
		c.lastItems.Store(int32(n))
	}
}

type cached struct {
	raw []byte            // a copy of the message's bytes
	msg processor.Message // as decoded where it was first seen
	aux any               // what the codec learnt besides (nil for Chat)
	// next is the entry of the message that followed this one the last
	// time it was read in a history: where a conversation's next request
	// repeats its history, each message is found by comparing its bytes
	// with the ones expected, without looking for its end or hashing it.
	next atomic.Pointer[cached]
	// named is msg with its tool returns named from their calls as
	// nameReturns last named them (nil before), so that a history whose
	// returns keep their names builds no new message for them.
	named atomic.Pointer[processor.Message]
	// digest is Digest(msg), 0 until a body's Digest first needs it:
	// computed once for all the requests that repeat the message.
	digest atomic.Uint64
	// tokens is processor.MessageTokens(msg) plus one, 0 until a body's
	// Tokens first needs it: counted once for all the requests that
	// repeat the message.
	tokens atomic.Int64
	// rewrite is the last rewrite of msg (Body.rewritten): what the
	// processors made of it and the bytes that wrote, nil before. It is
	// outside the cache's count of bytes, and kept only when it is no
	// larger than the entry's count (a trimmed or cleared output is
	// smaller than the message it was): at most as much again.
	rewrite atomic.Pointer[entryRewrite]
	// run is the last response (Responses) this item began (see
	// runMemo), nil before.
	run atomic.Pointer[runMemo]
}

// entryRewrite is a rewrite of an entry's message: what it became (a copy)
// and its writing (nil when it is written anew).
type entryRewrite struct {
	msg processor.Message
	out []byte
}

// NewCache returns a Cache of at most limit bytes (0 means
// DefaultCacheBytes).
func NewCache(limit int) *Cache {
	if limit <= 0 {
		limit = DefaultCacheBytes
	}
	return &Cache{seed: maphash.MakeSeed(), limit: limit, items: map[uint64][]*cached{}}
}

// lookup returns the entry of raw, or nil.
func (c *Cache) lookup(raw []byte) *cached {
	if c == nil {
		return nil
	}
	h := maphash.Bytes(c.seed, raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.items[h] {
		if bytes.Equal(e.raw, raw) {
			return e
		}
	}
	return nil
}

// at returns the entry of the message whose bytes start data[pos:] (nil
// when the cache has none) and the end of the object there (-1 when it
// has none): first the message that followed prev the last time, else the
// one of the object's bytes.
func (c *Cache) at(data []byte, pos int, prev *cached) (*cached, int) {
	if c == nil || pos >= len(data) || data[pos] != '{' {
		return nil, -1
	}
	if prev != nil {
		if n := prev.next.Load(); n != nil && bytes.HasPrefix(data[pos:], n.raw) {
			// A whole object: its bytes end where its last brace is.
			return n, pos + len(n.raw)
		}
	}
	end := skipObject(data, pos)
	if end < 0 {
		return nil, -1
	}
	return c.lookup(data[pos:end]), end
}

// leadAux marks an entry as the value of a system prompt's own field
// (Responses "instructions", Messages "system"), read by decode: ok tells
// whether it is a system prompt.
type leadAux struct{ ok bool }

// lead returns the system prompt the value raw of its own field holds, as
// decode reads it, and whether it holds one, taking it from the cache
// when the cache read the same bytes before: an agent sends the same
// system prompt, often tens of kilobytes, with every request. It returns
// the cache's entry too (nil when it keeps none).
func (c *Cache) lead(raw []byte, decode func([]byte) (processor.Message, bool)) (processor.Message, bool, *cached) {
	if e := c.lookup(raw); e != nil {
		if a, isLead := e.aux.(leadAux); isLead {
			return e.msg, a.ok, e
		}
	}
	m, ok := decode(raw)
	return m, ok, c.putAux(raw, m, leadAux{ok})
}

// link remembers that e followed prev (either may be nil).
func link(prev, e *cached) {
	if prev != nil && e != nil && prev.next.Load() != e {
		prev.next.Store(e)
	}
}

// put remembers msg as raw's decoding (a tool return with the name its
// call gave it there: named corrects it where another call precedes it).
func (c *Cache) put(raw []byte, msg processor.Message) *cached {
	return c.putAux(raw, msg, nil)
}

// putAux is put, with what the codec learnt besides the message (aux must
// hold no slice of raw: raw is not kept). It returns the new entry, or nil
// when it keeps none. A nil Cache keeps nothing.
func (c *Cache) putAux(raw []byte, msg processor.Message, aux any) *cached {
	if c == nil {
		return nil
	}
	size := 2*len(raw) + 64
	if size > c.limit/16 {
		return nil // a message that would crowd out the others
	}
	h := maphash.Bytes(c.seed, raw)
	e := &cached{raw: bytes.Clone(raw), msg: msg, aux: aux}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > c.limit {
		clear(c.items)
		c.bytes = 0
	}
	c.items[h] = append(c.items[h], e)
	c.bytes += size
	return e
}

// skipObject returns the end of the JSON object starting at pos, found by
// its brackets and strings alone (nothing is checked), or -1.
func skipObject(d []byte, pos int) int {
	depth := 0
	for i := pos; i < len(d); i++ {
		switch d[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '"':
			// The closing quote: the next one not escaped.
			for {
				k := bytes.IndexByte(d[i+1:], '"')
				if k < 0 {
					return -1
				}
				i += 1 + k
				n := 0
				for j := i - 1; j > pos && d[j] == '\\'; j-- {
					n++
				}
				if n%2 == 0 {
					break
				}
			}
		}
	}
	return -1
}

// named returns msg as it reads after msgs, the messages before it: a tool
// return takes the name of its call (a new message only when that name is
// not the one it has).
func named(msg processor.Message, nm *namer, msgs []processor.Message) processor.Message {
	if msg.Kind == processor.Request && len(msg.Parts) == 1 {
		if r, ok := msg.Parts[0].(processor.ToolReturn); ok {
			if name := nm.name(msgs, r.ToolCallID); name != r.ToolName {
				r.ToolName = name
				return processor.NewRequest(r)
			}
		}
	}
	return msg
}

// Parse is the package's Parse, taking the messages it decoded before
// from the cache and remembering those it decodes. A nil Cache keeps
// nothing: its Parse is the package's.
func (c *Cache) Parse(data []byte) (*Body, error) {
	return Chat.Parse(data, c)
}

// Rewrites: a message the processors changed is written as the bytes the
// client sent with what changed replaced ([Body.With]), which costs more
// than writing it anew; and the trimmer changes the same old tool outputs
// the same way on every request of a conversation. The cache remembers
// each rewrite by its input (the bytes of the message as received, and
// the message it became), compared in full, and gives the same bytes back
// until it is emptied. Rewrites are kept apart from the decoded messages,
// in at most a quarter of the cache's bytes.

type rewriteKey struct {
	raw  []byte            // a copy of the message's bytes as received
	msg  processor.Message // what it became (a copy)
	lead bool
}

type rewriteEntry struct {
	key rewriteKey
	out []byte // the rewrite; nil when the message is written anew
}

// rewrites is the cache's part holding rewrites.
type rewrites struct {
	mu    sync.Mutex
	items map[uint64][]rewriteEntry
	bytes int
}

// rewriteHash hashes a rewrite's input.
func (c *Cache) rewriteHash(raw []byte, m processor.Message, lead bool) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.Write(raw)
	if lead {
		h.WriteByte(1)
	}
	hashMessage(&h, m)
	return h.Sum64()
}

// getRewrite returns the rewrite of raw as m remembered (nil when m is
// written anew), and whether there is one. A nil Cache holds nothing.
func (c *Cache) getRewrite(raw []byte, m processor.Message, lead bool) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	h := c.rewriteHash(raw, m, lead)
	c.rw.mu.Lock()
	defer c.rw.mu.Unlock()
	for _, e := range c.rw.items[h] {
		if e.key.lead == lead && bytes.Equal(e.key.raw, raw) && processor.Equal(e.key.msg, m) {
			return e.out, true
		}
	}
	return nil, false
}

// putRewrite remembers out as the rewrite of raw as m (nil: written
// anew). out is kept as it is: it must share no bytes with the body it was
// written for, which the host may reuse once the request is done. A nil
// Cache keeps nothing.
func (c *Cache) putRewrite(raw []byte, m processor.Message, lead bool, out []byte) {
	if c == nil {
		return
	}
	size := len(raw) + len(out) + 128
	for _, p := range m.Parts {
		size += processor.PartChars(p)
	}
	limit := c.limit / 4
	if size > limit/16 {
		return
	}
	h := c.rewriteHash(raw, m, lead)
	e := rewriteEntry{key: rewriteKey{raw: bytes.Clone(raw), msg: processor.Clone([]processor.Message{m})[0], lead: lead}, out: out}
	c.rw.mu.Lock()
	defer c.rw.mu.Unlock()
	if c.rw.items == nil || c.rw.bytes+size > limit {
		c.rw.items = map[uint64][]rewriteEntry{}
		c.rw.bytes = 0
	}
	c.rw.items[h] = append(c.rw.items[h], e)
	c.rw.bytes += size
}

// hashMessage writes what tells messages apart (what processor.Equal
// compares, but their metadata) to h.
func hashMessage(h *maphash.Hash, m processor.Message) {
	var n [8]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	bin := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	h.WriteByte(byte(m.Kind))
	for _, p := range m.Parts {
		str(p.PartKind())
		switch p := p.(type) {
		case processor.SystemPrompt:
			str(p.Content)
			str(p.Name)
		case processor.UserPrompt:
			str(p.Content)
			str(p.Name)
			for _, c := range p.Contents {
				str(c.Type)
				str(c.Text)
				bin(c.Data)
			}
		case processor.ToolReturn:
			str(p.ToolCallID)
			str(p.Content)
			bin(p.JSON)
			for _, c := range p.Contents {
				str(c)
			}
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
			str(p.Signature)
			str(p.Raw)
		case processor.Opaque:
			str(p.Type)
			str(p.Raw)
		}
	}
}
