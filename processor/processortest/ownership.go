package processortest

import (
	"context"
	"errors"
	"fmt"

	"github.com/abridge-go/abridge/processor"
)

// RequestPoints returns the lengths of the prefixes of h that an agent
// would have sent: each k such that h[:k] ends with a request that the
// next message (a response) answers, and len(h) when h ends with a
// request. Replaying h[:k] for each k in order is replaying the
// conversation request by request.
func RequestPoints(h []processor.Message) []int {
	var out []int
	for i, m := range h {
		if m.Kind != processor.Request {
			continue
		}
		if i+1 == len(h) || h[i+1].Kind == processor.Response {
			out = append(out, i+1)
		}
	}
	return out
}

// Scribble does to a processor's result what its owner may do: it changes
// every message of out in place (the part values in their parts arrays,
// the bytes of JSON and multi-part contents, the metadata behind Meta),
// replaces every message of the slice, and appends to it, which writes
// into its spare capacity. A processor that kept any of it, or hands the
// same arrays out again, then gives other results than a fresh one.
func Scribble(out []processor.Message) []processor.Message {
	for i := range out {
		m := &out[i]
		for j, p := range m.Parts {
			switch q := p.(type) {
			case processor.ToolReturn:
				for k := range q.JSON {
					q.JSON[k] = '#'
				}
				for k := range q.Contents {
					q.Contents[k] = "scribbled"
				}
			case processor.UserPrompt:
				for k := range q.Contents {
					q.Contents[k] = processor.UserContent{Type: "text", Text: "scribbled"}
				}
			}
			m.Parts[j] = processor.UserPrompt{Content: "processortest: scribbled part"}
		}
		if m.Meta != nil {
			*m.Meta = processor.Meta{ModelName: "scribbled"}
		}
	}
	return replaceAll(out)
}

// replaceAll replaces every message of out and appends to it: what a host
// whose result shares messages with the history it keeps (processors
// share the messages they leave unchanged) may do without touching that
// history.
func replaceAll(out []processor.Message) []processor.Message {
	junk := processor.UserMessage("processortest: replaced by the result's owner")
	for i := range out {
		out[i] = junk
	}
	for range 4 {
		out = append(out, junk)
	}
	return out
}

// checkOwnership runs a processor on the first half of h (a prefix an
// agent would send), scribbles over the result as its owner may, runs it
// on the whole of h, and compares that with what a fresh processor,
// given the same two histories and no scribbling, returns.
func checkOwnership(newProcessor func() processor.Processor, h []processor.Message) error {
	points := RequestPoints(h)
	first := 0
	for _, k := range points {
		if k <= len(h)/2 || first == 0 {
			first = k
		}
	}
	if first == 0 || first == len(h) {
		// Run it on two copies of h instead: the result of the first run
		// must not leak into the second.
		first = len(h)
	}
	ctx := context.Background()
	p, fresh := newProcessor(), newProcessor()
	out, err := process(ctx, p, Clone(h[:first]))
	if err != nil {
		return fmt.Errorf("process the first %d messages: %w", first, err)
	}
	if _, err := process(ctx, fresh, Clone(h[:first])); err != nil {
		return fmt.Errorf("fresh processor, first %d messages: %w", first, err)
	}
	Scribble(out)
	got, err := process(ctx, p, Clone(h))
	if err != nil {
		return fmt.Errorf("process all %d messages after its first result was changed: %w", len(h), err)
	}
	want, err := process(ctx, fresh, Clone(h))
	if err != nil {
		return fmt.Errorf("fresh processor, all %d messages: %w", len(h), err)
	}
	if err := Diff(want, got); err != nil {
		return fmt.Errorf("after its owner changed the result for the first %d messages, the result for all %d differs from a fresh processor's: %w", first, len(h), err)
	}
	return nil
}

// HostModes replays h request by request (see [RequestPoints]) the three
// ways a host keeps a conversation, each with its own processor from
// newProcessor, and checks that every request gets the same result in all
// three:
//
//   - processed: the host stores each result and appends the next
//     messages to it (an agent whose processed history replaces the
//     stored one);
//   - full: the host keeps its full history in one growing array and
//     passes it again before every request;
//   - fresh: the host decodes its full history into new memory for every
//     request (an HTTP middleware, a proxy).
//
// After each request, the fresh host scribbles over the result it got (see
// [Scribble]) and the full host replaces every message of its result and
// appends to it (its parts are those of the history it keeps), as owners
// may. A processor that remembers earlier
// results by where they live, or keeps them by reference, fails here;
// one whose memory is keyed by content gives the three the same results.
// It returns nil or an error naming the first request that differs.
func HostModes(newProcessor func() processor.Processor, h []processor.Message) error {
	ctx := context.Background()
	full, fresh := newProcessor(), newProcessor()
	arr := make([]processor.Message, 0, len(h))
	return Replay(ctx, newProcessor(), h, func(k int, outP []processor.Message) error {
		arr = append(arr, Clone(h[len(arr):k])...)
		outF, err := process(ctx, full, arr)
		if err != nil {
			return fmt.Errorf("full history, request at %d messages: %w", k, err)
		}
		outD, err := process(ctx, fresh, Clone(h[:k]))
		if err != nil {
			return fmt.Errorf("fresh history, request at %d messages: %w", k, err)
		}
		if err := errors.Join(processor.Validate(outP), lastIntact(h[:k], outP)); err != nil {
			return fmt.Errorf("processed history, request at %d messages: %w", k, err)
		}
		if err := Diff(outP, outF); err != nil {
			return fmt.Errorf("request at %d messages: full history differs from processed history: %w", k, err)
		}
		if err := Diff(outP, outD); err != nil {
			return fmt.Errorf("request at %d messages: fresh history differs from processed history: %w", k, err)
		}
		// The processed host keeps what it got and appends to it (Replay);
		// the others scribble over theirs, as owners may (the full host
		// keeps its own history, which a processor may have returned as
		// it is).
		if !aliases(outF, arr) {
			replaceAll(outF)
		}
		Scribble(outD)
		return nil
	})
}

// Replay runs p over h request by request (see [RequestPoints]) as a host
// that keeps its processed history does: before each request it appends
// copies of the messages that came since the previous request to p's
// result for that request, and sends that. After each request it calls
// each, when not nil, with the request's end in h and p's result, which
// each must not change. It stops at the first error, p's (naming the
// request) or each's.
func Replay(ctx context.Context, p processor.Processor, h []processor.Message, each func(k int, out []processor.Message) error) error {
	var stored []processor.Message
	next := 0
	for _, k := range RequestPoints(h) {
		stored = append(stored, Clone(h[next:k])...)
		next = k
		out, err := process(ctx, p, stored)
		if err != nil {
			return fmt.Errorf("processed history, request at %d messages: %w", k, err)
		}
		if each != nil {
			if err := each(k, out); err != nil {
				return err
			}
		}
		stored = out
	}
	return nil
}

// aliases reports whether out starts where in does (a processor may
// return its input itself).
func aliases(out, in []processor.Message) bool {
	return len(out) > 0 && len(in) > 0 && &out[0] == &in[0]
}
