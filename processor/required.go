package processor

import (
	"context"
	"slices"
)

// required is a processor marked by Required.
type required struct{ p Processor }

// Process runs the processor Required marked.
func (r required) Process(ctx context.Context, history []Message) ([]Message, error) {
	return r.p.Process(ctx, history)
}

// Required marks p as required: a host that processes a request on its
// way to a provider must not send it unprocessed when processing fails.
// The middleware and the proxy (packages middleware and proxy) send a
// request as the app wrote it when its chain fails, which is right for the
// window (the request still fits, or the provider says it does not) and
// wrong for a processor whose work is a guarantee, such as redaction: a
// secret would go upstream. A chain that holds a required processor fails
// closed as a whole: when any of its processors fails, the request is
// refused with an error and sent nowhere, since sending it unprocessed
// would skip the required one too. Mark a whole chain with Required(chain)
// to fail closed whatever its processors are.
//
// The marked processor runs as p does, and keeps its place in a chain:
// Required of a chain marks each of its processors, and [Unchain] returns
// them marked. Mark the outermost processor: a processor that wraps a
// marked one (as [When] does) hides the mark. Required(nil) is nil.
func Required(p Processor) Processor {
	switch p := p.(type) {
	case nil, required:
		return p
	case chain:
		marked := make(chain, len(p))
		for i, q := range p {
			marked[i] = Required(q)
		}
		return marked
	}
	return required{p}
}

// IsRequired reports whether p is marked [Required], or is a chain that
// holds a processor so marked: whether a host must refuse, rather than
// send unprocessed, a request p failed to process.
func IsRequired(p Processor) bool {
	return slices.ContainsFunc(Unchain(p), func(q Processor) bool {
		_, ok := q.(required)
		return ok
	})
}

// unmarked returns the processor Required marked, or p itself.
func unmarked(p Processor) Processor {
	if r, ok := p.(required); ok {
		return r.p
	}
	return p
}
