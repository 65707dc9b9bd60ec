package processortest

import (
	"context"
	"fmt"

	"github.com/abridge-go/abridge/processor"
)

// CheckRewrite checks a processor that rewrites parts in place and keeps
// every message (a trimmer, a clearer), such as its fuzz tests run it on
// random histories: a processor from newProcessor leaves h untouched and
// returns a valid history as long as h that ends with h's last request
// unchanged; run again on its own output it changes nothing; and a fresh
// processor from newProcessor returns the same. It returns the first
// output, for the checks particular to the processor, or an error saying
// which rule failed.
func CheckRewrite(newProcessor func() processor.Processor, h []processor.Message) ([]processor.Message, error) {
	ctx := context.Background()
	before := Clone(h)
	p := newProcessor()
	out, err := process(ctx, p, h)
	if err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	if err := Diff(before, h); err != nil {
		return nil, fmt.Errorf("input modified: %w", err)
	}
	if err := processor.Validate(out); err != nil {
		return nil, fmt.Errorf("invalid output: %w", err)
	}
	if len(out) != len(h) {
		return nil, fmt.Errorf("%d messages out, %d in", len(out), len(h))
	}
	if err := lastIntact(h, out); err != nil {
		return nil, err
	}
	again, err := process(ctx, p, out)
	if err != nil {
		return nil, fmt.Errorf("process its own output: %w", err)
	}
	if err := Diff(out, again); err != nil {
		return nil, fmt.Errorf("not idempotent: %w", err)
	}
	fresh, err := process(ctx, newProcessor(), Clone(h))
	if err != nil {
		return nil, fmt.Errorf("process with a fresh processor: %w", err)
	}
	if err := Diff(fresh, out); err != nil {
		return nil, fmt.Errorf("differs from a fresh processor's result: %w", err)
	}
	return out, nil
}

// WithContent returns a copy of h with the content of its first tool
// return replaced by content, where a fuzz test puts its fuzzed text; h
// itself when content is empty or h has no tool return. h is not
// modified.
func WithContent(h []processor.Message, content string) []processor.Message {
	if content == "" {
		return h
	}
	for i, m := range h {
		for j, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok {
				out := append([]processor.Message(nil), h...)
				out[i].Parts = append([]processor.Part(nil), m.Parts...)
				out[i].Parts[j] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: content}
				return out
			}
		}
	}
	return h
}

// Prefix returns h when it has at most n messages, else its longest prefix
// of at most n messages that an agent would have sent (see
// [RequestPoints]), or its first message when there is none: a history
// short enough to replay request by request ([HostModes] is quadratic in
// its length) in a fuzz test's body, which runs thousands of times.
func Prefix(h []processor.Message, n int) []processor.Message {
	if len(h) <= n {
		return h
	}
	short := h[:1]
	for _, k := range RequestPoints(h) {
		if k <= n {
			short = h[:k]
		}
	}
	return short
}
