package window

import (
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// cut is where a history splits: the head h[:head], the middle
// h[head:start] that a compaction replaces, the tail h[start:].
type cut struct {
	head, start int
}

// middle returns the number of messages in the middle.
func (c cut) middle() int { return c.start - c.head }

// split returns where h splits: the one place the head and tail rules
// live. With force (an explicit compaction) a tail that would leave fewer
// than 2 messages to compact shrinks to the last request and the call it
// answers.
func (w *Window) split(h []processor.Message, force bool) cut {
	head := w.headEnd(h)
	return cut{head: head, start: w.tailStart(h, head, force)}
}

// headEnd returns the end of the head: through the first response with
// text and no tool call when it comes within the first headLimit
// messages, else the requests before the first response; never past a
// marker.
func (w *Window) headEnd(h []processor.Message) int {
	lead := -1 // the first response
	for i, m := range h {
		marker := summary.IsMarker(m)
		switch {
		case marker && lead < 0:
			return i
		case marker || (lead >= 0 && i >= w.headLimit):
			return lead
		case textOnly(m) && i < w.headLimit:
			return i + 1
		case m.Kind == processor.Response && lead < 0:
			lead = i
		}
	}
	if lead < 0 {
		return len(h)
	}
	return lead
}

// textOnly reports whether m is a response with text and no tool call.
func textOnly(m processor.Message) bool {
	return m.Kind == processor.Response && !m.HasToolCalls() && strings.TrimSpace(m.Text()) != ""
}

// answers reports whether m is a request answering a call (a tool return
// or a retry prompt): a tail cannot start with it.
func answers(m processor.Message) bool {
	return m.Kind == processor.Request && slices.ContainsFunc(m.Parts, func(p processor.Part) bool {
		switch p := p.(type) {
		case processor.ToolReturn:
			return true
		case processor.RetryPrompt:
			return p.ToolCallID != ""
		}
		return false
	})
}

// backToPair moves a tail start back, not below floor, until it does not
// begin with an answer to a call.
func backToPair(h []processor.Message, start, floor int) int {
	for start > floor && start < len(h) && answers(h[start]) {
		start--
	}
	return start
}

// userTurnStart returns the index of the k-th last request after head
// holding a user prompt, markers left out; -1 when there are fewer.
func (w *Window) userTurnStart(h []processor.Message, head, k int) int {
	n := 0
	for i := len(h) - 1; i >= head; i-- {
		m := h[i]
		if m.Kind != processor.Request || summary.IsMarker(m) {
			continue
		}
		for _, p := range m.Parts {
			if _, ok := p.(processor.UserPrompt); ok {
				n++
				break
			}
		}
		if n == k {
			return i
		}
	}
	return -1
}

// tailStart returns where the tail of h begins: its last KeepMessages (or
// KeepUserTurns user turns), moved back so no call is separated from its
// returns, and shortened to fit in half a token trigger.
func (w *Window) tailStart(h []processor.Message, head int, force bool) int {
	start, byTurns := len(h)-w.keep, false
	if w.opts.KeepUserTurns > 0 {
		// The last user turns, unless there are too few or they leave
		// nothing to compact.
		if s := w.userTurnStart(h, head, w.opts.KeepUserTurns); s >= 0 && backToPair(h, s, head)-head >= 2 {
			start, byTurns = s, true
		}
	}
	start = backToPair(h, max(start, head), head)
	if w.tokenTrigger > 0 && !byTurns {
		// Down to 4 messages; then, while still over the trigger, to the
		// last request and the call it answers.
		start = w.shrink(h, start, len(h)-4, w.tokenTrigger/2)
		start = w.shrink(h, start, backToPair(h, len(h)-1, head), w.tokenTrigger)
	}
	if force && start-head < 2 {
		start = backToPair(h, len(h)-1, head)
	}
	return start
}

// shrink moves a tail start forward, from one answer-free start to the
// next and not past limit, while the tail's tokens exceed target.
func (w *Window) shrink(h []processor.Message, start, limit, target int) int {
	for start < limit && processor.ContentTokens(h[start:]) > target {
		next := start + 1
		for next < limit && answers(h[next]) {
			next++
		}
		if next > limit || answers(h[next]) {
			break
		}
		start = next
	}
	return start
}
