package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

func msgErr(i int, format string, args ...any) error {
	return &transcript.MessageError{Index: i, Reason: fmt.Sprintf(format, args...)}
}

// ToParams converts a history to openai-go message params, in order.
//
// A request becomes one OpenAI message per part: a [processor.SystemPrompt]
// a "system" (or "developer") message, a [processor.UserPrompt] a "user"
// message, a [processor.ToolReturn] a "tool" message, and a
// [processor.RetryPrompt] a "tool" message when it answers a call and a
// "user" message otherwise. A response becomes one "assistant" message: its
// text parts the content (a string for one part, an array of text parts for
// several, no content for none), its tool calls the tool_calls, and its
// Refusal and Name the fields of the same names. Thinking parts (the
// reasoning a server returned, see [Chat]), Usage, ModelName,
// FinishReason and Time are left out: these params carry no
// reasoning_content ([Chat.Request] adds it where a server needs it).
//
// The history is not modified. A message of unknown kind, a part that does
// not belong to its message's kind, a request without parts, a tool call or
// tool return without an ID, and a user content part whose Data is not valid
// JSON are errors of type [*transcript.MessageError] naming the message's index.
func ToParams(history []processor.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	return toOpenAI(history, false)
}

// toOpenAI is [ToParams], except that with callReasoning the Thinking parts
// of the responses with tool calls (what a request sends, see
// [Chat.Request]) are not dropped but put, joined by newlines, in the
// extra field reasoning_content of their assistant messages.
func toOpenAI(history []processor.Message, callReasoning bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	chat, err := transcript.Chat(history)
	if err != nil {
		return nil, err
	}
	out := make([]openai.ChatCompletionMessageParamUnion, len(chat))
	for i, c := range chat {
		if out[i], err = chatToOpenAI(c, callReasoning); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// chatToOpenAI is the param of c, with its reasoning when callReasoning and
// it has tool calls.
func chatToOpenAI(c transcript.ChatMessage, callReasoning bool) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	name := param.Opt[string]{}
	if c.Name != "" {
		name = openai.String(c.Name)
	}
	switch c.Role {
	case "system":
		s := &openai.ChatCompletionSystemMessageParam{Name: name}
		s.Content.OfString = openai.String(c.Content)
		u.OfSystem = s
	case "developer":
		d := &openai.ChatCompletionDeveloperMessageParam{Name: name}
		d.Content.OfString = openai.String(c.Content)
		u.OfDeveloper = d
	case "user":
		um := &openai.ChatCompletionUserMessageParam{Name: name}
		if c.Parts == nil {
			um.Content.OfString = openai.String(c.Content)
		} else {
			um.Content.OfArrayOfContentParts = make([]openai.ChatCompletionContentPartUnionParam, len(c.Parts))
			for k, p := range c.Parts {
				part, err := userPart(p)
				if err != nil {
					return u, err
				}
				um.Content.OfArrayOfContentParts[k] = part
			}
		}
		u.OfUser = um
	case "tool":
		t := &openai.ChatCompletionToolMessageParam{ToolCallID: c.ToolCallID}
		if c.Parts == nil {
			t.Content.OfString = openai.String(c.Content)
		} else {
			t.Content.OfArrayOfContentParts = make([]openai.ChatCompletionContentPartTextParam, len(c.Parts))
			for k, p := range c.Parts {
				t.Content.OfArrayOfContentParts[k] = openai.ChatCompletionContentPartTextParam{Text: p.Text}
			}
		}
		u.OfTool = t
	case "assistant":
		u.OfAssistant = assistantToOpenAI(c, callReasoning && len(c.ToolCalls) > 0)
	default:
		return u, fmt.Errorf("chat message of unknown role %q", c.Role)
	}
	return u, nil
}

// assistantToOpenAI is the param of assistant message c, with its
// reasoning in the extra field reasoning_content when reasoning is true:
// Chat Completions has no field for it; reasoning_content is the
// compatible servers' one.
func assistantToOpenAI(c transcript.ChatMessage, reasoning bool) *openai.ChatCompletionAssistantMessageParam {
	a := &openai.ChatCompletionAssistantMessageParam{}
	if c.ToolCalls != nil {
		a.ToolCalls = make([]openai.ChatCompletionMessageToolCallUnionParam, len(c.ToolCalls))
	}
	for k, tc := range c.ToolCalls {
		a.ToolCalls[k] = openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ToolCallID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.ToolName,
					Arguments: tc.Args,
				},
			},
		}
	}
	switch {
	case c.NoContent:
	case c.Parts != nil:
		parts := make([]openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion, len(c.Parts))
		for k, p := range c.Parts {
			parts[k] = openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
				OfText: &openai.ChatCompletionContentPartTextParam{Text: p.Text},
			}
		}
		a.Content.OfArrayOfContentParts = parts
	default:
		a.Content.OfString = openai.String(c.Content)
	}
	if c.Refusal != "" {
		a.Refusal = openai.String(c.Refusal)
	}
	if c.Name != "" {
		a.Name = openai.String(c.Name)
	}
	if reasoning && c.Reasoning != "" {
		a.SetExtraFields(map[string]any{reasoningContentKey: c.Reasoning})
	}
	return a
}

