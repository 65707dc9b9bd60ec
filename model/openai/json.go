package openai

import (
	"bytes"
	"encoding/json"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

// FromJSON is [transcript.Load] of data: it converts raw OpenAI Chat
// Completions JSON (a JSON array of messages, or an object whose
// "messages" key holds that array) to a history. Package transcript holds
// the conversion; this name stays for the codecs of the middleware.
func FromJSON(data []byte) ([]processor.Message, error) {
	return transcript.Load(bytes.NewReader(data))
}

// FromRawMessages is [transcript.FromRawMessages]: it converts Chat
// Completions messages given one raw JSON object each to a history.
// Package transcript holds the conversion; this name stays for the codecs
// of the middleware.
func FromRawMessages(raws []json.RawMessage) ([]processor.Message, error) {
	return transcript.FromRawMessages(raws)
}

// ToRawMessages converts a history to Chat Completions messages, one raw
// JSON object each, as [ToParams] converts it and a request body carries
// it.
func ToRawMessages(history []processor.Message) ([]json.RawMessage, error) {
	params, err := ToParams(history)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(params))
	for i, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, &transcript.MessageError{Index: i, Reason: "encode", Err: err}
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
