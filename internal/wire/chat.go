package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Chat is the codec of OpenAI Chat Completions (POST …/chat/completions):
// the history is the body's "messages", one message of the model per
// message of the body, the system prompt among them, read and written as
// package model reads and writes them (a user message's non-text parts
// kept whole in UserContent.Data, a tool message named from its call, an
// assistant message's reasoning_content a [processor.Thinking]).
var Chat Codec = chat{}

type chat struct{}

// API returns "chat".
func (chat) API() string { return "chat" }

// chatMessage is what the codec reads of a message.
type chatMessage struct {
	Role             string         `json:"role"`
	Content          textOrRaw      `json:"content"`
	Name             string         `json:"name"`
	Refusal          string         `json:"refusal"`
	ToolCallID       string         `json:"tool_call_id"`
	ToolCalls        []chatToolCall `json:"tool_calls"`
	ReasoningContent jsontext.Value `json:"reasoning_content"`
}

type chatToolCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Parse reads a Chat Completions request body.
func (chat) Parse(data []byte, reserve func(tokens int) error) (*Body, error) {
	b, f, err := parseTop(data, Chat, chatHistory{}, reserve, "messages")
	if err != nil {
		return nil, err
	}
	items := f.items
	if items == nil {
		return nil, fmt.Errorf(`%w: "messages" is not an array`, ErrNoMessages)
	}
	b.Messages = make([]processor.Message, 0, len(items))
	calls := map[string]string{} // the name of each call, by ID
	for i, it := range items {
		raw := data[it.start:it.end]
		m, err := readChat(raw, calls)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", ErrBadMessage, i, err)
		}
		b.Messages = append(b.Messages, m)
		b.raws = append(b.raws, raw)
	}
	return b, nil
}

// readChat decodes one message; calls holds the names of the calls
// before it, by ID, and takes those of an assistant message.
func readChat(raw []byte, calls map[string]string) (processor.Message, error) {
	var m chatMessage
	if err := decodeObject(raw, &m); err != nil {
		return processor.Message{}, err
	}
	switch m.Role {
	case "system", "developer":
		text, err := chatText(m.Role, m.Content)
		if err != nil {
			return processor.Message{}, err
		}
		return processor.NewRequest(processor.SystemPrompt{Content: strings.Join(text, "\n"), Developer: m.Role == "developer", Name: m.Name}), nil
	case "user":
		p, err := chatUser(m.Content)
		p.Name = m.Name
		return processor.NewRequest(p), err
	case "tool":
		if m.ToolCallID == "" {
			return processor.Message{}, errors.New("tool message without tool_call_id")
		}
		text, err := chatText(m.Role, m.Content)
		if err != nil {
			return processor.Message{}, err
		}
		r := processor.ToolReturn{ToolCallID: m.ToolCallID, ToolName: calls[m.ToolCallID]}
		if m.Content.isText {
			r.Content = text[0]
		} else {
			r.Contents = text
		}
		return processor.NewRequest(r), nil
	case "assistant":
		out, err := chatAssistant(&m)
		for _, c := range out.ToolCalls() {
			calls[c.ToolCallID] = c.ToolName
		}
		return out, err
	case "":
		return processor.Message{}, errors.New("message without role")
	}
	return processor.Message{}, fmt.Errorf("role %q", m.Role)
}

// chatText reads the content of a system, developer or tool message: a
// string (one text) or an array of text parts.
func chatText(role string, content textOrRaw) ([]string, error) {
	switch content.kind() {
	case '"':
		return []string{content.text}, nil
	case '[':
		var parts []partFields
		if err := unmarshal(content.raw, &parts); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		texts := make([]string, len(parts))
		for k, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return nil, fmt.Errorf("%s content %d is not a text part", role, k)
			}
			texts[k] = *p.Text
		}
		return texts, nil
	case 0, 'n':
		return nil, fmt.Errorf("%s message without content", role)
	}
	return nil, fmt.Errorf("%s content is not a string or an array", role)
}

// chatUser reads the content of a user message: a string, or parts (a
// text part plain, any other kept whole in Data).
func chatUser(c textOrRaw) (processor.UserPrompt, error) {
	var p processor.UserPrompt
	switch c.kind() {
	case '"':
		p.Content = c.text
		return p, nil
	case 0, 'n':
		return p, errors.New("user message without content")
	case '[':
	default:
		return p, errors.New("user content is not a string or an array")
	}
	_, raws, _, err := content(c)
	if err != nil {
		return p, err
	}
	p.Contents = make([]processor.UserContent, 0, len(raws))
	for k, raw := range raws {
		var part partFields
		if err := unmarshal(raw, &part); err != nil {
			return p, fmt.Errorf("user content %d: %w", k, err)
		}
		switch {
		case part.Type == "":
			return p, fmt.Errorf("user content %d without type", k)
		case part.Type == "text" && part.Text == nil:
			return p, fmt.Errorf("user content %d: text part without text", k)
		case part.Type == "text":
			p.Contents = append(p.Contents, processor.UserContent{Type: "text", Text: *part.Text})
		default:
			p.Contents = append(p.Contents, processor.UserContent{Type: part.Type, Data: json.RawMessage(raw)})
		}
	}
	return p, nil
}

