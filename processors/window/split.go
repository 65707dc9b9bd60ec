package window

import (
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// cut is where a history splits: the head is h[:head], the middle
// h[head:start] (what a compaction replaces with one marker), the tail
// h[start:].
type cut struct {
	head, start int
}

// middle returns the number of messages in the middle.
func (c cut) middle() int { return c.start - c.head }

// split returns where h splits. It is the one place the head and tail
// rules live; the span lookup, the marker placement and the events use
// its result. The head runs through the first response with text and no
// tool call when that comes within the first headLimit messages, and is
// otherwise bounded to the leading requests; it stops before a marker.
// The tail is the last KeepMessages messages (or, with KeepUserTurns, the
// last user turns), moved back so no call is separated from its returns,
// and with a token trigger shortened to fit in half of it. With force
// (an explicit compaction) a tail that would leave fewer than 2 messages
// to compact shrinks to the last request and the call it answers.
func (w *Window) split(h []processor.Message, force bool) cut {
	head := w.headEnd(h)
	return cut{head: head, start: w.tailStart(h, head, force)}
}

// headEnd returns the end (exclusive) of the head: the messages from the
// start through the first response with text and no tool call, when that
// response lies within the first limit messages. Otherwise the head is
// bounded to the leading requests (system prompts and the first user
// prompt, everything before the first response). The head never reaches a
// summary marker: it stops before the first one.
func (w *Window) headEnd(h []processor.Message) int {
	limit := w.headLimit
	lead := -1 // index of the first response
	for i, m := range h {
		if i >= limit && lead >= 0 {
			return lead
		}
		if summary.IsMarker(m) {
			if lead >= 0 {
				return lead
			}
			return i
		}
		if m.Kind != processor.Response {
			continue
		}
		if lead < 0 {
			lead = i
		}
		if textOnly(m) {
			if i < limit {
				return i + 1
			}
			return lead
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

// answers reports whether m is a request holding a tool return or a retry
// prompt answering a call: such a request must stay right after the
// response it answers, so a tail cannot start with it.
func answers(m processor.Message) bool {
	if m.Kind != processor.Request {
		return false
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.ToolReturn:
			return true
		case processor.RetryPrompt:
			if p.ToolCallID != "" {
				return true
			}
		}
	}
	return false
}

// backToPair moves a tail start back until it does not begin with tool
// returns, so no call is separated from its returns. It never goes below
// floor.
func backToPair(h []processor.Message, start, floor int) int {
	for start > floor && start < len(h) && answers(h[start]) {
		start--
	}
	return start
}

// userTurnStart returns the start of the last k user turns after head: the
// index of the k-th last request holding a user prompt that is not a
// marker. It returns -1 when there are fewer than k such turns.
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

// tailStart returns where the tail of h begins, the head ending at head.
func (w *Window) tailStart(h []processor.Message, head int, force bool) int {
	start, byTurns := len(h)-w.keep, false
	if w.keepTurns > 0 {
		// The last user turns, unless there are too few of them after the
		// head or they leave nothing to compact (one long turn, or a turn
		// whose prompt shares its request with the returns of the call
		// before it, so the turn starts at that call): then the count
		// split above.
		if s := w.userTurnStart(h, head, w.keepTurns); s >= 0 && backToPair(h, s, head)-head >= 2 {
			start, byTurns = s, true
		}
	}
	start = backToPair(h, max(start, head), head)
	if w.tokenTrigger > 0 && !byTurns {
		// Shorten the tail until it fits in half the trigger, leaving room
		// to grow before the next compaction, down to 4 messages; then,
		// while it alone is still over the trigger, down to the last
		// request and the call it answers.
		start = w.shrink(h, start, len(h)-4, w.tokenTrigger/2)
		start = w.shrink(h, start, backToPair(h, len(h)-1, head), w.tokenTrigger)
	}
	if force && start-head < 2 {
		// Keep only the last request and the response it answers.
		start = backToPair(h, len(h)-1, head)
	}
	return start
}

// shrink moves a tail start forward, from one valid start (not a tool
// return) to the next, while the tail's estimated tokens exceed target and
// the start stays at or below limit.
func (w *Window) shrink(h []processor.Message, start, limit, target int) int {
	for start < limit && w.countTail(h[start:]) > target {
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
