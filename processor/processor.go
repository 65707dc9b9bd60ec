package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Processor transforms a history before it is sent to a model.
//
// The contract:
//   - The input is read-only. Process must not modify the slice it is given
//     nor any message or part it points to; it returns a new slice, which
//     may share unchanged messages with the input (or the input itself,
//     when nothing changes).
//   - The output belongs to the caller, who may change it or append to it.
//     A processor never writes to a slice it returned, nor to anything it
//     returned in it, and keeps none of it by reference: what it remembers
//     between calls (a cache) it copies, keys by content and checks
//     against the content it stands for, never by where a value lives in
//     memory. So the same history gives the same result however the host
//     keeps it: the processed history stored and appended to, the full
//     history in the same memory, or decoded afresh for every request.
//   - The output is a valid history (see [Validate]): non-empty, ending with
//     a request, every tool call answered right after its response and no
//     tool return without its call.
//   - The last message of the input (the request about to be sent) is
//     returned unchanged, as the last message of the output.
//   - Process is safe for concurrent use by many conversations.
//   - Anything that waits (a model call) honours ctx cancellation.
//
// A [Chain] checks the output of each processor against this contract.
type Processor interface {
	Process(ctx context.Context, history []Message) ([]Message, error)
}

// Func adapts an ordinary function to the [Processor] interface.
type Func func(ctx context.Context, history []Message) ([]Message, error)

// Process calls f(ctx, history).
func (f Func) Process(ctx context.Context, history []Message) ([]Message, error) {
	return f(ctx, history)
}

// Errors returned when a history breaks the contract. A [ChainError] wraps
// one of them together with the position of the processor that produced the
// history; [Validate] wraps them with the index of the offending message.
var (
	// ErrEmptyHistory: the history has no messages.
	ErrEmptyHistory = errors.New("empty history")
	// ErrNoFinalRequest: the history does not end with a request.
	ErrNoFinalRequest = errors.New("history does not end with a request")
	// ErrOrphanToolReturn: a tool return (or retry prompt with a call ID)
	// does not answer a call of the response right before it.
	ErrOrphanToolReturn = errors.New("tool return without a matching tool call")
	// ErrUnansweredToolCall: a tool call is not answered by a tool return
	// before the next non-tool content.
	ErrUnansweredToolCall = errors.New("tool call without a tool return")
	// ErrLastRequestAltered: a processor changed or dropped the last
	// request of the history it was given.
	ErrLastRequestAltered = errors.New("last request altered")
	// ErrMalformed: a message is malformed (unknown kind, a part of the
	// wrong kind, a tool call or return without an ID).
	ErrMalformed = errors.New("malformed message")
)

// ChainError reports which processor of a chain broke the contract or failed.
type ChainError struct {
	// Position is the processor's zero-based position in the flattened
	// chain, or -1 when the chain's input itself was invalid.
	Position int
	// Processor is the failing processor's type, as fmt's %T prints it
	// (for one marked [Required], the type of the processor it marks).
	Processor string
	// Err is the underlying error: a contract sentinel (wrapped with
	// details) or the processor's own error.
	Err error
}

// Error describes the failure and the processor's position.
func (e *ChainError) Error() string {
	if e.Position < 0 {
		return "chain input: " + e.Err.Error()
	}
	return fmt.Sprintf("processor %d (%s): %v", e.Position, e.Processor, e.Err)
}

// Unwrap returns the underlying error.
func (e *ChainError) Unwrap() error { return e.Err }

type chain []Processor

// Chain composes processors into one that runs them in order, the first one
// first, each on the output of the previous one. After each processor it
// checks the output against the [Processor] contract and stops with a
// [*ChainError] naming the processor's position when the contract is broken
// or the processor fails. When the chain's input is itself invalid, the
// error has Position -1, unless the first processor returned a valid
// history (as [Repair] does): that history's last request is then the one
// the rest of the chain must keep intact. Nested chains are flattened; Chain() returns a
// processor that checks its input and returns it unchanged, and Chain(p)
// returns p itself. The chain keeps its own copy of ps.
func Chain(ps ...Processor) Processor {
	var flat chain
	for _, p := range ps {
		if p == nil {
			continue
		}
		if c, ok := p.(chain); ok {
			flat = append(flat, c...)
			continue
		}
		flat = append(flat, p)
	}
	if len(flat) == 1 {
		return flat[0]
	}
	return flat
}

// Unchain returns the processors p runs in order: those of a [Chain], or p
// alone for any other processor (none for nil). The slice is the caller's.
func Unchain(p Processor) []Processor {
	switch p := p.(type) {
	case nil:
		return nil
	case chain:
		return slices.Clone([]Processor(p))
	}
	return []Processor{p}
}

// Last returns the last processor p runs (see [Unchain]) that is a T, and
// whether there is one; a processor marked [Required] counts as the one it
// marks. The agent and the middleware find the compactor of their chain
// this way: the window, which can compact a history now after the
// provider reported it too long.
func Last[T any](p Processor) (T, bool) {
	ps := Unchain(p)
	for i := len(ps) - 1; i >= 0; i-- {
		if t, ok := unmarked(ps[i]).(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// Process runs the processors in order.
func (c chain) Process(ctx context.Context, history []Message) ([]Message, error) {
	if len(c) == 0 {
		if err := Validate(history); err != nil {
			return nil, &ChainError{Position: -1, Err: err}
		}
		return history, nil
	}
	if len(history) == 0 {
		return nil, &ChainError{Position: -1, Err: ErrEmptyHistory}
	}
	last := history[len(history)-1]
	cur := history
	for i, p := range c {
		if err := ctx.Err(); err != nil {
			return nil, &ChainError{Position: i, Processor: fmt.Sprintf("%T", unmarked(p)), Err: err}
		}
		out, err := p.Process(ctx, cur)
		if err == nil {
			err = CheckOutput(out, last)
		}
		if err != nil && i == 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			if verr := Validate(history); verr != nil {
				// The input was already broken. A first processor that
				// repaired it (see Repair) may have had to change the last
				// request; its valid output is then the reference for the
				// rest of the chain. Otherwise the input is to blame.
				if Validate(out) != nil || !errors.Is(err, ErrLastRequestAltered) {
					return nil, &ChainError{Position: -1, Err: verr}
				}
				err = nil
				last = out[len(out)-1]
			}
		}
		if err != nil {
			return nil, &ChainError{Position: i, Processor: fmt.Sprintf("%T", unmarked(p)), Err: err}
		}
		cur = out
	}
	return cur, nil
}

// CheckOutput checks a processor's output out against the contract: a
// valid history (see [Validate]) that ends with last, the request that was
// about to be sent, unchanged ([ErrLastRequestAltered] otherwise). The
// chain checks each processor's output with it; a caller running a single
// processor itself (a chain of one is that processor) checks with it too.
func CheckOutput(out []Message, last Message) error {
	if err := Validate(out); err != nil {
		return err
	}
	if !Equal(out[len(out)-1], last) {
		return ErrLastRequestAltered
	}
	return nil
}

// When returns a processor that applies p only when pred reports true for
// the history, and otherwise returns the history unchanged.
func When(pred func(ctx context.Context, history []Message) bool, p Processor) Processor {
	return Func(func(ctx context.Context, history []Message) ([]Message, error) {
		if !pred(ctx, history) {
			return history, nil
		}
		return p.Process(ctx, history)
	})
}
