package processor

import (
	"bytes"
	"fmt"
	"slices"
)

// Validate checks that history is one a provider accepts:
//   - it is non-empty and ends with a request;
//   - every message is a request holding only request parts or a response
//     holding only response parts ([Opaque] parts stand in either, and
//     neither answer a call nor end the answers), and every tool call, tool return and
//     call-answering retry prompt has a call ID;
//   - the tool calls of a response are all answered, each exactly once, by
//     tool returns (or retry prompts with the call's ID) in the requests
//     right after it, before any other request content;
//   - no tool return appears anywhere else.
//
// The error wraps one of the sentinel errors ([ErrEmptyHistory],
// [ErrNoFinalRequest], [ErrOrphanToolReturn], [ErrUnansweredToolCall],
// [ErrMalformed]); but for ErrEmptyHistory it is a [*HistoryError] naming
// the offending message (for an unanswered call, the message holding the
// call).
func Validate(history []Message) error {
	if len(history) == 0 {
		return ErrEmptyHistory
	}
	// open holds the call IDs of the latest response still waiting for an
	// answer; answering is allowed only while no other request content has
	// been seen since that response. Most responses make a few calls, so
	// the IDs live on the stack.
	var buf [8]string
	open := buf[:0]
	openAt := 0
	answering := false
	for i := range history {
		m := &history[i]
		switch m.Kind {
		case Response:
			if len(open) > 0 {
				return unanswered(history, openAt, open[0])
			}
			answering = false
			for j, p := range m.Parts {
				switch p := p.(type) {
				case ToolCall:
					if p.ToolCallID == "" {
						return at(i, j, fmt.Errorf("tool call %q without an ID: %w", p.ToolName, ErrMalformed))
					}
					for _, id := range open {
						if id == p.ToolCallID {
							return at(i, j, fmt.Errorf("duplicate tool call ID %q: %w", p.ToolCallID, ErrMalformed))
						}
					}
					open = append(open, p.ToolCallID)
					answering = true
					openAt = i
				case Text, Thinking, Opaque:
				default:
					return at(i, j, fmt.Errorf("%s part in a response: %w", partKind(p), ErrMalformed))
				}
			}
		case Request:
			if len(m.Parts) == 0 {
				return at(i, -1, fmt.Errorf("request without parts: %w", ErrMalformed))
			}
			for j, p := range m.Parts {
				var id string
				switch p := p.(type) {
				case ToolReturn:
					if p.ToolCallID == "" {
						return at(i, j, fmt.Errorf("tool return (%s) without a call ID: %w", p.ToolName, ErrMalformed))
					}
					id = p.ToolCallID
				case RetryPrompt:
					id = p.ToolCallID
				case SystemPrompt, UserPrompt:
				case Opaque:
					// An item abridge does not model (a tool output of
					// a kind it does not know among them) neither answers
					// a call nor ends the answers.
					continue
				default:
					return at(i, j, fmt.Errorf("%s part in a request: %w", partKind(p), ErrMalformed))
				}
				if id == "" {
					if len(open) > 0 {
						return unanswered(history, openAt, open[0])
					}
					answering = false
					continue
				}
				k := -1
				if answering {
					for n, o := range open {
						if o == id {
							k = n
							break
						}
					}
				}
				if k < 0 {
					return at(i, j, fmt.Errorf("return for call %q: %w", id, ErrOrphanToolReturn))
				}
				open = append(open[:k], open[k+1:]...)
			}
		default:
			return at(i, -1, fmt.Errorf("unknown kind %v: %w", m.Kind, ErrMalformed))
		}
	}
	if len(open) > 0 {
		return unanswered(history, openAt, open[0])
	}
	if history[len(history)-1].Kind != Request {
		return at(len(history)-1, -1, ErrNoFinalRequest)
	}
	return nil
}

// A HistoryError is an error about one message of a history, as
// [Validate] returns it: the message's index, the index of the part at
// fault (-1 when it is the message as a whole) and what is wrong. A host
// that read the history from a request names the position as the request
// has it.
type HistoryError struct {
	Index, Part int
	Err         error
}

// Error returns "message I: …", or "message I part P: …".
func (e *HistoryError) Error() string {
	if e.Part < 0 {
		return fmt.Sprintf("message %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("message %d part %d: %v", e.Index, e.Part, e.Err)
}

// Unwrap returns what is wrong.
func (e *HistoryError) Unwrap() error { return e.Err }

// at returns err about part j (-1: none) of message i.
func at(i, j int, err error) error { return &HistoryError{Index: i, Part: j, Err: err} }

// unanswered reports call id of message i as unanswered by the requests
// right after it.
func unanswered(history []Message, i int, id string) error {
	for j, p := range history[i].Parts {
		if c, ok := p.(ToolCall); ok && c.ToolCallID == id {
			return at(i, j, fmt.Errorf("call %q (%s) not answered by the requests right after it: %w", id, c.ToolName, ErrUnansweredToolCall))
		}
	}
	return at(i, -1, fmt.Errorf("call %q not answered by the requests right after it: %w", id, ErrUnansweredToolCall))
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
	if a.Kind != b.Kind || len(a.Parts) != len(b.Parts) || !metaEqual(a.Meta, b.Meta) {
		return false
	}
	for i := range a.Parts {
		if !partEqual(a.Parts[i], b.Parts[i]) {
			return false
		}
	}
	return true
}

// metaEqual reports whether two messages' metadata are the same: both nil,
// the same Meta, or equal field by field (times by [time.Time.Equal]). A
// nil Meta equals a zero one.
func metaEqual(a, b *Meta) bool {
	if a == b {
		return true
	}
	var zero Meta
	if a == nil {
		a = &zero
	}
	if b == nil {
		b = &zero
	}
	return a.Usage == b.Usage && a.ModelName == b.ModelName && a.FinishReason == b.FinishReason &&
		a.Name == b.Name && a.Refusal == b.Refusal && a.Time.Equal(b.Time)
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
	case SystemPrompt, RetryPrompt, Text, ToolCall, Thinking, Opaque:
		return a == b
	}
	return a == nil && b == nil
}
