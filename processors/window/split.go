package window

import (
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// headEnd returns the end (exclusive) of the head: the messages from the
// start through the first response with text and no tool call, when that
// response lies within the first limit messages. Otherwise the head is
// bounded to the leading requests (system prompts and the first user
// prompt, everything before the first response). The head never reaches a
// summary marker: it stops before the first one.
func headEnd(h []processor.Message, limit int) int {
	lead := -1 // index of the first response
	for i, m := range h {
		if i >= limit && lead >= 0 {
			return lead
		}
		if isMarker(m) {
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

// textOnly reports whether m is a response with text and no tool call:
// some text of m.Text() is not all white space (told without joining the
// texts, which the newlines joining them would not change).
func textOnly(m processor.Message) bool {
	if m.Kind != processor.Response || m.HasToolCalls() {
		return false
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			if strings.TrimSpace(p.Content) != "" {
				return true
			}
		case processor.UserPrompt:
			if p.Contents == nil {
				if strings.TrimSpace(p.Content) != "" {
					return true
				}
				continue
			}
			for _, c := range p.Contents {
				if c.Type == "text" && strings.TrimSpace(c.Text) != "" {
					return true
				}
			}
		}
	}
	return false
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
func userTurnStart(h []processor.Message, head, k int) int {
	n := 0
	for i := len(h) - 1; i >= head; i-- {
		m := h[i]
		if m.Kind != processor.Request || isMarker(m) {
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

// tokens returns the estimated tokens of messages, without any anchor.
func tokens(ms []processor.Message) int {
	n := 0
	for _, m := range ms {
		n += processor.MessageTokens(m)
	}
	return n
}
