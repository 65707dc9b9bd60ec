package middleware

import (
	"hash/maphash"
	"math/bits"

	"github.com/abridge-go/abridge/processor"
)

// digestSeed seeds hasher and so digest: one seed for the process, so
// that a message's digest is the same whichever body it is read from.
var digestSeed = maphash.MakeSeed()

// digest returns a 64-bit digest of m's content as the provider sees it,
// as processor.WalkContent walks it: its kind, its parts' kinds and texts,
// its name and refusal; not the rest of its metadata (ids, usage, cache
// markers) nor a tool return's name. Messages of the same content have the
// same digest within one process; others differ but by a collision.
func digest(m processor.Message) uint64 {
	var h hasher
	processor.WalkContent(m, h.num, h.Text)
	return h.Sum()
}

// hasher folds strings and numbers into a 64-bit digest cheaply: each
// string in one call to maphash (one seed for the process, so digests are
// the same whichever body they come from, within one process),
// without a copy, and each value mixed into the state with a rotation and
// a multiplication by an odd constant, a bijection, so that each value fed
// changes what follows. The zero value is ready; a copy goes on
// separately.
type hasher struct{ h uint64 }

// Num feeds v.
func (d *hasher) Num(v uint64) { d.h = bits.RotateLeft64(d.h^v, 27) * 0x9e3779b97f4a7c15 }

func (d *hasher) num(v int) { d.Num(uint64(v)) }

// Text feeds a string as its hash (which depends on its length too); an
// empty one as 0, without a call.
func (d *hasher) Text(s string) {
	var v uint64
	if s != "" {
		v = maphash.String(digestSeed, s)
	}
	d.Num(v)
}

// Sum returns the digest of what was fed, mixed by MurmurHash3's
// finalizer (its constants).
func (d *hasher) Sum() uint64 {
	h := d.h
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
