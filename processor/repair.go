package processor

import (
	"context"
	"fmt"
	"slices"
)

// InterruptedContent is the content of the tool return [RepairHistory]
// inserts for a call that was never answered.
const InterruptedContent = "Tool call interrupted: no result was recorded for this call."

// Fix describes one change [RepairHistory] made.
type Fix struct {
	// Index is the position, in the input history, of the message the fix
	// concerns: the request holding a dropped return, or the response whose
	// call was answered.
	Index int
	// ToolCallID is the call concerned.
	ToolCallID string
	// ToolName is the tool concerned, when known.
	ToolName string
	// Action is one of [ActionDroppedOrphan] ("dropped-orphan-return"),
	// [ActionAnsweredCall] ("answered-dangling-call") and
	// [ActionDroppedRequest] ("dropped-empty-request": a request left with
	// no parts, which concerns no call).
	Action string
}

// String describes the fix for a log line, naming the call and the tool
// when the fix has them.
func (f Fix) String() string {
	s := fmt.Sprintf("message %d: %s", f.Index, f.Action)
	if f.ToolCallID != "" {
		s += fmt.Sprintf(" %q", f.ToolCallID)
	}
	if f.ToolName != "" {
		s += " (" + f.ToolName + ")"
	}
	return s
}

// Repair actions reported in [Fix.Action].
const (
	ActionDroppedOrphan  = "dropped-orphan-return"
	ActionAnsweredCall   = "answered-dangling-call"
	ActionDroppedRequest = "dropped-empty-request"
)

// RepairHistory returns a copy of history in which tool returns that answer
// no call of the response right before them are dropped, and calls left
// unanswered are answered by a synthetic [ToolReturn] carrying
// [InterruptedContent], placed right after the response (or after the
// returns it already has). A request left with no parts is dropped. It
// returns the fixes it made, in order; with no fixes the result is history
// itself. Messages it does not change are shared with the input, which is
// never modified.
//
// It does not fix what it cannot know how to fix: an empty history, one that
// does not end with a request, or malformed parts. [Validate] the result
// when that matters.
func RepairHistory(history []Message) ([]Message, []Fix) {
	var fixes []Fix
	out := make([]Message, 0, len(history)+1)
	var open []ToolCall
	var openAt int
	answering := false
	// closeOpen answers the calls still open, at the current end of out.
	closeOpen := func() {
		if len(open) == 0 {
			return
		}
		parts := make([]Part, 0, len(open))
		for _, c := range open {
			parts = append(parts, ToolReturn{ToolName: c.ToolName, ToolCallID: c.ToolCallID, Content: InterruptedContent})
			fixes = append(fixes, Fix{Index: openAt, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Action: ActionAnsweredCall})
		}
		out = append(out, NewRequest(parts...))
		open = open[:0]
	}
	for i, m := range history {
		if m.Kind == Response {
			closeOpen()
			open = append(open[:0], m.ToolCalls()...)
			openAt = i
			answering = len(open) > 0
			out = append(out, m)
			continue
		}
		var kept []Part // nil while every part so far is kept
		for j, p := range m.Parts {
			id, isAnswer := answerID(p)
			keep := true
			_, opaque := p.(Opaque)
			switch {
			case opaque:
				// Neither an answer nor the end of the answers (as
				// Validate reads it).
			case !isAnswer:
				closeOpen()
				answering = false
			default:
				k := slices.IndexFunc(open, func(c ToolCall) bool { return c.ToolCallID == id })
				if !answering || k < 0 {
					keep = false
					fixes = append(fixes, Fix{Index: i, ToolCallID: id, ToolName: answerTool(p), Action: ActionDroppedOrphan})
				} else {
					open = slices.Delete(open, k, k+1)
				}
			}
			if !keep && kept == nil {
				kept = append(make([]Part, 0, len(m.Parts)), m.Parts[:j]...)
			} else if keep && kept != nil {
				kept = append(kept, p)
			}
		}
		switch {
		case kept == nil:
			out = append(out, m)
		case len(kept) == 0:
			fixes = append(fixes, Fix{Index: i, Action: ActionDroppedRequest})
		default:
			c := m
			c.Parts = kept
			out = append(out, c)
		}
	}
	closeOpen()
	if len(fixes) == 0 {
		return history, nil
	}
	return out, fixes
}

func answerID(p Part) (string, bool) {
	switch p := p.(type) {
	case ToolReturn:
		return p.ToolCallID, true
	case RetryPrompt:
		return p.ToolCallID, p.ToolCallID != ""
	}
	return "", false
}

func answerTool(p Part) string {
	switch p := p.(type) {
	case ToolReturn:
		return p.ToolName
	case RetryPrompt:
		return p.ToolName
	}
	return ""
}

// Repair is a processor that applies [RepairHistory] and reports every fix
// it made to OnFix. It is never applied implicitly: put it first in a chain
// for histories that may arrive broken (loaded from disk, written by another
// program, cut off by a crash).
type Repair struct {
	// OnFix, when set, receives the fixes of each call that made any. It
	// must be safe for concurrent use when the processor is shared.
	OnFix func(ctx context.Context, fixes []Fix)
}

var _ Processor = (*Repair)(nil)

// Process repairs the history and reports the fixes. It fails with
// [ErrEmptyHistory] or [ErrNoFinalRequest] when nothing valid is left to
// send (the final request held only orphan tool returns).
func (r *Repair) Process(ctx context.Context, history []Message) ([]Message, error) {
	if len(history) == 0 {
		return nil, ErrEmptyHistory
	}
	out, fixes := RepairHistory(history)
	if len(fixes) > 0 && r.OnFix != nil {
		r.OnFix(ctx, fixes)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("repair dropped every message: %w", ErrEmptyHistory)
	}
	if out[len(out)-1].Kind != Request {
		return nil, fmt.Errorf("repair: message %d: the final request held only orphan tool returns: %w", len(history)-1, ErrNoFinalRequest)
	}
	return out, nil
}
