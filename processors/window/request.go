package window

import "context"

// Request is what a host tells the window of one request, carried by its
// context ([WithRequest]) to every compaction made for it, the summaries
// written ahead in the background included. The zero value is a request
// of no named conversation, paid by nobody in particular, whose
// summarizer may be called.
type Request struct {
	// Conversation names the conversation the request belongs to ("" is
	// none): the window keeps its summaries apart from other
	// conversations' even when their histories begin alike. Without it,
	// conversations are told apart by content.
	Conversation string
	// Payer names who pays for the request's summaries: an identity (a
	// hash, never the credential itself) of the credential the
	// summarizer's calls will carry, for a host that serves several.
	// Each payer has its own circuit breaker, so failures on one
	// credential never stop another's summaries, and its own share of
	// the background work (see [Pool]); requests naming none share one.
	Payer string
	// Unpaid, when set, makes the window call neither its summarizer nor
	// its fallback for the request, and save nothing: it applies the
	// summaries its store has, and a compaction due uses the offline
	// digest (a fallback with Reason "unpaid", ErrUnpaid). A host sets it
	// for requests it will not pay summaries for, such as those whose
	// credential the upstream has not yet accepted.
	Unpaid bool
	// OnEvent, when set, receives the window's events for the request
	// (after Options.OnEvent): what a host records of this request alone,
	// such as the receipts of its compactions. It must be safe for
	// concurrent use.
	OnEvent func(Event)
}

type requestKey struct{}

// WithRequest returns a copy of ctx that carries r, in place of any
// Request ctx carried.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestOf returns the Request ctx carries, or the zero Request.
func RequestOf(ctx context.Context) Request {
	r, _ := ctx.Value(requestKey{}).(Request)
	return r
}
