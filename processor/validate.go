package processor

import (
	"bytes"
	"fmt"
	"slices"
)

// Validate checks that history is one a provider accepts:
//   - it is non-empty and ends with a request;
//   - every message is a request holding only request parts or a response
//     holding only response parts, and every tool call, tool return and
//     call-answering retry prompt has a call ID;
//   - the tool calls of a response are all answered, each exactly once, by
//     tool returns (or retry prompts with the call's ID) in the requests
//     right after it, before any other request content;
//   - no tool return appears anywhere else.
//
// The error wraps one of the sentinel errors ([ErrEmptyHistory],
// [ErrNoFinalRequest], [ErrOrphanToolReturn], [ErrUnansweredToolCall],
// [ErrMalformed]) and names the index of the offending message.
func Validate(history []Message) error {
	if len(history) == 0 {
		return ErrEmptyHistory
	}
	// open holds the calls of the latest response still waiting for an
	// answer; answering is allowed only while no other request content has
	// been seen since that response.
	var open []ToolCall
	var openAt int
	answering := false
	for i, m := range history {
		switch m.Kind {
		case Response:
			if len(open) > 0 {
				return fmt.Errorf("message %d: call %q (%s) of message %d: %w", i, open[0].ToolCallID, open[0].ToolName, openAt, ErrUnansweredToolCall)
			}
			open = open[:0]
			answering = false
			for j, p := range m.Parts {
				switch p := p.(type) {
				case ToolCall:
					if p.ToolCallID == "" {
						return fmt.Errorf("message %d part %d: tool call %q without an ID: %w", i, j, p.ToolName, ErrMalformed)
					}
					for _, o := range open {
						if o.ToolCallID == p.ToolCallID {
							return fmt.Errorf("message %d part %d: duplicate tool call ID %q: %w", i, j, p.ToolCallID, ErrMalformed)
						}
					}
					open = append(open, p)
					answering = true
					openAt = i
				case Text, Thinking:
				default:
					return fmt.Errorf("message %d part %d: %s part in a response: %w", i, j, partKind(p), ErrMalformed)
				}
			}
		case Request:
			if len(m.Parts) == 0 {
				return fmt.Errorf("message %d: request without parts: %w", i, ErrMalformed)
			}
			for j, p := range m.Parts {
				id, isAnswer := "", false
				switch p := p.(type) {
				case ToolReturn:
					id, isAnswer = p.ToolCallID, true
					if id == "" {
						return fmt.Errorf("message %d part %d: tool return (%s) without a call ID: %w", i, j, p.ToolName, ErrMalformed)
					}
				case RetryPrompt:
					id, isAnswer = p.ToolCallID, p.ToolCallID != ""
				case SystemPrompt, UserPrompt:
				default:
					return fmt.Errorf("message %d part %d: %s part in a request: %w", i, j, partKind(p), ErrMalformed)
				}
				if !isAnswer {
					if len(open) > 0 {
						return fmt.Errorf("message %d: call %q (%s) of message %d: %w", i, open[0].ToolCallID, open[0].ToolName, openAt, ErrUnansweredToolCall)
					}
					answering = false
					continue
				}
				k := slices.IndexFunc(open, func(c ToolCall) bool { return c.ToolCallID == id })
				if !answering || k < 0 {
					return fmt.Errorf("message %d part %d: return for call %q: %w", i, j, id, ErrOrphanToolReturn)
				}
				open = slices.Delete(open, k, k+1)
			}
		default:
			return fmt.Errorf("message %d: unknown kind %v: %w", i, m.Kind, ErrMalformed)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("message %d: call %q (%s): %w", openAt, open[0].ToolCallID, open[0].ToolName, ErrUnansweredToolCall)
	}
	if history[len(history)-1].Kind != Request {
		return fmt.Errorf("message %d: %w", len(history)-1, ErrNoFinalRequest)
	}
	return nil
}

func partKind(p Part) string {
	if p == nil {
		return "nil"
	}
	return p.PartKind()
}

// Equal reports whether two messages are identical: same kind, metadata and
// parts, compared field by field (JSON content byte by byte).
func Equal(a, b Message) bool {
	if a.Kind != b.Kind || a.Usage != b.Usage || a.ModelName != b.ModelName ||
		a.FinishReason != b.FinishReason || a.Name != b.Name || a.Refusal != b.Refusal ||
		!a.Time.Equal(b.Time) || len(a.Parts) != len(b.Parts) {
		return false
	}
	for i := range a.Parts {
		if !partEqual(a.Parts[i], b.Parts[i]) {
			return false
		}
	}
	return true
}

func partEqual(a, b Part) bool {
	switch a := a.(type) {
	case UserPrompt:
		b, ok := b.(UserPrompt)
		return ok && a.Content == b.Content && a.Name == b.Name && (a.Contents == nil) == (b.Contents == nil) &&
			slices.EqualFunc(a.Contents, b.Contents, func(x, y UserContent) bool {
				return x.Type == y.Type && x.Text == y.Text && bytes.Equal(x.Data, y.Data)
			})
	case ToolReturn:
		b, ok := b.(ToolReturn)
		return ok && a.ToolName == b.ToolName && a.ToolCallID == b.ToolCallID &&
			a.Content == b.Content && bytes.Equal(a.JSON, b.JSON) && (a.JSON == nil) == (b.JSON == nil) &&
			slices.Equal(a.Contents, b.Contents) && (a.Contents == nil) == (b.Contents == nil)
	case SystemPrompt, RetryPrompt, Text, ToolCall, Thinking:
		return a == b
	}
	return a == nil && b == nil
}
