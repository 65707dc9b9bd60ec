package window

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"hash"
	"slices"
	"sync"

	"github.com/abridge-go/abridge/processor"
)

// hasher feeds the content of messages to a SHA-256, through a buffer so
// that neither small fields nor long strings cost a write (or a copy into
// a new byte slice) each. With cheap set it feeds, of each string, only
// its length and its first and last keyChars bytes (see [Key]).
type hasher struct {
	h       hash.Hash
	cheap   bool
	flushed bool // some of what was fed went on to h
	n       int
	buf     [4096]byte
	out     [sha256.Size]byte
}

// keyChars is how much of each end of a string a cheap hash reads.
const keyChars = 32

func newHasher(cheap bool) *hasher {
	return &hasher{h: sha256.New(), cheap: cheap}
}

func (h *hasher) flush() {
	if h.n > 0 {
		h.h.Write(h.buf[:h.n])
		h.n = 0
		h.flushed = true
	}
}

func (h *hasher) bytes(b []byte) {
	for len(b) > 0 {
		if h.n == len(h.buf) {
			h.flush()
		}
		k := copy(h.buf[h.n:], b)
		h.n += k
		b = b[k:]
	}
}

func (h *hasher) str(s string) {
	for len(s) > 0 {
		if h.n == len(h.buf) {
			h.flush()
		}
		k := copy(h.buf[h.n:], s)
		h.n += k
		s = s[k:]
	}
}

func (h *hasher) num(v int) {
	if len(h.buf)-h.n < binary.MaxVarintLen64 {
		h.flush()
	}
	h.n += binary.PutUvarint(h.buf[h.n:], uint64(v))
}

// text feeds a string: its length, then its bytes (or, when cheap, only
// its ends).
func (h *hasher) text(s string) {
	h.num(len(s))
	if h.cheap && len(s) > 2*keyChars {
		h.str(s[:keyChars])
		h.str(s[len(s)-keyChars:])
		return
	}
	h.str(s)
}

// data is text for a byte slice.
func (h *hasher) data(b []byte) {
	h.num(len(b))
	if h.cheap && len(b) > 2*keyChars {
		h.bytes(b[:keyChars])
		h.bytes(b[len(b)-keyChars:])
		return
	}
	h.bytes(b)
}

// Part tags, fed before each part's fields.
const (
	tagSystem = iota + 1
	tagUser
	tagToolReturn
	tagRetry
	tagText
	tagToolCall
	tagThinking
	tagOther
	tagOpaque
)

// message feeds the content of m: its kind, the participant name and
// refusal of its metadata (both sent to the provider), and every field of
// its parts a provider sees. Usage, model name, finish reason and time are
// left out; so is a tool return's tool name, which OpenAI's wire format
// does not carry (conversions fill it from the call).
func (h *hasher) message(m *processor.Message) {
	h.num(int(m.Kind))
	h.num(len(m.Parts))
	if m.Meta != nil {
		h.text(m.Meta.Name)
		h.text(m.Meta.Refusal)
	} else {
		h.num(0)
		h.num(0)
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.SystemPrompt:
			h.num(tagSystem)
			if p.Developer {
				h.num(1)
			} else {
				h.num(0)
			}
			h.text(p.Name)
			h.text(p.Content)
		case processor.UserPrompt:
			h.num(tagUser)
			h.text(p.Name)
			h.text(p.Content)
			if p.Contents == nil {
				h.num(0)
				continue
			}
			h.num(1 + len(p.Contents))
			for _, c := range p.Contents {
				h.text(c.Type)
				h.text(c.Text)
				h.data(c.Data)
			}
		case processor.ToolReturn:
			h.num(tagToolReturn)
			h.text(p.ToolCallID)
			switch {
			case p.JSON != nil:
				h.num(1)
				h.data(p.JSON)
			case p.Contents != nil:
				h.num(2 + len(p.Contents))
				for _, c := range p.Contents {
					h.text(c)
				}
			default:
				h.num(0)
				h.text(p.Content)
			}
		case processor.RetryPrompt:
			h.num(tagRetry)
			h.text(p.ToolCallID)
			h.text(p.ToolName)
			h.text(p.Content)
		case processor.Text:
			h.num(tagText)
			h.text(p.Content)
		case processor.ToolCall:
			h.num(tagToolCall)
			h.text(p.ToolCallID)
			h.text(p.ToolName)
			h.text(p.Args)
		case processor.Thinking:
			h.num(tagThinking)
			h.text(p.Content)
			h.text(p.Signature)
			if p.API != "" || p.Raw != "" {
				// Thinking held whole (digests of thinking without
				// stay what they were).
				h.text(p.API)
				h.text(p.Raw)
			}
		case processor.Opaque:
			h.num(tagOpaque)
			h.text(p.API)
			h.text(p.Type)
			h.text(p.Raw)
		default:
			h.num(tagOther)
		}
	}
}