// chatAssistant reads an assistant message: its reasoning_content, its
// content (a string, or text and refusal parts) and its tool calls.
func chatAssistant(m *chatMessage) (processor.Message, error) {
	out := processor.Message{Kind: processor.Response}
	meta := processor.Meta{Name: m.Name, Refusal: m.Refusal}
	var thought string
	if m.ReasoningContent.Kind() == '"' && unmarshal(m.ReasoningContent, &thought) == nil && thought != "" {
		out.Parts = append(out.Parts, processor.Thinking{Content: thought})
	}
	switch m.Content.kind() {
	case 0, 'n':
	case '"':
		out.Parts = append(out.Parts, processor.Text{Content: m.Content.text})
	case '[':
		var parts []partFields
		if err := unmarshal(m.Content.raw, &parts); err != nil {
			return out, fmt.Errorf("content: %w", err)
		}
		var refusals []string
		for k, p := range parts {
			switch {
			case p.Type == "text" && p.Text != nil:
				out.Parts = append(out.Parts, processor.Text{Content: *p.Text})
			case p.Type == "refusal" && p.Refusal != nil:
				refusals = append(refusals, *p.Refusal)
			default:
				return out, fmt.Errorf("assistant content %d is not a text or refusal part", k)
			}
		}
		if meta.Refusal == "" && refusals != nil {
			meta.Refusal = strings.Join(refusals, "\n")
		}
	default:
		return out, errors.New("assistant content is not a string, an array or null")
	}
	for k, c := range m.ToolCalls {
		switch {
		case c.ID == "":
			return out, fmt.Errorf("assistant tool call %d without id", k)
		case c.Type != "" && c.Type != "function":
			return out, fmt.Errorf("assistant tool call %d has unsupported type %q", k, c.Type)
		case c.Function == nil || c.Function.Name == "":
			return out, fmt.Errorf("assistant tool call %d without function name", k)
		}
		out.Parts = append(out.Parts, processor.ToolCall{ToolCallID: c.ID, ToolName: c.Function.Name, Args: c.Function.Arguments})
	}
	return out.WithMeta(meta), nil
}

// Validate accepts what processor.Validate accepts.
func (chat) Validate(_, _ []processor.Message) error { return nil }

// Overflow reports a 400 whose error code is one of a context overflow.
func (chat) Overflow(status int, body []byte) bool { return openAIOverflow(status, body) }

// Usage reads "usage" (prompt_tokens, its cached_tokens, completion_tokens)
// of a completion or of a stream's chunk.
func (chat) Usage(data []byte) (processor.Usage, bool) {
	u := readUsage(data)
	if u == nil {
		return processor.Usage{}, false
	}
	return processor.Usage{InputTokens: u.PromptTokens, CachedInputTokens: u.PromptTokensDetails.CachedTokens, OutputTokens: u.CompletionTokens}, true
}

// Refuse answers in OpenAI's error shape, naming "messages" as the field
// at fault when the error is about the history.
func (chat) Refuse(status int, code, message string) []byte {
	return openAIError(status, code, message, "messages")
}

// openAIError is OpenAI's error body, {"error": {message, type, param,
// code}}: param names the history's field when the code is about the
// history.
func openAIError(status int, code, message, history string) []byte {
	typ := apierror.TypeInvalidRequest
	if status >= 500 {
		typ = apierror.TypeUpstream
	}
	e := apierror.Error{Status: status, Type: typ, Code: code, Message: message}
	switch code {
	case CodeMissingMessages, CodeInvalidMessage, CodeInvalidHistory:
		e.Param = history
	}
	return e.Body()
}

// openAIOverflow reports whether an OpenAI answer (Chat Completions or
// Responses) is a context overflow: a 400 with one of the codes package
// model reads as one.
func openAIOverflow(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var e struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	code, _ := e.Error.Code.(string)
	return (&model.Error{Code: code}).IsContextOverflow()
}

// chatHistory writes Chat Completions messages.
type chatHistory struct{}

func (chatHistory) encodeLead(processor.Message) ([]byte, error) {
	return nil, fmt.Errorf("chat completions keeps its system prompt among the messages")
}

