// Package wire reads and rewrites the body of an OpenAI Chat Completions
// request: it finds the "messages" array, decodes it into abridge's
// message model, and writes the body back with other messages in its place
// and every other byte as the client sent it. The openai-go middleware and
// the proxy (abridge serve) use it on every request, so it is fast where
// requests are alike: messages of the common shapes are decoded by a
// scanner of its own, anything else through package model's decoder, and
// messages sent back unchanged are written as their original bytes.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Errors a body is refused with. Each is wrapped with details.
var (
	// ErrNotJSON: the body is not a JSON object.
	ErrNotJSON = errors.New("request body is not a JSON object")
	// ErrNoMessages: the body has no "messages" array, or an empty one.
	ErrNoMessages = errors.New(`request body has no "messages"`)
	// ErrBadMessage: a message cannot be read (its index is in the
	// error, as model.MessageError).
	ErrBadMessage = errors.New("invalid message")
)

// Body is a Chat Completions request body, parsed.
type Body struct {
	// Messages is the request's history in abridge's message model, one
	// message per message of the body.
	Messages []processor.Message
	// Model is the body's "model", when it is a string.
	Model string
	// Stream is the body's "stream", when it is true.
	Stream bool

	data       []byte            // the body as received
	start, end int               // the byte range of the "messages" value in data
	raws       []json.RawMessage // each message's bytes, in data
}

// Parse reads a Chat Completions request body. data must not change while
// the Body is in use: the Body refers to it.
func Parse(data []byte) (*Body, error) {
	b := &Body{data: data}
	if err := b.split(); err != nil {
		return nil, err
	}
	msgs, err := decode(b.raws)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	b.Messages = msgs
	return b, nil
}

// split finds the messages array and the fields the Body reports.
func (b *Body) split() error {
	dec := json.NewDecoder(bytes.NewReader(b.data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return ErrNotJSON
	}
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
		key, _ := t.(string)
		start := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
		end := int(dec.InputOffset())
		switch key {
		case "messages":
			// InputOffset stands before the ':' and any space: find the
			// value itself.
			i := bytes.IndexByte(b.data[start:end], '[')
			if i < 0 {
				return fmt.Errorf(`%w: "messages" is not an array`, ErrNoMessages)
			}
			b.start, b.end = start+i, end
			if err := json.Unmarshal(raw, &b.raws); err != nil {
				return fmt.Errorf(`%w: "messages" is not an array of messages: %w`, ErrNoMessages, err)
			}
			found = true
		case "model":
			_ = json.Unmarshal(raw, &b.Model)
		case "stream":
			_ = json.Unmarshal(raw, &b.Stream)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("%w: data after the object", ErrNotJSON)
	}
	if !found || len(b.raws) == 0 {
		return ErrNoMessages
	}
	return nil
}

// decode converts the messages.
func decode(raws []json.RawMessage) ([]processor.Message, error) {
	return model.FromRawMessages(raws)
}

// With returns the body with out in place of its messages: each message of
// out equal to one of the body's (processor.Equal) is written as the bytes
// the client sent, the others as package model encodes them; every byte
// outside "messages" is kept. When out is the body's messages, unchanged
// and in order, the body itself is returned. out is read-only.
func (b *Body) With(out []processor.Message) ([]byte, error) {
	raws := make([]json.RawMessage, len(out))
	var fresh []int
	same := len(out) == len(b.raws)
	for j := range out {
		if i := b.original(out, j); i >= 0 {
			raws[j] = b.raws[i]
			same = same && i == j
			continue
		}
		fresh = append(fresh, j)
		same = false
	}
	if same {
		// Nothing changed: the body as the client sent it.
		return b.data, nil
	}
	if len(fresh) > 0 {
		// Encode the new messages in the context of the whole history
		// (a tool return's call is looked up in it).
		enc, err := model.ToRawMessages(out)
		if err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		for _, j := range fresh {
			raws[j] = enc[j]
		}
	}
	n := len(b.data) - (b.end - b.start)
	for _, r := range raws {
		n += len(r) + 1
	}
	data := make([]byte, 0, n+2)
	data = append(data, b.data[:b.start]...)
	data = append(data, model.JoinRawMessages(raws)...)
	return append(data, b.data[b.end:]...), nil
}

// original returns the index of the body's message out[j] is, or -1: the
// message at j of the body, or the one as far from the end as out[j] is
// (processors keep a head and a tail and change the middle).
func (b *Body) original(out []processor.Message, j int) int {
	n, m := len(b.Messages), len(out)
	if j < n && processor.Equal(out[j], b.Messages[j]) {
		return j
	}
	if i := n - (m - j); i >= 0 && i < n && processor.Equal(out[j], b.Messages[i]) {
		return i
	}
	return -1
}
