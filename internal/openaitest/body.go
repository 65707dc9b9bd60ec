package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The APIs RequestBody writes for.
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

// RequestBody is the body of a request in api (APIChat, APIResponses or
// APIMessages) holding msgs, Chat Completions messages, with the fields an
// agent sends: a shell tool, and "stream" when stream is set. For the
// Responses API each message becomes its input items (function_call and
// function_call_output for tool calls and results); for Messages the
// system messages become "system", each tool call a tool_use block and
// each tool result a tool_result block in a user message, and consecutive
// messages of one role are merged into one, as that API wants.
func RequestBody(api string, msgs []json.RawMessage, stream bool) ([]byte, error) {
	var b bytes.Buffer
	switch api {
	case APIChat:
		b.WriteString(`{"model":"gpt-test","messages":`)
		writeList(&b, msgs)
		b.WriteString(`,"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],"tool_choice":"auto","temperature":0`)
		if stream {
			b.WriteString(`,"stream":true,"stream_options":{"include_usage":true}`)
		}
	case APIResponses:
		items, err := responsesInput(msgs)
		if err != nil {
			return nil, err
		}
		b.WriteString(`{"model":"gpt-test","input":`)
		writeList(&b, items)
		b.WriteString(`,"tools":[{"type":"function","name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}],"tool_choice":"auto","temperature":0,"store":false`)
		if stream {
			b.WriteString(`,"stream":true`)
		}
	case APIMessages:
		system, out, err := anthropicMessages(msgs)
		if err != nil {
			return nil, err
		}
		b.WriteString(`{"model":"claude-test","max_tokens":4096`)
		if system != "" {
			b.WriteString(`,"system":` + quote(system))
		}
		b.WriteString(`,"messages":`)
		writeList(&b, out)
		b.WriteString(`,"tools":[{"name":"bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`)
		if stream {
			b.WriteString(`,"stream":true`)
		}
	default:
		return nil, fmt.Errorf("unknown API %q (want %s, %s or %s)", api, APIChat, APIResponses, APIMessages)
	}
	b.WriteString("}")
	return b.Bytes(), nil
}

func writeList(b *bytes.Buffer, items []json.RawMessage) {
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
}

func marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// responsesInput converts Chat messages to Responses input items.
func responsesInput(msgs []json.RawMessage) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, raw := range msgs {
		var m ChatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		switch m.Role {
		case "tool":
			out = append(out, marshal(map[string]any{"type": "function_call_output", "call_id": m.ToolCallID, "output": m.Text()}))
		default:
			if t := m.Text(); t != "" || len(m.ToolCalls) == 0 {
				out = append(out, marshal(map[string]any{"role": m.Role, "content": t}))
			}
			for _, c := range m.ToolCalls {
				out = append(out, marshal(map[string]any{"type": "function_call", "call_id": c.ID,
					"name": c.Function.Name, "arguments": c.Function.Arguments}))
			}
		}
	}
	return out, nil
}

// anthropicMessages converts Chat messages to Anthropic's system text and
// messages.
func anthropicMessages(msgs []json.RawMessage) (system string, out []json.RawMessage, err error) {
	type turn struct {
		role   string
		blocks []any
	}
	var turns []turn
	add := func(role string, blocks ...any) {
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{role, blocks})
	}
	var systems []string
	for i, raw := range msgs {
		var m ChatMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", nil, fmt.Errorf("message %d: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			systems = append(systems, m.Text())
		case "tool":
			add("user", map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Text()})
		case "assistant":
			if len(turns) == 0 {
				add("user", map[string]any{"type": "text", "text": "Go on."})
			}
			var blocks []any
			if t := m.Text(); t != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": t})
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(c.Function.Arguments)
				if !json.Valid(input) || !bytes.HasPrefix(bytes.TrimSpace(input), []byte("{")) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": input})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, map[string]any{"type": "text", "text": "…"})
			}
			add("assistant", blocks...)
		default:
			add("user", map[string]any{"type": "text", "text": m.Text()})
		}
	}
	for _, t := range turns {
		out = append(out, marshal(map[string]any{"role": t.role, "content": t.blocks}))
	}
	return strings.Join(systems, "\n\n"), out, nil
}
