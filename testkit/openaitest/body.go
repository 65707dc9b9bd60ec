package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The APIs Bodies writes for.
const (
	APIChat      = "chat"      // POST /v1/chat/completions
	APIResponses = "responses" // POST /v1/responses
	APIMessages  = "messages"  // POST /v1/messages (Anthropic)
)

// APIPath is the path under /v1 of api's requests.
func APIPath(api string) string {
	if api == APIChat {
		return "/chat/completions"
	}
	return "/" + api
}

// ChatMessage is a Chat Completions message as a fake server reads it.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text is the message's text: its string content, or its text parts
// joined.
func (m ChatMessage) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Bodies writes the request bodies of one conversation in one API, each
// holding the conversation's first messages, with the fields an agent
// sends: a shell tool, and "stream" when asked. For the Responses API each
// message becomes its input items (function_call and function_call_output
// for tool calls and results); for Messages the system messages become
// "system", each tool call a tool_use block and each tool result a
// tool_result block in a user message, and consecutive messages of one
// role are merged into one, as that API wants. The messages are converted
// once, when the Bodies is made, so that a load's client spends little on
// each body.
type Bodies struct {
	api string
	// items holds each message's items (Chat: the message itself;
	// Responses: its input items; Messages: its content blocks).
	items [][]json.RawMessage
	// roles holds each message's role in Messages ("" for a system
	// message), and systems its system text.
	roles, systems []string
}

// NewBodies converts msgs, Chat Completions messages, for api.
func NewBodies(api string, msgs []json.RawMessage) (*Bodies, error) {
	b := &Bodies{api: api, items: make([][]json.RawMessage, len(msgs)), roles: make([]string, len(msgs)), systems: make([]string, len(msgs))}
	if api != APIChat && api != APIResponses && api != APIMessages {
		return nil, fmt.Errorf("unknown API %q (want %s, %s or %s)", api, APIChat, APIResponses, APIMessages)
	}
	for i, raw := range msgs {
		if api == APIChat {
			b.items[i] = []json.RawMessage{raw}
			continue
		}
		var m ChatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if api == APIResponses {
			b.items[i] = responsesItems(m)
		} else {
			b.roles[i], b.systems[i], b.items[i] = anthropicBlocks(m)
		}
	}
	return b, nil
}

// Body returns the body of a request holding the first n messages,
// streamed when stream is set.
func (b *Bodies) Body(n int, stream bool) []byte {
	var buf bytes.Buffer
	switch b.api {
	case APIChat:
		buf.WriteString(`{"model":"gpt-test","messages":`)
		b.writeItems(&buf, n)
		buf.WriteString(`,"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],"tool_choice":"auto","temperature":0`)
		if stream {
			buf.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
		}
	case APIResponses:
		buf.WriteString(`{"model":"gpt-test","input":`)
		b.writeItems(&buf, n)
		buf.WriteString(`,"tools":[{"type":"function","name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}],"tool_choice":"auto","temperature":0,"store":false`)
		if stream {
			buf.WriteString(`,"stream":true`)
		}
	case APIMessages:
		buf.WriteString(`{"model":"claude-test","max_tokens":4096`)
		var systems []string
		for _, s := range b.systems[:n] {
			if s != "" {
				systems = append(systems, s)
			}
		}
		if len(systems) > 0 {
			buf.WriteString(`,"system":` + quote(strings.Join(systems, "\n\n")))
		}
		buf.WriteString(`,"messages":`)
		b.writeTurns(&buf, n)
		buf.WriteString(`,"tools":[{"name":"bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`)
		if stream {
			buf.WriteString(`,"stream":true`)
		}
	}
	buf.WriteString("}")
	return buf.Bytes()
}

// writeItems writes the items of the first n messages as one JSON list.
func (b *Bodies) writeItems(buf *bytes.Buffer, n int) {
	buf.WriteByte('[')
	first := true
	for _, items := range b.items[:n] {
		for _, it := range items {
			if !first {
				buf.WriteByte(',')
			}
			first = false
			buf.Write(it)
		}
	}
	buf.WriteByte(']')
}

// writeTurns writes the first n messages as Anthropic messages: the
// blocks of consecutive messages of one role in one message, and a user
// message first when the conversation starts with the assistant.
func (b *Bodies) writeTurns(buf *bytes.Buffer, n int) {
	buf.WriteByte('[')
	role := ""
	for i, items := range b.items[:n] {
		r := b.roles[i]
		if r == "" {
			continue
		}
		if r != role {
			// The role first, as the SDKs and Claude Code write it.
			if role != "" {
				buf.WriteString(`]},`)
			} else if r == "assistant" {
				buf.WriteString(`{"role":"user","content":[{"text":"Go on.","type":"text"}]},`)
			}
			buf.WriteString(`{"role":` + quote(r) + `,"content":[`)
		} else {
			buf.WriteByte(',')
		}
		role = r
		for k, it := range items {
			if k > 0 {
				buf.WriteByte(',')
			}
			buf.Write(it)
		}
	}
	if role != "" {
		buf.WriteString(`]}`)
	}
	buf.WriteByte(']')
}

func marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// responsesItems converts a Chat message to Responses input items.
func responsesItems(m ChatMessage) []json.RawMessage {
	if m.Role == "tool" {
		return []json.RawMessage{marshal(map[string]any{"type": "function_call_output", "call_id": m.ToolCallID, "output": m.Text()})}
	}
	var out []json.RawMessage
	if t := m.Text(); t != "" || len(m.ToolCalls) == 0 {
		out = append(out, marshal(map[string]any{"role": m.Role, "content": t}))
	}
	for _, c := range m.ToolCalls {
		out = append(out, marshal(map[string]any{"type": "function_call", "call_id": c.ID,
			"name": c.Function.Name, "arguments": c.Function.Arguments}))
	}
	return out
}

// anthropicBlocks converts a Chat message to its role in Anthropic
// Messages ("" for a system message), its system text, and its content
// blocks.
func anthropicBlocks(m ChatMessage) (role, system string, blocks []json.RawMessage) {
	switch m.Role {
	case "system", "developer":
		return "", m.Text(), nil
	case "tool":
		return "user", "", []json.RawMessage{marshal(map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Text()})}
	case "assistant":
		if t := m.Text(); t != "" {
			blocks = append(blocks, marshal(map[string]any{"type": "text", "text": t}))
		}
		for _, c := range m.ToolCalls {
			input := json.RawMessage(c.Function.Arguments)
			if !json.Valid(input) || !bytes.HasPrefix(bytes.TrimSpace(input), []byte("{")) {
				input = json.RawMessage(`{}`)
			}
			blocks = append(blocks, marshal(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": input}))
		}
		if len(blocks) == 0 {
			blocks = append(blocks, marshal(map[string]any{"type": "text", "text": "…"}))
		}
		return "assistant", "", blocks
	}
	return "user", "", []json.RawMessage{marshal(map[string]any{"type": "text", "text": m.Text()})}
}
