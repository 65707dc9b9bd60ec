package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	chat, err := Chat(history)
	if err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	out := struct {
		Messages []savedMessage `json:"messages"`
	}{Messages: make([]savedMessage, len(chat))}
	for i, c := range chat {
		out.Messages[i] = saved(c)
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

// saved is c as the saved JSON message.
func saved(c ChatMessage) savedMessage {
	s := savedMessage{
		Role:             c.Role,
		ReasoningContent: c.Reasoning,
		Name:             c.Name,
		Refusal:          c.Refusal,
		ToolCallID:       c.ToolCallID,
	}
	switch {
	case c.NoContent:
	case c.Parts != nil:
		parts := make([]any, len(c.Parts))
		for k, p := range c.Parts {
			if p.Type == "text" {
				parts[k] = textPart{Text: p.Text, Type: "text"}
			} else {
				parts[k] = p.Value
			}
		}
		s.Content = parts
	default:
		s.Content = c.Content
	}
	if c.ToolCalls != nil {
		s.ToolCalls = make([]savedToolCall, len(c.ToolCalls))
	}
	for k, tc := range c.ToolCalls {
		s.ToolCalls[k] = savedToolCall{ID: tc.ToolCallID, Type: "function"}
		s.ToolCalls[k].Function.Name, s.ToolCalls[k].Function.Arguments = tc.ToolName, tc.Args
	}
	return s
}
