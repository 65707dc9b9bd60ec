package model

import (
	"bytes"
	"encoding/json"

	"github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/processor"
)

// FromJSON converts raw OpenAI Chat Completions JSON to a history: a JSON
// array of messages, as the "messages" of a request body holds them (or an
// object whose "messages" key holds that array, as [Load] reads). It is the
// conversion for a host that keeps, or receives, its history as JSON
// rather than as openai-go params: an HTTP middleware, a proxy, a store of
// request bodies. Its errors name the message at fault, as Load's do.
func FromJSON(data []byte) ([]processor.Message, error) {
	return Load(bytes.NewReader(data))
}

// FromRawMessages converts Chat Completions messages given one raw JSON
// object each (a request's "messages" array decoded into
// []json.RawMessage) to a history, one [processor.Message] each, as
// [FromOpenAI] describes. Its errors name the message at fault.
func FromRawMessages(raws []json.RawMessage) ([]processor.Message, error) {
	params := make([]openai.ChatCompletionMessageParamUnion, len(raws))
	for i, raw := range raws {
		p, err := decodeMessage(i, raw)
		if err != nil {
			return nil, err
		}
		params[i] = p
	}
	return FromOpenAI(params)
}

// ToRawMessages converts a history to Chat Completions messages, one raw
// JSON object each, as [ToOpenAI] converts it and a request body carries
// it.
func ToRawMessages(history []processor.Message) ([]json.RawMessage, error) {
	params, err := ToOpenAI(history)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(params))
	for i, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, &MessageError{Index: i, Reason: "encode", Err: err}
		}
		out[i] = b
	}
	return out, nil
}

// ToJSON converts a history to the JSON array of Chat Completions
// messages a request body carries in "messages" (see [ToRawMessages]).
func ToJSON(history []processor.Message) ([]byte, error) {
	raws, err := ToRawMessages(history)
	if err != nil {
		return nil, err
	}
	return JoinRawMessages(raws), nil
}

// JoinRawMessages returns the JSON array of raws.
func JoinRawMessages(raws []json.RawMessage) []byte {
	n := 2
	for _, r := range raws {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, r := range raws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, ']')
}
