package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

func msgErr(i int, format string, args ...any) error {
	return &transcript.MessageError{Index: i, Reason: fmt.Sprintf(format, args...)}
}

// ToParams converts a history to openai-go message params, in order: the
// messages transcript.ToRawMessages writes, read into the params.
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
//
// The messages are those transcript.ToRawMessages writes, read by
// openai-go, but for what its types do not hold: reasoning_content, and
// the members of a user content part its type does not know (such a part
// is sent as it is written).
func toOpenAI(history []processor.Message, callReasoning bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	raws, err := transcript.ToRawMessages(history)
	if err != nil {
		return nil, err
	}
	out := make([]openai.ChatCompletionMessageParamUnion, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("chat message %d as openai-go params: %w", i, err)
		}
		switch u := &out[i]; {
		case u.OfUser != nil && u.OfUser.Content.OfArrayOfContentParts != nil:
			var m struct {
				Content []jsontext.Value `json:"content"`
			}
			if err := jsonv2.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("chat message %d: %w", i, err)
			}
			for k, p := range u.OfUser.Content.OfArrayOfContentParts {
				u.OfUser.Content.OfArrayOfContentParts[k] = userPart(p, m.Content[k])
			}
		case u.OfAssistant != nil && callReasoning && len(u.OfAssistant.ToolCalls) > 0:
			var m struct {
				Reasoning string `json:"reasoning_content"`
			}
			if err := jsonv2.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("chat message %d: %w", i, err)
			}
			if m.Reasoning != "" {
				u.OfAssistant.SetExtraFields(map[string]any{reasoningContentKey: m.Reasoning})
			}
		}
	}
	return out, nil
}

// userPart is p, a user content part as openai-go read it from raw, or raw
// itself when p does not marshal to the same JSON (an unknown type or
// unknown members).
func userPart(p openai.ChatCompletionContentPartUnionParam, raw jsontext.Value) openai.ChatCompletionContentPartUnionParam {
	if p.OfText != nil {
		return p
	}
	if b, err := json.Marshal(p); err == nil {
		var got, want any
		if decodeNumbers(b, &got) == nil && decodeNumbers(raw, &want) == nil && reflect.DeepEqual(got, want) {
			return p
		}
	}
	return param.Override[openai.ChatCompletionContentPartUnionParam](json.RawMessage(raw))
}

// decodeNumbers decodes data into v, numbers as written.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// FromParams converts openai-go message params to a history, one message for
// each param, in order: the JSON of each param is read by
// transcript.FromRawMessages, as the proxy reads a request body's messages.
//
// "system" and "developer" messages become requests with a
// [processor.SystemPrompt], "user" messages requests with a
// [processor.UserPrompt] (plain text in Content; multi-part content in
// Contents, with every non-text part kept as its JSON in Data), "tool"
// messages requests with a [processor.ToolReturn] whose ToolName is taken
// from the matching earlier tool call, and "assistant" messages responses
// with a [processor.Thinking] part when the param carries a non-empty
// string in the extra field reasoning_content (set with its
// SetExtraFields, as transcript.Load reads it from a stored message), a
// [processor.Text] part when the content is present (an empty string
// included; one part per text element of array content), a
// [processor.ToolCall] part per tool call, in that order, and Refusal and
// Name filled.
//
// Text arrays in system, developer and assistant-refusal content are joined
// with newlines. Fields the message model cannot hold (audio, the
// deprecated function_call, prompt-cache breakpoints of text parts) are
// dropped. A param without a role, a deprecated "function" message, a tool
// message without tool_call_id, a user or tool message without content, and
// a tool call without id or function name, or of a type other than
// function, are errors of type [*transcript.MessageError] naming the index.
func FromParams(msgs []openai.ChatCompletionMessageParamUnion) ([]processor.Message, error) {
	raws := make([]json.RawMessage, len(msgs))
	for i, u := range msgs {
		raw, err := json.Marshal(u)
		if err != nil {
			return nil, &transcript.MessageError{Index: i, Reason: "encode", Err: err}
		}
		if string(raw) == "null" {
			return nil, msgErr(i, "message without role")
		}
		raws[i] = raw
	}
	return transcript.FromRawMessages(raws)
}
