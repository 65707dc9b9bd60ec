package wire

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// fastSplit is split for bodies the scanner reads: it finds the messages,
// the model and stream, and reports false, having set nothing, when the
// body is not one it reads (then split, on encoding/json, reads it or says
// what is wrong). It decodes the messages as it goes, and sets Messages
// when the fast decoder took them all.
func (b *Body) fastSplit() bool {
	s := scanner{data: b.data}
	if !s.eat('{') || s.eat('}') {
		return false
	}
	var (
		raws                       []json.RawMessage
		msgs                       []processor.Message
		slow                       bool
		start, end                 int
		model                      string
		stream                     bool
		seenMsgs, seenModel, seenS bool
	)
	for {
		raw, esc, ok := s.str()
		if !ok || !s.eat(':') {
			return false
		}
		key := unquote(raw, esc)
		switch key {
		case "messages":
			if seenMsgs {
				return false
			}
			seenMsgs = true
			s.ws()
			start = s.pos
			if !s.eat('[') || s.eat(']') {
				return false
			}
			// Each message is decoded as it is read; one the fast decoder
			// does not take is skipped, and all are decoded by package
			// model instead (see Parse).
			var nm namer
			for {
				s.ws()
				m := s.pos
				if s.peek() != '{' {
					return false
				}
				if slow {
					if !s.skip(1) {
						return false
					}
				} else if msg, ok := fastMessage(&s, &nm, msgs); ok {
					msgs = append(msgs, msg)
				} else {
					slow = true
					if s.pos = m; !s.skip(1) {
						return false
					}
				}
				raws = append(raws, b.data[m:s.pos])
				if s.eat(',') {
					continue
				}
				if !s.eat(']') {
					return false
				}
				break
			}
			end = s.pos
		case "model":
			if seenModel {
				return false
			}
			seenModel = true
			if s.peek() == '"' {
				if model, ok = s.text(); !ok {
					return false
				}
			} else if !s.skip(1) {
				return false
			}
		case "stream":
			if seenS {
				return false
			}
			seenS = true
			if s.peek() == 't' && s.literal("true") {
				stream = true
			} else if !s.skip(1) {
				return false
			}
		default:
			if !s.skip(1) {
				return false
			}
		}
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return false
		}
		break
	}
	if s.ws(); s.pos != len(b.data) || !seenMsgs {
		return false
	}
	b.raws, b.start, b.end, b.Model, b.Stream = raws, start, end, model, stream
	if !slow {
		b.Messages = msgs
	}
	return true
}

// fields are the keys of a message the fast decoder reads.
type fields struct {
	role, content, name, toolCallID, refusal string
	hasContent, hasName, hasRefusal          bool
	calls                                    []processor.ToolCall
	seen                                     uint8
}

const (
	seenRole = 1 << iota
	seenContent
	seenName
	seenToolCallID
	seenToolCalls
	seenRefusal
)

// fastMessage reads the message object at s's position, decoding it as
// package model's FromRawMessages does when it has one of the common
// shapes (every key known, content a string or null, tool calls of
// functions); it reports false for another shape or a broken rule.
func fastMessage(s *scanner, nm *namer, msgs []processor.Message) (processor.Message, bool) {
	var f fields
	if !s.eat('{') || s.eat('}') {
		return processor.Message{}, false
	}
	for {
		kr, esc, ok := s.str()
		if !ok || !s.eat(':') {
			return processor.Message{}, false
		}
		key := unquote(kr, esc)
		var bit uint8
		switch key {
		case "role":
			bit = seenRole
			f.role, ok = s.text()
		case "content":
			bit = seenContent
			switch s.peek() {
			case '"':
				f.content, ok = s.text()
				f.hasContent = ok
			case 'n':
				ok = s.literal("null")
			default:
				ok = false
			}
		case "name":
			bit = seenName
			f.name, ok = s.text()
			f.hasName = ok
		case "tool_call_id":
			bit = seenToolCallID
			f.toolCallID, ok = s.text()
		case "refusal":
			bit = seenRefusal
			switch s.peek() {
			case '"':
				f.refusal, ok = s.text()
				f.hasRefusal = ok
			case 'n':
				ok = s.literal("null")
			default:
				ok = false
			}
		case "tool_calls":
			bit = seenToolCalls
			if s.peek() == 'n' {
				ok = s.literal("null")
			} else {
				f.calls, ok = toolCalls(s)
			}
		default:
			ok = false
		}
		if !ok || f.seen&bit != 0 {
			return processor.Message{}, false
		}
		f.seen |= bit
		if s.eat(',') {
			continue
		}
		if !s.eat('}') {
			return processor.Message{}, false
		}
		break
	}
	return f.message(nm, msgs)
}

