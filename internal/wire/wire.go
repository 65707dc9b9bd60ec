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
	"net"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Errors a body is refused with. Each is wrapped with details.
var (
	// ErrNotJSON: the body is not a JSON object.
	ErrNotJSON = errors.New("request body is not a JSON object")
	// ErrNoMessages: the body has no "messages" array, or an empty one
	// (the error says which).
	ErrNoMessages = errors.New("request body has no messages")
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
	return parse(data, nil)
}

func parse(data []byte, cache *Cache) (*Body, error) {
	b := &Body{data: data}
	if b.fastSplit(cache) && b.Messages != nil {
		return b, nil
	}
	if b.raws == nil {
		if err := b.split(); err != nil {
			return nil, err
		}
	}
	msgs, err := model.FromRawMessages(b.raws)
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
	// Only white space may follow the object (Token skips what it cannot
	// read as one, so it cannot say).
	if rest := bytes.TrimLeft(b.data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("%w: %d bytes after the object", ErrNotJSON, len(rest))
	}
	switch {
	case !found:
		return fmt.Errorf(`%w: no "messages" field`, ErrNoMessages)
	case len(b.raws) == 0:
		return fmt.Errorf(`%w: "messages" is empty`, ErrNoMessages)
	}
	return nil
}

// With returns the body with out in place of its messages: each message of
// out equal to one of the body's (processor.Equal) is written as the bytes
// the client sent, the others encoded anew; every byte outside "messages"
// is kept. When out is the body's messages, unchanged and in order, the
// body itself is returned. out is read-only.
func (b *Body) With(out []processor.Message) ([]byte, error) {
	bufs, err := b.Buffers(out)
	if err != nil {
		return nil, err
	}
	if len(bufs) == 1 {
		return bufs[0], nil
	}
	return bytes.Join(bufs, nil), nil
}

// Buffers is [Body.With] without the copy: the new body as pieces to send
// one after the other (net.Buffers writes them with one system call where
// it can), most of them slices of the body as received, which must not
// change while they are in use.
func (b *Body) Buffers(out []processor.Message) (net.Buffers, error) {
	raws := make([][]byte, len(out))
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
		return net.Buffers{b.data}, nil
	}
	var slow []int
	var enc []byte
	for _, j := range fresh {
		start := len(enc)
		var ok bool
		if enc, ok = appendMessage(enc, out[j]); ok {
			raws[j] = enc[start:len(enc):len(enc)]
			continue
		}
		enc = enc[:start]
		slow = append(slow, j)
	}
	if len(slow) > 0 {
		// Encode the others in the context of the whole history (a tool
		// return's call is looked up in it).
		all, err := model.ToRawMessages(out)
		if err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		for _, j := range slow {
			raws[j] = all[j]
		}
	}
	punct := []byte("[,]") // the bytes around and between messages
	bufs := make(net.Buffers, 0, 2*len(raws)+3)
	bufs = append(bufs, b.data[:b.start], punct[0:1:1])
	for i, r := range raws {
		if i > 0 {
			bufs = append(bufs, punct[1:2:2])
		}
		bufs = append(bufs, r)
	}
	return append(bufs, punct[2:3:3], b.data[b.end:]), nil
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