// sum returns the digest of everything fed so far; more can be fed after.
func (h *hasher) sum() Digest {
	h.flush()
	var d Digest
	copy(d[:], h.h.Sum(h.out[:0])) // into h.out: no new slice each time
	return d
}

// keyer computes keys (see [Key]), reusing its hashers so that a request
// costs no new one, and remembering keys (of single messages, which lasts
// and span ends take, and of a history's head, which every request takes)
// by what their cheap hash is fed: a history sent again with every request
// has each message's key, and its head's, computed once.
type keyer struct {
	pool sync.Pool

	mu    sync.Mutex
	ones  map[string]Key // a key, by the bytes fed for it
	bytes int            // the length of the map's strings
	// prev holds what lasts returned last, by the key of the history's
	// head: a conversation's next request repeats its messages, and their
	// keys are taken from there, each message compared with the one it
	// had (sameContent) rather than fed to a hasher.
	prev      map[Key]*lastKeys
	prevBytes int // the contents the results in prev hold, about
}

// lastKeys is one result of lasts: the messages and their keys.
type lastKeys struct {
	msgs  []processor.Message
	keys  []Key
	bytes int // the messages' contents, about (see contentBytes)
}

// maxPrev and maxPrevBytes bound the results of lasts the keyer keeps
// (their number, and the contents of their messages, which it holds):
// past either, it forgets them all.
const (
	maxPrev      = 1024
	maxPrevBytes = 64 << 20
)

// contentBytes returns about how many bytes of content msgs hold: the
// lengths of their parts' strings, none of them read.
func contentBytes(msgs []processor.Message) int {
	n := 0
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			switch p := p.(type) {
			case processor.SystemPrompt:
				n += len(p.Content)
			case processor.UserPrompt:
				n += len(p.Content)
				for _, c := range p.Contents {
					n += len(c.Text) + len(c.Data)
				}
			case processor.ToolReturn:
				n += len(p.Content) + len(p.JSON)
				for _, c := range p.Contents {
					n += len(c)
				}
			case processor.RetryPrompt:
				n += len(p.Content)
			case processor.Text:
				n += len(p.Content)
			case processor.ToolCall:
				n += len(p.Args)
			case processor.Thinking:
				n += len(p.Content) + len(p.Raw)
			case processor.Opaque:
				n += len(p.Raw)
			}
		}
	}
	return n
}

// maxOneBytes bounds the bytes of the keyer's remembered keys: past it,
// it forgets them all.
const maxOneBytes = 4 << 20

// key returns the cheap key of messages in the conversation scope (""
// when the host named none): the first 16 bytes of the cheap hash of the
// scope, the messages' count and each of them.
func (k *keyer) key(scope string, ms []processor.Message) Key {
	h := k.get()
	defer k.pool.Put(h)
	return k.remembered(h, scope, ms)
}

// one is key("", ms) on h for one message.
func (k *keyer) one(h *hasher, ms []processor.Message) Key { return k.remembered(h, "", ms) }

// remembered is key(scope, ms) on h, taken from the keys remembered when
// it was computed before (the bytes fed compared in full, not a hash of
// them): the key of a history's head, asked for with each request, and
// those of single messages.
func (k *keyer) remembered(h *hasher, scope string, ms []processor.Message) Key {
	h.feedKey(scope, ms)
	if h.flushed {
		return h.keySum() // too long to remember by its bytes
	}
	fed := h.buf[:h.n]
	k.mu.Lock()
	key, ok := k.ones[string(fed)]
	k.mu.Unlock()
	if ok {
		return key
	}
	id := string(fed)
	key = h.keySum()
	k.mu.Lock()
	if k.ones == nil || k.bytes+len(id) > maxOneBytes {
		k.ones, k.bytes = map[string]Key{}, 0
	}
	k.ones[id] = key
	k.bytes += len(id)
	k.mu.Unlock()
	return key
}

// get returns a cheap hasher from the pool (a new one when it is empty);
// the caller puts it back.
func (k *keyer) get() *hasher {
	if h, ok := k.pool.Get().(*hasher); ok {
		return h
	}
	return newHasher(true)
}

// cheapKey is keyer.key on h, which it resets first.
func (h *hasher) cheapKey(scope string, ms []processor.Message) Key {
	h.feedKey(scope, ms)
	return h.keySum()
}

// feedKey resets h and feeds it what a key of ms in scope is the hash of.
func (h *hasher) feedKey(scope string, ms []processor.Message) {
	h.h.Reset()
	h.n = 0
	h.flushed = false
	h.cheap = false
	h.text(scope)
	h.cheap = true
	h.num(len(ms))
	for i := range ms {
		h.message(&ms[i])
	}
}

// keySum returns the key of what h was fed.
func (h *hasher) keySum() Key {
	d := h.sum()
	var out Key
	copy(out[:], d[:])
	return out
}

