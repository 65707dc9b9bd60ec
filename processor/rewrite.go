package processor

import "slices"

// MapParts returns m with each of its parts passed through f, which
// returns the part to put in its place and true, or false to keep the part
// as it is (what it returns with false is ignored). When f keeps every
// part, MapParts returns m itself and false: nothing is copied. Otherwise
// it returns a copy of m with a new parts slice, the parts f kept shared
// with m, and true. m is never modified.
//
// It is the part-level half of rewriting a history without modifying it;
// [Edit] is the history-level half.
func MapParts(m Message, f func(p Part) (Part, bool)) (Message, bool) {
	// Small enough to be inlined, so that a caller's f is called directly.
	for j := range m.Parts {
		if q, changed := f(m.Parts[j]); changed {
			return mapPartsFrom(m, j, q, f)
		}
	}
	return m, false
}

// mapPartsFrom is MapParts from the first part f changed, j, into q.
func mapPartsFrom(m Message, j int, q Part, f func(p Part) (Part, bool)) (Message, bool) {
	parts := slices.Clone(m.Parts)
	parts[j] = q
	for k := j + 1; k < len(parts); k++ {
		if q, changed := f(parts[k]); changed {
			parts[k] = q
		}
	}
	m.Parts = parts
	return m, true
}

// Edit rewrites some messages of a history without modifying it: the
// history slice is copied at the first [Edit.Set], so a history nothing is
// set in is returned as it is, at no cost. Get one with [EditHistory].
type Edit struct {
	in, out []Message
}

// EditHistory starts an edit of history, which the edit never modifies.
func EditHistory(history []Message) Edit {
	return Edit{in: history}
}

// Set puts m at index i of the edited history.
func (e *Edit) Set(i int, m Message) {
	if e.out == nil {
		e.out = slices.Clone(e.in)
	}
	e.out[i] = m
}

// Changed reports whether any message was set.
func (e *Edit) Changed() bool { return e.out != nil }

// History returns the edited history: the history the edit started from
// when nothing was set, else the copy holding the messages set (every
// other message shared with the original).
func (e *Edit) History() []Message {
	if e.out == nil {
		return e.in
	}
	return e.out
}
