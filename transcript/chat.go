package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// ChatMessage is one message of a history in the OpenAI Chat Completions
// format, before it is written out: [Save] writes it as JSON, and package
// model builds its openai-go params from it. [Chat] makes them.
type ChatMessage struct {
	// Role is "system", "developer", "user", "tool" or "assistant".
	Role string
	// Name is the name of a system, developer, user or assistant message;
	// empty for none.
	Name string
	// Content is the content as a string, when Parts is nil and NoContent
	// is false.
	Content string
	// Parts is the content as an array of parts; nil when the content is a
	// string or there is none.
	Parts []ChatPart
	// NoContent is true for an assistant message without text: it has no
	// content.
	NoContent bool
	// Reasoning is the content of an assistant message's Thinking parts,
	// joined by newlines; empty for none.
	Reasoning string
	// Refusal is an assistant message's refusal; empty for none.
	Refusal string
	// ToolCalls are an assistant message's tool calls, each with an ID.
	ToolCalls []processor.ToolCall
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string
}

// ChatPart is one part of a [ChatMessage]'s array content.
type ChatPart struct {
	// Type is "text", or the type of a user content part kept as its JSON.
	Type string
	// Text is a text part's text.
	Text string
	// Data is the JSON object of a part other than text, as the
	// [processor.UserContent] holds it.
	Data json.RawMessage
	// Value is Data decoded, numbers as [json.Number].
	Value map[string]any
}

// Chat returns history as Chat Completions messages, in order, as [Save]
// describes: one message per part of a request, one per response. The
// Thinking parts of a response are its Reasoning; Usage, ModelName,
// FinishReason, Time and the Signature of Thinking parts are left out.
//
// The history is not modified. A message of unknown kind, a part that does
// not belong to its message's kind, a request without parts, a tool call or
// tool return without an ID, and a user content part whose Data is not one
// JSON object are errors of type [*MessageError] naming the message's index.
func Chat(history []processor.Message) ([]ChatMessage, error) {
	out := make([]ChatMessage, 0, len(history))
	for i, m := range history {
		switch m.Kind {
		case processor.Request:
			if len(m.Parts) == 0 {
				return nil, msgErr(i, "request without parts")
			}
			for j, p := range m.Parts {
				c, err := chatRequestPart(i, j, p)
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		case processor.Response:
			c, err := chatResponse(i, m)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		default:
			return nil, msgErr(i, "unknown message kind %v", m.Kind)
		}
	}
	return out, nil
}

// chatTexts returns texts as text parts.
func chatTexts(texts []string) []ChatPart {
	parts := make([]ChatPart, len(texts))
	for k, t := range texts {
		parts[k] = ChatPart{Type: "text", Text: t}
	}
	return parts
}

// chatRequestPart is part j of request i as a Chat message.
func chatRequestPart(i, j int, p processor.Part) (ChatMessage, error) {
	switch p := p.(type) {
	case processor.SystemPrompt:
		role := "system"
		if p.Developer {
			role = "developer"
		}
		return ChatMessage{Role: role, Content: p.Content, Name: p.Name}, nil
	case processor.UserPrompt:
		c := ChatMessage{Role: "user", Content: p.Content, Name: p.Name}
		if p.Contents == nil {
			return c, nil
		}
		c.Content = ""
		c.Parts = make([]ChatPart, len(p.Contents))
		for k, u := range p.Contents {
			if u.Type == "text" {
				c.Parts[k] = ChatPart{Type: "text", Text: u.Text}
				continue
			}
			v, err := partData(u.Data)
			if err != nil {
				return c, &MessageError{Index: i, Reason: fmt.Sprintf("part %d: user content %d (%q)", j, k, u.Type), Err: err}
			}
			c.Parts[k] = ChatPart{Type: u.Type, Data: u.Data, Value: v}
		}
		return c, nil
	case processor.ToolReturn:
		if p.ToolCallID == "" {
			return ChatMessage{}, msgErr(i, "part %d: tool return without tool call id", j)
		}
		c := ChatMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}
		switch {
		case p.JSON != nil:
			c.Content = string(p.JSON)
		case p.Contents != nil:
			c.Content, c.Parts = "", chatTexts(p.Contents)
		}
		return c, nil
	case processor.RetryPrompt:
		if p.ToolCallID != "" {
			return ChatMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}, nil
		}
		return ChatMessage{Role: "user", Content: p.Content}, nil
	case nil:
		return ChatMessage{}, msgErr(i, "part %d is nil", j)
	}
	return ChatMessage{}, msgErr(i, "part %d: %s part in a request", j, p.PartKind())
}

// partData decodes the JSON of a user content part, numbers kept as
// written, and checks that it is one JSON object.
func partData(data json.RawMessage) (map[string]any, error) {
	if len(data) == 0 {
		return nil, errors.New("no data")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("data: more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("data is not a JSON object")
	}
	return obj, nil
}

// chatResponse is response i as a Chat assistant message.
func chatResponse(i int, m processor.Message) (ChatMessage, error) {
	meta := m.Info()
	c := ChatMessage{Role: "assistant", Name: meta.Name, Refusal: meta.Refusal}
	var texts, thoughts []string
	for j, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			texts = append(texts, p.Content)
		case processor.ToolCall:
			if p.ToolCallID == "" {
				return c, msgErr(i, "part %d: tool call %q without id", j, p.ToolName)
			}
			c.ToolCalls = append(c.ToolCalls, p)
		case processor.Thinking:
			if p.Content != "" {
				thoughts = append(thoughts, p.Content)
			}
		case nil:
			return c, msgErr(i, "part %d is nil", j)
		default:
			return c, msgErr(i, "part %d: %s part in a response", j, p.PartKind())
		}
	}
	switch len(texts) {
	case 0:
		c.NoContent = true
	case 1:
		c.Content = texts[0]
	default:
		c.Parts = chatTexts(texts)
	}
	c.Reasoning = strings.Join(thoughts, "\n")
	return c, nil
}
