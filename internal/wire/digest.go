package wire

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/abridge-go/abridge/processor"
)

// digestSeed seeds [Hasher] and so [Digest]: one seed for the process, so that a message's
// digest is the same whichever body or cache it is read from.
var digestSeed = maphash.MakeSeed()

// Digest returns a 64-bit digest of m's content as the provider sees it,
// as processor.WalkContent walks it: its kind, its parts' kinds and texts,
// its name and refusal; not the rest of its metadata (ids, usage, cache
// markers) nor a tool return's name. Messages of the same content have the
// same digest within one process; others differ but by a collision.
func Digest(m processor.Message) uint64 {
	var h Hasher
	processor.WalkContent(m, h.num, h.Text)
	return h.Sum()
}

// Hasher folds strings and numbers into a 64-bit digest cheaply: each
// string in one call to maphash (one seed for the process, so digests are
// the same whichever body or cache they come from, within one process),
// without a copy, and each value mixed into the state with a rotation and
// a multiplication by an odd constant, a bijection, so that each value fed
// changes what follows. The zero value is ready; a copy goes on
// separately.
type Hasher struct{ h uint64 }

// Num feeds v.
func (d *Hasher) Num(v uint64) { d.h = bits.RotateLeft64(d.h^v, 27) * 0x9e3779b97f4a7c15 }

func (d *Hasher) num(v int) { d.Num(uint64(v)) }

// Text feeds a string as its hash (which depends on its length too); an
// empty one as 0, without a call.
func (d *Hasher) Text(s string) {
	var v uint64
	if s != "" {
		v = maphash.String(digestSeed, s)
	}
	d.Num(v)
}

// Sum returns the digest of what was fed, mixed by MurmurHash3's
// finalizer (its constants).
func (d *Hasher) Sum() uint64 {
	h := d.h
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Digest returns [Digest] of Messages[i] as the body was read: for a
// message the body took whole from its cache, the digest the cache's entry
// keeps, computed once for all the requests that repeat it (a request's
// history mostly repeats the one before); for the others it is computed.
// A host that identifies a conversation by its history's content (openaimw
// anchors each conversation's token estimate so) then hashes only what is
// new in each request.
func (b *Body) Digest(i int) uint64 {
	if e := b.entry(i); e != nil {
		d := e.digest.Load()
		if d == 0 {
			d = Digest(e.msg)
			e.digest.Store(d)
		}
		return d
	}
	if j := i - b.lead; j >= 0 && j < len(b.runs) && b.runs[j] != nil {
		r := b.runs[j]
		d := r.digest.Load()
		if d == 0 {
			d = Digest(r.msg)
			r.digest.Store(d)
		}
		return d
	}
	return Digest(b.Messages[i])
}

// Tokens returns processor.ContentTokens(b.Messages), counting the tokens
// of each message taken whole from the cache (and each response the
// cache's memo gave) once for all the requests that repeat it, as Digest
// does its digest: an agent sends its whole history with every request.
// A tool return's name, which the body may give a cached message, counts
// for nothing.
func (b *Body) Tokens() int {
	n := 0
	for i := range b.Messages {
		n += b.messageTokens(i)
	}
	return n
}

// messageTokens returns processor.MessageTokens(b.Messages[i]).
func (b *Body) messageTokens(i int) int {
	if e := b.entry(i); e != nil {
		return memoTokens(&e.tokens, e.msg)
	}
	if j := i - b.lead; j >= 0 && j < len(b.runs) && b.runs[j] != nil {
		return memoTokens(&b.runs[j].tokens, b.runs[j].msg)
	}
	return processor.MessageTokens(b.Messages[i])
}

// memoTokens returns processor.MessageTokens(m), counting it when memo
// (the count plus one, 0 before) has none yet.
func memoTokens(memo *atomic.Int64, m processor.Message) int {
	if n := memo.Load(); n > 0 {
		return int(n - 1)
	}
	n := processor.MessageTokens(m)
	memo.Store(int64(n) + 1)
	return n
}
