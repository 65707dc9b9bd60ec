package processor

import (
	"context"
	"fmt"
)

// SplitAtLastRequest splits history after its last request. head is the
// history up to and including that request: what a processor was given
// before the request was sent. rest is what came after it, typically the
// model's answer at the end of a saved transcript; it is empty when history
// ends with a request. head is nil when history holds no request.
//
// Both share history's memory and neither is to be written to; head has no
// room past its length, so appending to it never writes over rest.
func SplitAtLastRequest(history []Message) (head, rest []Message) {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Kind == Request {
			return history[: i+1 : i+1], history[i+1:]
		}
	}
	return nil, history
}

// ProcessTranscript runs p over a saved transcript as p ran before the
// transcript's last request was sent: p processes the messages up to and
// including that request (see [SplitAtLastRequest]), and the messages that
// came after it (the model's answer, a tool loop's last response) follow
// p's result unchanged. A history that ends with a request is simply
// p.Process(ctx, history).
//
// A history without a request is an error matching [ErrNoFinalRequest]
// (an empty one [ErrEmptyHistory]). The result belongs to the caller, as
// p's does; history is not modified.
func ProcessTranscript(ctx context.Context, p Processor, history []Message) ([]Message, error) {
	if len(history) == 0 {
		return nil, ErrEmptyHistory
	}
	head, rest := SplitAtLastRequest(history)
	if head == nil {
		return nil, fmt.Errorf("%w: the transcript's %d messages are all responses", ErrNoFinalRequest, len(history))
	}
	out, err := p.Process(ctx, head)
	if err != nil || len(rest) == 0 {
		return out, err
	}
	// A new slice: out may be head itself, which shares rest's memory.
	return append(out[:len(out):len(out)], rest...), nil
}
