package extend

import (
	"unsafe"

	"github.com/abridge-go/abridge/processor"
)

// Copy returns copies of ms as [processor.Clone] makes them (sharing
// nothing a host could change in place with ms, and [processor.Equal] to
// them), whose parts lie one after the other in one array: reading the
// copies in order reads memory in order. A message whose parts hold no
// slice (see Plain) costs no allocation of its own.
func Copy(ms []processor.Message) []processor.Message {
	if ms == nil {
		return nil
	}
	out := make([]processor.Message, len(ms))
	copyInto(out, make([]processor.Part, countParts(ms)), ms)
	return out
}

// copyInto fills dst, as long as src, with copies of src (see Copy),
// their parts in parts, which has room for all of them.
func copyInto(dst []processor.Message, parts []processor.Part, src []processor.Message) {
	for k, m := range src {
		if !Plain(m) {
			m = processor.Clone(src[k : k+1])[0]
		} else if m.Meta != nil {
			meta := *m.Meta
			m.Meta = &meta
		}
		if m.Parts != nil {
			p := parts[:len(m.Parts):len(m.Parts)]
			parts = parts[copy(p, m.Parts):]
			m.Parts = p
		}
		dst[k] = m
	}
}

// countParts returns the number of parts of ms.
func countParts(ms []processor.Message) int {
	n := 0
	for _, m := range ms {
		n += len(m.Parts)
	}
	return n
}

// room returns n elements taken from the spare room of *arena, clipped,
// and leaves *arena holding them. When the room is short it starts a new
// array, at least twice as large as the last: the elements taken before
// stay where they are.
func room[T any](arena *[]T, n int) []T {
	a := *arena
	if cap(a)-len(a) < n {
		a = make([]T, 0, max(n, 2*cap(a), 16))
	}
	*arena = a[:len(a)+n]
	return a[len(a) : len(a)+n : len(a)+n]
}

// Plain reports whether no part of m holds a slice (whose array a host
// could change in place while the part's boxed value stays the same): a
// copy of m may then share its parts' boxed values, and finding the same
// boxed values again means finding the same content.
func Plain(m processor.Message) bool {
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

// SameParts reports whether a and b hold the very same parts: as many, and
// each the same boxed value (the same dynamic type and data word, compared
// without reading the value). Parts holding no slice (see Plain) that are
// the same boxed values have the same content.
func SameParts(a, b []processor.Part) bool {
	if len(a) != len(b) {
		return false
	}
	for j := range a {
		x := (*iface)(unsafe.Pointer(&a[j]))
		y := (*iface)(unsafe.Pointer(&b[j]))
		if x.typ != y.typ || x.data != y.data {
			return false
		}
	}
	return true
}
