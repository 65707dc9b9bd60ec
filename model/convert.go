package model

import (
	"bytes"
	"encoding/json"
	"errors"
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

// ToOpenAI converts a history to openai-go message params, in order.
//
// A request becomes one OpenAI message per part: a [processor.SystemPrompt]
// a "system" (or "developer") message, a [processor.UserPrompt] a "user"
// message, a [processor.ToolReturn] a "tool" message, and a
// [processor.RetryPrompt] a "tool" message when it answers a call and a
// "user" message otherwise. A response becomes one "assistant" message: its
// text parts the content (a string for one part, an array of text parts for
// several, no content for none), its tool calls the tool_calls, and its
// Refusal and Name the fields of the same names. Thinking parts (the
// reasoning a server returned, see [OpenAI]), Usage, ModelName,
// FinishReason and Time are left out: these params carry no
// reasoning_content ([OpenAI.Request] adds it where a server needs it).
//
// The history is not modified. A message of unknown kind, a part that does
// not belong to its message's kind, a request without parts, a tool call or
// tool return without an ID, and a user content part whose Data is not valid
// JSON are errors of type [*transcript.MessageError] naming the message's index.
func ToOpenAI(history []processor.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	return toOpenAI(history, false)
}

// toOpenAI is [ToOpenAI], except that with callReasoning the Thinking parts
// of the responses with tool calls (what a request sends, see
// [OpenAI.Request]) are not dropped but put, joined by newlines, in the
// extra field reasoning_content of their assistant messages.
func toOpenAI(history []processor.Message, callReasoning bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(history))
	for i, m := range history {
		switch m.Kind {
		case processor.Request:
			if len(m.Parts) == 0 {
				return nil, msgErr(i, "request without parts")
			}
			for j, p := range m.Parts {
				u, err := requestPartToOpenAI(i, j, p)
				if err != nil {
					return nil, err
				}
				out = append(out, u)
			}
		case processor.Response:
			reasoning := callReasoning && m.HasToolCalls()
			u, err := responseToOpenAI(i, m, reasoning)
			if err != nil {
				return nil, err
			}
			out = append(out, u)
		default:
			return nil, msgErr(i, "unknown message kind %v", m.Kind)
		}
	}
	return out, nil
}

func requestPartToOpenAI(i, j int, p processor.Part) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	switch p := p.(type) {
	case processor.SystemPrompt:
		if p.Developer {
			d := &openai.ChatCompletionDeveloperMessageParam{}
			d.Content.OfString = openai.String(p.Content)
			if p.Name != "" {
				d.Name = openai.String(p.Name)
			}
			u.OfDeveloper = d
			return u, nil
		}
		s := &openai.ChatCompletionSystemMessageParam{}
		s.Content.OfString = openai.String(p.Content)
		if p.Name != "" {
			s.Name = openai.String(p.Name)
		}
		u.OfSystem = s
	case processor.UserPrompt:
		um := &openai.ChatCompletionUserMessageParam{}
		if p.Name != "" {
			um.Name = openai.String(p.Name)
		}
		if p.Contents == nil {
			um.Content.OfString = openai.String(p.Content)
		} else {
			parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(p.Contents))
			for k, c := range p.Contents {
				if c.Type == "text" {
					parts = append(parts, openai.TextContentPart(c.Text))
					continue
				}
				part, err := userPartFromData(c.Data)
				if err != nil {
					return u, &transcript.MessageError{Index: i, Reason: fmt.Sprintf("part %d: user content %d (%q)", j, k, c.Type), Err: err}
				}
				parts = append(parts, part)
			}
			um.Content.OfArrayOfContentParts = parts
		}
		u.OfUser = um
	case processor.ToolReturn:
		if p.ToolCallID == "" {
			return u, msgErr(i, "part %d: tool return without tool call id", j)
		}
		t := &openai.ChatCompletionToolMessageParam{ToolCallID: p.ToolCallID}
		switch {
		case p.JSON != nil:
			t.Content.OfString = openai.String(string(p.JSON))
		case p.Contents != nil:
			parts := make([]openai.ChatCompletionContentPartTextParam, len(p.Contents))
			for k, c := range p.Contents {
				parts[k] = openai.ChatCompletionContentPartTextParam{Text: c}
			}
			t.Content.OfArrayOfContentParts = parts
		default:
			t.Content.OfString = openai.String(p.Content)
		}
		u.OfTool = t
	case processor.RetryPrompt:
		if p.ToolCallID != "" {
			t := &openai.ChatCompletionToolMessageParam{ToolCallID: p.ToolCallID}
			t.Content.OfString = openai.String(p.Content)
			u.OfTool = t
			return u, nil
		}
		um := &openai.ChatCompletionUserMessageParam{}
		um.Content.OfString = openai.String(p.Content)
		u.OfUser = um
	case nil:
		return u, msgErr(i, "part %d is nil", j)
	default:
		return u, msgErr(i, "part %d: %s part in a request", j, p.PartKind())
	}
	return u, nil
}