// message builds the message the fields describe, as FromRawMessages
// would, or reports false for what it would refuse or read otherwise.
func (f *fields) message(nm *namer, msgs []processor.Message) (processor.Message, bool) {
	if f.seen&seenToolCalls != 0 && f.role != "assistant" {
		return processor.Message{}, false // left to model, whatever it makes of it
	}
	switch f.role {
	case "system", "developer":
		if !f.hasContent || f.seen&(seenToolCallID|seenRefusal) != 0 {
			return processor.Message{}, false
		}
		return processor.NewRequest(processor.SystemPrompt{Content: f.content, Developer: f.role == "developer", Name: f.name}), true
	case "user":
		if !f.hasContent || f.seen&(seenToolCallID|seenRefusal) != 0 {
			return processor.Message{}, false
		}
		return processor.NewRequest(processor.UserPrompt{Content: f.content, Name: f.name}), true
	case "tool":
		if !f.hasContent || f.toolCallID == "" || f.seen&(seenName|seenRefusal) != 0 {
			return processor.Message{}, false
		}
		return processor.NewRequest(processor.ToolReturn{ToolCallID: f.toolCallID, ToolName: nm.name(msgs, f.toolCallID), Content: f.content}), true
	case "assistant":
		if f.seen&seenToolCallID != 0 {
			return processor.Message{}, false
		}
		m := processor.Message{Kind: processor.Response}
		if f.hasContent {
			m.Parts = append(m.Parts, processor.Text{Content: f.content})
		}
		for _, c := range f.calls {
			m.Parts = append(m.Parts, c)
		}
		return m.WithMeta(processor.Meta{Name: f.name, Refusal: f.refusal}), true
	}
	return processor.Message{}, false
}

// toolCalls reads an array of function tool calls.
func toolCalls(s *scanner) ([]processor.ToolCall, bool) {
	if !s.eat('[') {
		return nil, false
	}
	var calls []processor.ToolCall
	if s.eat(']') {
		return calls, true
	}
	for {
		c, ok := toolCall(s)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		if s.eat(',') {
			continue
		}
		return calls, s.eat(']')
	}
}

// toolCall reads one function tool call: {"id", "type": "function",
// "function": {"name", "arguments"}}, every key once at most, id and
// function name not empty.
func toolCall(s *scanner) (processor.ToolCall, bool) {
	var c processor.ToolCall
	var seen uint8
	if !s.eat('{') {
		return c, false
	}
	for !s.eat('}') {
		if seen != 0 && !s.eat(',') {
			return c, false
		}
		kr, esc, ok := s.str()
		if !ok || !s.eat(':') {
			return c, false
		}
		var bit uint8
		switch unquote(kr, esc) {
		case "id":
			bit = 1
			c.ToolCallID, ok = s.text()
		case "type":
			bit = 2
			var t string
			t, ok = s.text()
			ok = ok && t == "function"
		case "function":
			bit = 4
			ok = function(s, &c)
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return c, false
		}
		seen |= bit
	}
	return c, seen&4 != 0 && c.ToolCallID != "" && c.ToolName != ""
}

// function reads {"name", "arguments"} into c.
func function(s *scanner, c *processor.ToolCall) bool {
	var seen uint8
	if !s.eat('{') {
		return false
	}
	for !s.eat('}') {
		if seen != 0 && !s.eat(',') {
			return false
		}
		kr, esc, ok := s.str()
		if !ok || !s.eat(':') {
			return false
		}
		var bit uint8
		switch unquote(kr, esc) {
		case "name":
			bit = 1
			c.ToolName, ok = s.text()
		case "arguments":
			bit = 2
			c.Args, ok = s.text()
		default:
			ok = false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return true
}

// appendMessage appends the JSON of m when it is one of the shapes the
// processors make (a plain user prompt, a tool return of text), and
// reports false for others.
func appendMessage(b []byte, m processor.Message) ([]byte, bool) {
	if m.Kind != processor.Request || len(m.Parts) != 1 || m.Meta != nil {
		return b, false
	}
	switch p := m.Parts[0].(type) {
	case processor.UserPrompt:
		if p.Contents != nil || p.Name != "" {
			return b, false
		}
		b = append(b, `{"role":"user","content":`...)
		b = appendString(b, p.Content)
		return append(b, '}'), true
	case processor.ToolReturn:
		if p.JSON != nil || p.Contents != nil {
			return b, false
		}
		b = append(b, `{"role":"tool","tool_call_id":`...)
		b = appendString(b, p.ToolCallID)
		b = append(b, `,"content":`...)
		b = appendString(b, p.Content)
		return append(b, '}'), true
	}
	return b, false
}

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json
// does).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
