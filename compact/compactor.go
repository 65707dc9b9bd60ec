package compact

import (
	"context"

	"github.com/abridge-go/abridge/processor"
)

// Compactor compacts a history now, whatever its triggers say: what the
// agent and the middleware call once after the provider refused a request
// as too long for its context window, before the one retry. It receives
// the history that was being sent (ending with the request about to be
// sent, read-only) and returns a shorter valid history ending with that
// same request. A window's Compact method fits, and any processor wrapped
// in [Func].
type Compactor interface {
	Compact(ctx context.Context, history []processor.Message) ([]processor.Message, error)
}

// Func adapts a function, such as a processor's Process method, to the
// [Compactor] interface.
type Func func(ctx context.Context, history []processor.Message) ([]processor.Message, error)

// Compact calls f(ctx, history).
func (f Func) Compact(ctx context.Context, history []processor.Message) ([]processor.Message, error) {
	return f(ctx, history)
}