// encode writes each message of fresh: a request as one message per
// part, a response as one assistant message.
func (chatHistory) encode(out []processor.Message, fresh []int, raws [][]byte) error {
	for _, j := range fresh {
		var err error
		if raws[j], err = writeChat(out[j]); err != nil {
			return fmt.Errorf("message %d: %w", j, err)
		}
	}
	return nil
}

// chatOut is a message written anew.
type chatOut struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Content is left out when nil (an assistant message of no text),
	// written when it holds an empty string.
	Content          any            `json:"content,omitempty"`
	Name             string         `json:"name,omitempty"`
	Refusal          string         `json:"refusal,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

// writeChat writes m: a request as one message per part (comma-separated),
// a response as one assistant message.
func writeChat(m processor.Message) ([]byte, error) {
	if m.Kind == processor.Response {
		return writeChatResponse(m)
	}
	var dst []byte
	for _, p := range m.Parts {
		var o chatOut
		switch p := p.(type) {
		case processor.SystemPrompt:
			o = chatOut{Role: "system", Content: p.Content, Name: p.Name}
			if p.Developer {
				o.Role = "developer"
			}
		case processor.UserPrompt:
			o = chatOut{Role: "user", Content: p.Content, Name: p.Name}
			if p.Contents != nil {
				parts := make([]json.RawMessage, len(p.Contents))
				for k, c := range p.Contents {
					parts[k] = c.Data
					if c.Data == nil {
						parts[k], _ = appendJSON(nil, textPart{"text", c.Text})
					}
				}
				o.Content = parts
			}
		case processor.ToolReturn:
			o = chatOut{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}
			switch {
			case p.JSON != nil:
				o.Content = string(p.JSON)
			case p.Contents != nil:
				parts := make([]textPart, len(p.Contents))
				for k, c := range p.Contents {
					parts[k] = textPart{"text", c}
				}
				o.Content = parts
			}
		case processor.RetryPrompt:
			o = chatOut{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}
			if p.ToolCallID == "" {
				o.Role = "user"
			}
		default:
			return nil, fmt.Errorf("a %s part in a request", p.PartKind())
		}
		if len(dst) > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendJSON(dst, o); err != nil {
			return nil, err
		}
	}
	if dst == nil {
		return nil, errors.New("a request without parts")
	}
	return dst, nil
}

// writeChatResponse writes a response as an assistant message: one text
// as its content string, several as text parts; its thinking as its
// reasoning_content.
func writeChatResponse(m processor.Message) ([]byte, error) {
	o := chatOut{Role: "assistant", Name: m.Info().Name, Refusal: m.Refusal()}
	var texts []textPart
	var thoughts []string
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			texts = append(texts, textPart{"text", p.Content})
		case processor.ToolCall:
			c := chatToolCall{ID: p.ToolCallID, Type: "function", Function: &chatFunction{p.ToolName, p.Args}}
			o.ToolCalls = append(o.ToolCalls, c)
		case processor.Thinking:
			if p.Content != "" {
				thoughts = append(thoughts, p.Content)
			}
		default:
			return nil, fmt.Errorf("a %s part in a response", p.PartKind())
		}
	}
	switch len(texts) {
	case 0:
	case 1:
		o.Content = texts[0].Text
	default:
		o.Content = texts
	}
	o.ReasoningContent = strings.Join(thoughts, "\n")
	return appendJSON(nil, o)
}

// fit returns out: every history the processors make is one the API takes.
func (chatHistory) fit(out []processor.Message) []processor.Message { return out }

// position names message i, the i-th of "messages".
func (chatHistory) position(_ *Body, i, _ int) string { return fmt.Sprintf("message %d", i) }

// rewrite writes a tool message whose output changed to text (trimmed,
// cleared) as the client's message with its "content" replaced: its
// other keys (a name, keys abridge does not know) and their order are
// kept.
func (chatHistory) rewrite(orig processor.Message, raw []byte, m processor.Message, lead bool) ([]byte, bool) {
	if lead || len(orig.Parts) != 1 || len(m.Parts) != 1 || !sameMeta(orig, m) {
		return nil, false
	}
	o, ok := orig.Parts[0].(processor.ToolReturn)
	if !ok {
		return nil, false
	}
	var id, content string
	switch p := m.Parts[0].(type) {
	case processor.ToolReturn:
		if p.JSON != nil || p.Contents != nil {
			return nil, false
		}
		id, content = p.ToolCallID, p.Content
	case processor.RetryPrompt:
		id, content = p.ToolCallID, p.Content
	}
	if id == "" || id != o.ToolCallID {
		return nil, false
	}
	out, err := patch(raw, appendString(nil, content), "content")
	return out, err == nil
}
