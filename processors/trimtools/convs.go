package trimtools

import (
	"unsafe"

	"github.com/abridge-go/abridge/internal/extend"
	"github.com/abridge-go/abridge/processor"
)

// DefaultConversations is the number of conversations whose last history
// and result a Trimmer remembers, used when [Options.Conversations] is 0.
const DefaultConversations = 64

// minTracked is the length from which a history's conversation is
// remembered: shorter ones cost little to trim whole.
const minTracked = 32

// processTracked is Process for a history long enough to be worth
// remembering. The Trimmer remembers, for a few conversations, the history
// it was last given and its result, so that the same history passed again
// grown by a few messages gets the previous result extended in place.
//
// A conversation is known by the address of its history's first message,
// which a host appending to its history keeps until the array is
// reallocated. The address is only a hint: a remembered result is
// extended only once every message it was made from has been found,
// unchanged, at the start of the new history. An address is tracked from
// its second sighting, so an agent whose every history is a new slice
// pays a lookup and nothing else.
func (t *Trimmer) processTracked(history []processor.Message) []processor.Message {
	key := uintptr(unsafe.Pointer(unsafe.SliceData(history)))
	e := t.convs.Take(key)
	if e != nil && e.Reuses(history) {
		out := t.extend(e, history)
		t.convs.Put(key, e)
		return out
	}
	if e == nil && !t.convs.Sighted(key) {
		return t.trimAll(history, 0)
	}
	n := len(history)
	out := t.trimAll(history, extend.Spare(n))
	if unsafe.SliceData(out) == unsafe.SliceData(history) {
		// Nothing to trim: the walk just made costs no copy, so there is
		// nothing to save by remembering; wait for a result worth it.
		t.convs.Mark(key)
		return out
	}
	e = &extend.Entry{Out: out}
	e.Remember(history)
	for j := range out {
		if unsafe.SliceData(out[j].Parts) != unsafe.SliceData(history[j].Parts) {
			e.Own(j)
		}
	}
	t.convs.Put(key, e)
	return extend.Clip(out)
}

// extend returns the result for history, which begins with the messages e
// saw, built from the result e holds, and updates e.
func (t *Trimmer) extend(e *extend.Entry, history []processor.Message) []processor.Message {
	pn, n := e.End(), len(history)
	end := n - t.keepLast // messages before end are trimmed
	out := e.Out
	fresh := false // out is an array made by this call
	// Messages that were among the last keepLast and no longer are: a
	// change there cannot be written into the array already returned.
	for j := max(pn-t.keepLast, 0); j < min(pn, end); j++ {
		parts := t.trimMessage(&history[j])
		if parts == nil {
			continue
		}
		if !fresh {
			out = copyPrefix(out, pn, n)
			fresh = true
		}
		out[j].Parts = parts
		e.Own(j)
	}
	for j := pn; j < n; j++ {
		m := history[j]
		if j < end {
			if parts := t.trimMessage(&m); parts != nil {
				m.Parts = parts
				e.Own(j)
			}
		}
		out = append(out, m)
	}
	e.Remember(history)
	e.Out = out
	return extend.Clip(out)
}

// copyPrefix returns a new array holding the first k messages of prev,
// with room for n messages and more.
func copyPrefix(prev []processor.Message, k, n int) []processor.Message {
	out := make([]processor.Message, k, n+extend.Spare(n))
	copy(out, prev[:k])
	return out
}