func responseToOpenAI(i int, m processor.Message, reasoning bool) (openai.ChatCompletionMessageParamUnion, error) {
	a := &openai.ChatCompletionAssistantMessageParam{}
	var texts, thoughts []string
	for j, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			texts = append(texts, p.Content)
		case processor.ToolCall:
			if p.ToolCallID == "" {
				return openai.ChatCompletionMessageParamUnion{}, msgErr(i, "part %d: tool call %q without id", j, p.ToolName)
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: p.ToolCallID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      p.ToolName,
						Arguments: p.Args,
					},
				},
			})
		case processor.Thinking:
			// Chat Completions has no field for it; reasoning_content is
			// the compatible servers' one.
			if reasoning && p.Content != "" {
				thoughts = append(thoughts, p.Content)
			}
		case nil:
			return openai.ChatCompletionMessageParamUnion{}, msgErr(i, "part %d is nil", j)
		default:
			return openai.ChatCompletionMessageParamUnion{}, msgErr(i, "part %d: %s part in a response", j, p.PartKind())
		}
	}
	switch len(texts) {
	case 0:
	case 1:
		a.Content.OfString = openai.String(texts[0])
	default:
		parts := make([]openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion, len(texts))
		for k, t := range texts {
			parts[k] = openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
				OfText: &openai.ChatCompletionContentPartTextParam{Text: t},
			}
		}
		a.Content.OfArrayOfContentParts = parts
	}
	meta := m.Info()
	if meta.Refusal != "" {
		a.Refusal = openai.String(meta.Refusal)
	}
	if meta.Name != "" {
		a.Name = openai.String(meta.Name)
	}
	if thoughts != nil {
		a.SetExtraFields(map[string]any{reasoningContentKey: strings.Join(thoughts, "\n")})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}, nil
}

// userPartFromData turns a non-text user content part's JSON into a param.
// Known part types decode into their typed fields; when the typed form
// would not reproduce the JSON exactly (an unknown type or unknown keys),
// the part is sent verbatim.
func userPartFromData(data json.RawMessage) (openai.ChatCompletionContentPartUnionParam, error) {
	var part openai.ChatCompletionContentPartUnionParam
	if len(data) == 0 {
		return part, errors.New("no data")
	}
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
		return part, fmt.Errorf("data: %w", err)
	}
	if _, ok := want.(map[string]any); !ok {
		return part, errors.New("data is not a JSON object")
	}
	if err := json.Unmarshal(data, &part); err == nil {
		if b, err := json.Marshal(part); err == nil {
			var got any
			if json.Unmarshal(b, &got) == nil && reflect.DeepEqual(want, got) {
				return part, nil
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return part, fmt.Errorf("data: %w", err)
	}
	return param.Override[openai.ChatCompletionContentPartUnionParam](json.RawMessage(buf.Bytes())), nil
}

// FromOpenAI converts openai-go message params to a history, one message for
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
func FromOpenAI(msgs []openai.ChatCompletionMessageParamUnion) ([]processor.Message, error) {
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
