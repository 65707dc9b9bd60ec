package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Save writes history as an indented JSON object {"messages": [...]} of
// OpenAI Chat Completions messages, which [Load] reads back into the same
// history, less what the format cannot hold (Usage, ModelName,
// FinishReason, Time, the Signature of Thinking parts) and with a
// response's Thinking parts merged into one, its first part.
//
// A request becomes one message per part: a [processor.SystemPrompt] a
// "system" (or "developer") message, a [processor.UserPrompt] a "user"
// message (the JSON of each non-text part as it is in Data), a
// [processor.ToolReturn] a "tool" message, and a [processor.RetryPrompt] a
// "tool" message when it answers a call and a "user" message otherwise. A
// response becomes one "assistant" message: its Thinking parts in
// "reasoning_content" (joined by newlines when there are several), its text
// parts the content (a string for one part, an array of text parts for
// several, no content for none), its tool calls the tool_calls, and the
// refusal and name of its Meta the fields of the same names.
//
// A message of unknown kind, a part that does not belong to its message's
// kind, a request without parts, a tool call or tool return without an ID,
// and a user content part whose Data is not a JSON object are errors of
// type [*MessageError] naming the message's index; nothing is written then.
func Save(w io.Writer, history []processor.Message) error {
	out := struct {
		Messages []savedMessage `json:"messages"`
	}{Messages: make([]savedMessage, 0, len(history))}
	for i, m := range history {
		var err error
		if out.Messages, err = appendSaved(out.Messages, i, m); err != nil {
			return fmt.Errorf("save history: %w", err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

// SaveFile writes history to the file at path, as [Save] does. It writes a
// temporary file beside path and renames it, so a failed save leaves an
// existing file intact. Its errors name the file.
func SaveFile(path string, history []processor.Message) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save history %s: %w", path, err)
	}
	tmp := f.Name()
	err = Save(f, history)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save history %s: %w", path, err)
	}
	return nil
}

// savedMessage is one saved message, its keys in the order a reader
// expects them.
type savedMessage struct {
	Role             string          `json:"role"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Content          any             `json:"content,omitempty"`
	Name             string          `json:"name,omitempty"`
	Refusal          string          `json:"refusal,omitempty"`
	ToolCalls        []savedToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
}

// savedToolCall is one tool call of a saved assistant message.
type savedToolCall struct {
	Function struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	} `json:"function"`
	ID   string `json:"id"`
	Type string `json:"type"`
}

// textPart is a text part of a message's content.
type textPart struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

func savedTexts(texts []string) []textPart {
	parts := make([]textPart, len(texts))
	for k, t := range texts {
		parts[k] = textPart{Text: t, Type: "text"}
	}
	return parts
}

// appendSaved appends the messages m, message i of a history, is saved as.
func appendSaved(out []savedMessage, i int, m processor.Message) ([]savedMessage, error) {
	switch m.Kind {
	case processor.Request:
		if len(m.Parts) == 0 {
			return nil, msgErr(i, "request without parts")
		}
		for j, p := range m.Parts {
			s, err := savedRequestPart(i, j, p)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case processor.Response:
		s, err := savedResponse(i, m)
		if err != nil {
			return nil, err
		}
		return append(out, s), nil
	}
	return nil, msgErr(i, "unknown message kind %v", m.Kind)
}

// savedRequestPart is part j of request i as a saved message.
func savedRequestPart(i, j int, p processor.Part) (savedMessage, error) {
	switch p := p.(type) {
	case processor.SystemPrompt:
		role := "system"
		if p.Developer {
			role = "developer"
		}
		return savedMessage{Role: role, Content: p.Content, Name: p.Name}, nil
	case processor.UserPrompt:
		s := savedMessage{Role: "user", Content: p.Content, Name: p.Name}
		if p.Contents == nil {
			return s, nil
		}
		parts := make([]any, len(p.Contents))
		for k, c := range p.Contents {
			if c.Type == "text" {
				parts[k] = textPart{Text: c.Text, Type: "text"}
				continue
			}
			v, err := partData(c.Data)
			if err != nil {
				return s, &MessageError{Index: i, Reason: fmt.Sprintf("part %d: user content %d (%q)", j, k, c.Type), Err: err}
			}
			parts[k] = v
		}
		s.Content = parts
		return s, nil
	case processor.ToolReturn:
		if p.ToolCallID == "" {
			return savedMessage{}, msgErr(i, "part %d: tool return without tool call id", j)
		}
		s := savedMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}
		switch {
		case p.JSON != nil:
			s.Content = string(p.JSON)
		case p.Contents != nil:
			s.Content = savedTexts(p.Contents)
		}
		return s, nil
	case processor.RetryPrompt:
		if p.ToolCallID != "" {
			return savedMessage{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}, nil
		}
		return savedMessage{Role: "user", Content: p.Content}, nil
	case nil:
		return savedMessage{}, msgErr(i, "part %d is nil", j)
	}
	return savedMessage{}, msgErr(i, "part %d: %s part in a request", j, p.PartKind())
}

// partData decodes the JSON of a user content part, numbers kept as
// written.
func partData(data json.RawMessage) (any, error) {
	if len(data) == 0 {
		return nil, errors.New("no data")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if dec.More() {
		return nil, errors.New("data: more than one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("data is not a JSON object")
	}
	return v, nil
}

// savedResponse is response i as a saved assistant message.
func savedResponse(i int, m processor.Message) (savedMessage, error) {
	meta := m.Info()
	s := savedMessage{Role: "assistant", Name: meta.Name, Refusal: meta.Refusal}
	var texts, thoughts []string
	for j, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			texts = append(texts, p.Content)
		case processor.ToolCall:
			if p.ToolCallID == "" {
				return s, msgErr(i, "part %d: tool call %q without id", j, p.ToolName)
			}
			c := savedToolCall{ID: p.ToolCallID, Type: "function"}
			c.Function.Name, c.Function.Arguments = p.ToolName, p.Args
			s.ToolCalls = append(s.ToolCalls, c)
		case processor.Thinking:
			if p.Content != "" {
				thoughts = append(thoughts, p.Content)
			}
		case nil:
			return s, msgErr(i, "part %d is nil", j)
		default:
			return s, msgErr(i, "part %d: %s part in a response", j, p.PartKind())
		}
	}
	switch len(texts) {
	case 0:
	case 1:
		s.Content = texts[0]
	default:
		s.Content = savedTexts(texts)
	}
	s.ReasoningContent = strings.Join(thoughts, "\n")
	return s, nil
}