// userPart is a user content part as a param. Known part types decode
// into their typed fields; when the typed form would not reproduce the
// JSON exactly (an unknown type or unknown keys), the part is sent
// verbatim.
func userPart(p transcript.ChatPart) (openai.ChatCompletionContentPartUnionParam, error) {
	if p.Type == "text" {
		return openai.TextContentPart(p.Text), nil
	}
	var part openai.ChatCompletionContentPartUnionParam
	if err := json.Unmarshal(p.Data, &part); err == nil {
		if b, err := json.Marshal(part); err == nil {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var got map[string]any
			if dec.Decode(&got) == nil && reflect.DeepEqual(p.Value, got) {
				return part, nil
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, p.Data); err != nil {
		return part, fmt.Errorf("user content %q: %w", p.Type, err)
	}
	return param.Override[openai.ChatCompletionContentPartUnionParam](json.RawMessage(buf.Bytes())), nil
}

// FromParams converts openai-go message params to a history, one message for
// each param, in order.
//
// "system" and "developer" messages become requests with a
// [processor.SystemPrompt], "user" messages requests with a
// [processor.UserPrompt] (plain text in Content; multi-part content in
// Contents, with every non-text part kept as its JSON in Data), "tool"
// messages requests with a [processor.ToolReturn] whose ToolName is taken
// from the matching earlier tool call, and "assistant" messages responses
// with a [processor.Thinking] part when the param carries a non-empty
// string in the extra field reasoning_content (set with its
// SetExtraFields, as transcript.Load reads it from a stored message), a [processor.Text] part when the content is present (an empty string
// included; one part per text element of array content), a
// [processor.ToolCall] part per tool call, in that order, and Refusal and
// Name filled.
//
// Text arrays in system, developer and assistant-refusal content are joined
// with newlines. Fields the message model cannot hold (audio, the
// deprecated function_call, prompt-cache breakpoints of text parts) are
// dropped. A param without a role, a deprecated "function" message, a tool
// message without tool_call_id, a user or tool message without content, and
// a tool call without id or of a type other than function are errors of type
// [*transcript.MessageError] naming the index.
func FromParams(msgs []openai.ChatCompletionMessageParamUnion) ([]processor.Message, error) {
	out := make([]processor.Message, 0, len(msgs))
	callNames := map[string]string{}
	for i, u := range msgs {
		var m processor.Message
		switch {
		case u.OfSystem != nil:
			s := u.OfSystem
			text, err := textContent(i, "system", s.Content.OfString, s.Content.OfArrayOfContentParts)
			if err != nil {
				return nil, err
			}
			m = processor.NewRequest(processor.SystemPrompt{Content: text, Name: s.Name.Value})
		case u.OfDeveloper != nil:
			d := u.OfDeveloper
			text, err := textContent(i, "developer", d.Content.OfString, d.Content.OfArrayOfContentParts)
			if err != nil {
				return nil, err
			}
			m = processor.NewRequest(processor.SystemPrompt{Content: text, Developer: true, Name: d.Name.Value})
		case u.OfUser != nil:
			p, err := userFromOpenAI(i, u.OfUser)
			if err != nil {
				return nil, err
			}
			m = processor.NewRequest(p)
		case u.OfTool != nil:
			t := u.OfTool
			if t.ToolCallID == "" {
				return nil, msgErr(i, "tool message without tool_call_id")
			}
			r := processor.ToolReturn{ToolCallID: t.ToolCallID, ToolName: callNames[t.ToolCallID]}
			switch {
			case t.Content.OfString.Valid():
				r.Content = t.Content.OfString.Value
			case t.Content.OfArrayOfContentParts != nil:
				r.Contents = make([]string, len(t.Content.OfArrayOfContentParts))
				for k, c := range t.Content.OfArrayOfContentParts {
					r.Contents[k] = c.Text
				}
			default:
				return nil, msgErr(i, "tool message without content")
			}
			m = processor.NewRequest(r)
		case u.OfAssistant != nil:
			var err error
			m, err = assistantFromOpenAI(i, u.OfAssistant)
			if err != nil {
				return nil, err
			}
			for _, c := range m.ToolCalls() {
				callNames[c.ToolCallID] = c.ToolName
			}
		case u.OfFunction != nil:
			return nil, msgErr(i, "deprecated function message is not supported")
		default:
			return nil, msgErr(i, "message without role")
		}
		out = append(out, m)
	}
	return out, nil
}

func textContent(i int, role string, s param.Opt[string], parts []openai.ChatCompletionContentPartTextParam) (string, error) {
	switch {
	case s.Valid():
		return s.Value, nil
	case parts != nil:
		texts := make([]string, len(parts))
		for k, p := range parts {
			texts[k] = p.Text
		}
		return strings.Join(texts, "\n"), nil
	}
	return "", msgErr(i, "%s message without content", role)
}

func userFromOpenAI(i int, um *openai.ChatCompletionUserMessageParam) (processor.UserPrompt, error) {
	p := processor.UserPrompt{Name: um.Name.Value}
	switch {
	case um.Content.OfString.Valid():
		p.Content = um.Content.OfString.Value
	case um.Content.OfArrayOfContentParts != nil:
		p.Contents = make([]processor.UserContent, 0, len(um.Content.OfArrayOfContentParts))
		for k, part := range um.Content.OfArrayOfContentParts {
			if part.OfText != nil {
				p.Contents = append(p.Contents, processor.UserContent{Type: "text", Text: part.OfText.Text})
				continue
			}
			data, err := json.Marshal(part)
			if err != nil {
				return p, &transcript.MessageError{Index: i, Reason: fmt.Sprintf("user content %d", k), Err: err}
			}
			var head struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(data, &head); err != nil || head.Type == "" {
				return p, msgErr(i, "user content %d without type", k)
			}
			p.Contents = append(p.Contents, processor.UserContent{Type: head.Type, Data: data})
		}
	default:
		return p, msgErr(i, "user message without content")
	}
	return p, nil
}

func assistantFromOpenAI(i int, a *openai.ChatCompletionAssistantMessageParam) (processor.Message, error) {
	m := processor.Message{Kind: processor.Response}
	meta := processor.Meta{Name: a.Name.Value, Refusal: a.Refusal.Value}
	if s, ok := a.ExtraFields()[reasoningContentKey].(string); ok && s != "" {
		m.Parts = append(m.Parts, processor.Thinking{Content: s})
	}
	switch {
	case a.Content.OfString.Valid():
		m.Parts = append(m.Parts, processor.Text{Content: a.Content.OfString.Value})
	case a.Content.OfArrayOfContentParts != nil:
		var refusals []string
		for _, c := range a.Content.OfArrayOfContentParts {
			switch {
			case c.OfText != nil:
				m.Parts = append(m.Parts, processor.Text{Content: c.OfText.Text})
			case c.OfRefusal != nil:
				refusals = append(refusals, c.OfRefusal.Refusal)
			}
		}
		if meta.Refusal == "" && refusals != nil {
			meta.Refusal = strings.Join(refusals, "\n")
		}
	}
	for k, tc := range a.ToolCalls {
		f := tc.OfFunction
		if f == nil {
			return m, msgErr(i, "assistant tool call %d is not a function call", k)
		}
		if f.ID == "" {
			return m, msgErr(i, "assistant tool call %d without id", k)
		}
		m.Parts = append(m.Parts, processor.ToolCall{ToolCallID: f.ID, ToolName: f.Function.Name, Args: f.Function.Arguments})
	}
	return m.WithMeta(meta), nil
}
