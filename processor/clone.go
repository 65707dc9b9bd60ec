package processor

import (
	"bytes"
	"slices"
)

// Clone returns a copy of history that shares nothing a host could change
// in place with it: a new message slice, new parts slices, new metadata,
// and new byte slices and content lists inside parts. Strings, being
// immutable, are shared, and so is every part that holds no slice: its
// interface value is kept as it is, since the value boxed in it cannot be
// changed. Nil slices stay nil and empty ones
// empty, so [Equal] holds between each message and its copy.
//
// A processor that remembers the messages it has seen keeps a Clone of
// them: a host changing its history in place cannot change the copy, and
// finding the very same parts again later is cheap to check.
func Clone(history []Message) []Message {
	if history == nil {
		return nil
	}
	out := make([]Message, len(history))
	for i, m := range history {
		if m.Parts != nil {
			parts := make([]Part, len(m.Parts))
			for j, p := range m.Parts {
				parts[j] = clonePart(p)
			}
			m.Parts = parts
		}
		if m.Meta != nil {
			meta := *m.Meta
			m.Meta = &meta
		}
		out[i] = m
	}
	return out
}

// clonePart returns p itself when it holds no slice, and a copy of it with
// its slices copied otherwise.
func clonePart(p Part) Part {
	switch q := p.(type) {
	case UserPrompt:
		if q.Contents == nil {
			return p
		}
		cs := make([]UserContent, len(q.Contents))
		for k, c := range q.Contents {
			c.Data = bytes.Clone(c.Data)
			cs[k] = c
		}
		q.Contents = cs
		return q
	case ToolReturn:
		if q.JSON == nil && q.Contents == nil {
			return p
		}
		q.JSON = bytes.Clone(q.JSON)
		q.Contents = slices.Clone(q.Contents)
		return q
	}
	return p // the other parts hold only strings and bools
}