// state returns the hash's state after everything fed so far, to go on
// from later (see restore).
func (h *hasher) state() []byte {
	h.flush()
	b, err := h.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		// SHA-256 marshals its state whatever it is.
		panic(err)
	}
	return b
}

// restore returns a hasher that goes on from a state made by state.
func restore(state []byte) *hasher {
	h := newHasher(false)
	if err := h.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		// The state was made by state, from a SHA-256.
		panic(err)
	}
	return h
}

// sameContent reports whether a and b have the same content as the hasher
// feeds it (so the same digest): the same kind, participant name and
// refusal, and parts with the same fields a provider sees. Strings are
// compared by value; Go compares two strings that share their bytes
// without reading them, so checking a history against the very messages it
// was copied from costs little.
func sameContent(a, b *processor.Message) bool {
	if a.Kind != b.Kind || len(a.Parts) != len(b.Parts) {
		return false
	}
	var an, ar, bn, br string
	if a.Meta != nil {
		an, ar = a.Meta.Name, a.Meta.Refusal
	}
	if b.Meta != nil {
		bn, br = b.Meta.Name, b.Meta.Refusal
	}
	if an != bn || ar != br {
		return false
	}
	for j := range a.Parts {
		if !samePart(a.Parts[j], b.Parts[j]) {
			return false
		}
	}
	return true
}

// samePart compares two parts as sameContent does.
func samePart(a, b processor.Part) bool {
	switch x := a.(type) {
	case processor.SystemPrompt:
		y, ok := b.(processor.SystemPrompt)
		return ok && x == y
	case processor.UserPrompt:
		y, ok := b.(processor.UserPrompt)
		return ok && x.Name == y.Name && x.Content == y.Content && (x.Contents == nil) == (y.Contents == nil) &&
			slices.EqualFunc(x.Contents, y.Contents, func(c, d processor.UserContent) bool {
				return c.Type == d.Type && c.Text == d.Text && bytes.Equal(c.Data, d.Data)
			})
	case processor.ToolReturn:
		y, ok := b.(processor.ToolReturn)
		if !ok || x.ToolCallID != y.ToolCallID || (x.JSON != nil) != (y.JSON != nil) {
			return false
		}
		switch {
		case x.JSON != nil:
			return bytes.Equal(x.JSON, y.JSON)
		case x.Contents != nil || y.Contents != nil:
			return (x.Contents != nil) == (y.Contents != nil) && slices.Equal(x.Contents, y.Contents)
		}
		return x.Content == y.Content
	case processor.RetryPrompt:
		y, ok := b.(processor.RetryPrompt)
		return ok && x == y
	case processor.Text:
		y, ok := b.(processor.Text)
		return ok && x == y
	case processor.ToolCall:
		y, ok := b.(processor.ToolCall)
		return ok && x == y
	case processor.Thinking:
		y, ok := b.(processor.Thinking)
		return ok && x == y
	case processor.Opaque:
		y, ok := b.(processor.Opaque)
		return ok && x == y
	}
	return false
}

// lasts returns the keys of history[from:len(history)-1]: the messages a
// span of history whose head ends at from may end with (a span never takes
// the last message), with one hasher. The keys of the messages that begin
// the ones it was given last time for the same head (a conversation's
// previous request) are taken from then.
func (k *keyer) lasts(history []processor.Message, from int) []Key {
	if from >= len(history)-1 {
		return nil
	}
	h := k.get()
	defer k.pool.Put(h)
	id := h.cheapKey("", history[:from+1])
	msgs := history[from : len(history)-1]
	out := make([]Key, len(msgs))
	k.mu.Lock()
	p := k.prev[id]
	k.mu.Unlock()
	n := 0
	if p != nil {
		for n < len(msgs) && n < len(p.msgs) && sameContent(&msgs[n], &p.msgs[n]) {
			n++
		}
		copy(out, p.keys[:n])
	}
	for i := n; i < len(out); i++ {
		out[i] = k.one(h, msgs[i:i+1])
	}
	size := 0
	if p != nil && n == len(p.msgs) {
		size = p.bytes // the messages it holds are msgs[:n]
	} else {
		n = 0
	}
	size += contentBytes(msgs[n:])
	last := &lastKeys{msgs: slices.Clone(msgs), keys: slices.Clone(out), bytes: size}
	if last.bytes > maxPrevBytes/16 {
		return out // a history that would crowd out the others
	}
	k.mu.Lock()
	if old := k.prev[id]; old != nil {
		k.prevBytes -= old.bytes
	}
	if k.prev == nil || len(k.prev) >= maxPrev || k.prevBytes+last.bytes > maxPrevBytes {
		k.prev, k.prevBytes = map[Key]*lastKeys{}, 0
	}
	k.prev[id] = last
	k.prevBytes += last.bytes
	k.mu.Unlock()
	return out
}
