// Package wire reads and rewrites the request bodies of the LLM wire APIs
// abridge sits in front of: OpenAI Chat Completions ([Chat]), OpenAI
// Responses ([Responses]) and Anthropic Messages ([Messages]). Each is a
// [Codec]: it finds the history in a body (and the system prompt, where
// the API keeps it in a field of its own), decodes it into abridge's
// message model, and writes the body back with other messages in its
// place and every other byte as the client sent it; it knows its API's
// validity rules, its overflow answer, its usage report and its error
// shape. The middleware and the proxy pick a codec by path ([ForPath]).
//
// What the message model does not express (encrypted reasoning, thinking
// signatures, unknown items and blocks) rides on its message as
// [processor.Thinking] or [processor.Opaque] and goes back byte for byte.
// A message sent back unchanged is written as its bytes, one the
// processors changed as its bytes with only what changed replaced
// (patch.go). Bodies are read with jsontext and encoding/json/v2
// (go-json-experiment): a body that is not one JSON object, holds invalid
// UTF-8 or names a member twice in any object is refused ([ErrNotJSON]),
// and keys match as written, as the providers read them.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Codes of the refusals about a body's history (the OpenAI codecs name
// the history's field as the one at fault with them).
const (
	// CodeMissingMessages: the body has no history.
	CodeMissingMessages = "missing_messages"
	// CodeInvalidMessage: a message cannot be decoded.
	CodeInvalidMessage = "invalid_message"
	// CodeInvalidHistory: the history is not one the API accepts.
	CodeInvalidHistory = "invalid_history"
)

// Errors a body is refused with. Each is wrapped with details.
var (
	// ErrNotJSON: the body is not a JSON object.
	ErrNotJSON = errors.New("request body is not a valid JSON object")
	// ErrNoMessages: the body has no history (Chat "messages", Responses
	// "input", Messages "messages"), or an empty one.
	ErrNoMessages = errors.New("request body has no messages")
	// ErrBadMessage: a message cannot be read (its index is in the
	// error).
	ErrBadMessage = errors.New("invalid message")
)

// Codec is one wire API: how its request bodies hold a history, which
// histories it accepts, and how it reports usage, overflows and errors.
// The codecs of this package are [Chat], [Responses] and [Messages]; a
// Codec is safe for concurrent use.
type Codec interface {
	// API names the wire format: "chat", "responses" or "messages".
	API() string
	// Parse reads a request body. data must not change while the Body is
	// in use: the Body refers to it. reserve, when not nil, is called once
	// the whole body has been checked and its history's JSON tokens
	// counted (the ends of objects and arrays apart), before anything is
	// decoded: what decoding takes in memory grows with that number. Its
	// error ends Parse, returned as it is.
	Parse(data []byte, reserve func(tokens int) error) (*Body, error)
	// Validate checks, after the processors ran, that out (what in, the
	// history as received, became) is one this API accepts, beyond
	// processor.Validate; the error names the index of the message at
	// fault.
	Validate(in, out []processor.Message) error
	// Overflow reports whether an answer with this status and body (its
	// first bytes, decoded) reports a context overflow.
	Overflow(status int, body []byte) bool
	// Usage reads the usage an answer reports: a whole JSON response, or
	// the data of one event of a stream. ok is false when it holds none.
	Usage(data []byte) (u processor.Usage, ok bool)
	// Refuse returns the body of an error answer in this API's shape:
	// status, a machine-readable code (abridge's, e.g.
	// "invalid_history") and what is wrong.
	Refuse(status int, code, message string) []byte
}

// The codecs, by the path suffix of the requests they serve.
var codecs = []struct {
	suffix string
	codec  Codec
}{
	{"/chat/completions", Chat},
	{"/responses", Responses},
	// Anthropic's version in the path tells it from other APIs' message
	// lists (OpenAI's /v1/threads/ID/messages).
	{"/v1/messages", Messages},
}

// Family returns the codec of the API a path belongs to: the codec of
// ForPath, or the one whose endpoint the path is under (…/messages/
// count_tokens is Anthropic's, …/responses/ID OpenAI's), or nil. A proxy
// chooses its upstream by it.
func Family(path string) Codec {
	if c := ForPath(path); c != nil {
		return c
	}
	for _, c := range codecs {
		if strings.Contains(path, c.suffix+"/") {
			return c.codec
		}
	}
	return nil
}

// ForPath returns the codec of POST requests to path (a path ending in
// /chat/completions, /responses or /v1/messages), or nil: other requests
// are not ones abridge processes.
func ForPath(path string) Codec {
	path = strings.TrimSuffix(path, "/")
	for _, c := range codecs {
		if strings.HasSuffix(path, c.suffix) {
			return c.codec
		}
	}
	return nil
}

// Body is a request body, parsed.
type Body struct {
	// Messages is the request's history in abridge's message model: the
	// system prompt first when the API keeps it in a field of its own
	// (Messages "system", Responses "instructions"), then the history's
	// messages, grouped as the codec's documentation says.
	Messages []processor.Message
	// Model is the body's "model", when it is a string.
	Model string
	// Stream is the body's "stream", when it is true.
	Stream bool
	// Stored is set when the body names a history held by the provider
	// (Responses "previous_response_id"): what it sends is only the
	// history's end, and it is to be sent unprocessed.
	Stored bool

	codec      Codec
	hist       history
	data       []byte            // the body as received
	start, end int               // the byte range of the history's array in data
	raws       []json.RawMessage // each message's bytes, in data
	// lead is 1 when Messages[0] is the system prompt of its own field,
	// whose value is data[leadStart:leadEnd].
	lead               int
	leadStart, leadEnd int
	// first is, beside raws, the index in the history's array of each
	// message's first element, where a message can be several (nil
	// where each is one).
	first []int
}

// history writes what a codec's messages became.
type history interface {
	// encode sets raws[j], for each j of fresh, to the bytes of out[j]
	// in the history's array (several items, comma-separated, where
	// one message is several).
	encode(out []processor.Message, fresh []int, raws [][]byte) error
	// encodeLead returns the value of the system prompt's own field for
	// m, a request of system prompts.
	encodeLead(m processor.Message) ([]byte, error)
	// fit returns a changed history in the shape the API takes (a new
	// slice when it changes it).
	fit(out []processor.Message) []processor.Message
	// rewrite returns m written as raw, the bytes orig was read from,
	// with only what changed replaced, and false when m is not orig
	// changed (m is then written anew). lead tells the system prompt's
	// own field from a message of the history.
	rewrite(orig processor.Message, raw []byte, m processor.Message, lead bool) ([]byte, bool)
	// position names where part j (-1: none) of b.Messages[i] is in the
	// body, as the client wrote it.
	position(b *Body, i, j int) string
}

// Check checks that in, the body's history (Messages, but for a prefill
// the host keeps apart), is one its API accepts: processor.Validate, then
// the codec's own rules. Its error names the position at fault as the
// client's body has it: "message 2" is the third of Chat's or Anthropic's
// "messages" (Anthropic's system prompt is "system", not message 0),
// "input item 5" the sixth of Responses' "input".
func (b *Body) Check(in []processor.Message) error {
	err := processor.Validate(in)
	if err == nil {
		err = b.codec.Validate(in, in)
	}
	var he *processor.HistoryError
	if errors.As(err, &he) && he.Index < len(b.Messages) {
		return fmt.Errorf("%s: %w", b.hist.position(b, he.Index, he.Part), he.Err)
	}
	return err
}

// at returns err about part j (-1: none) of message i of a history.
func at(i, j int, err error) error { return &processor.HistoryError{Index: i, Part: j, Err: err} }

// Buffers returns the body with out in place of its messages, as pieces
// to send one after the other (net.Buffers writes them with one system
// call where it can), most of them slices of the body as received, which
// must not change while they are in use. Each message of out equal to one
// of the body's (processor.Equal) is written as the bytes the client
// sent; one that is a message of the body changed (a tool output trimmed
// or cleared, a message joined to another) as the bytes the client sent
// with only what changed replaced, so that what the message model does
// not hold (ids, status, annotations, cache_control, citations, keys
// abridge does not know, their order) is kept; the others are encoded
// anew by the codec. Every byte outside the history (and the system
// prompt's field, where the API has one) is kept. When out is the body's
// messages, unchanged and in order, the body itself is the one piece. out
// is read-only.
func (b *Body) Buffers(out []processor.Message) (net.Buffers, error) {
	if !b.same(out) {
		out = b.hist.fit(out)
	}
	var lead []byte
	if b.lead == 1 {
		if len(out) == 0 || !systemOnly(out[0]) {
			return nil, fmt.Errorf("encode messages: the history lost its system prompt, which the body keeps in a field of its own")
		}
		if processor.Equal(out[0], b.Messages[0]) {
			lead = b.data[b.leadStart:b.leadEnd]
		} else if r, ok := b.hist.rewrite(b.Messages[0], b.data[b.leadStart:b.leadEnd], out[0], true); ok {
			lead = r
		} else {
			var err error
			if lead, err = b.hist.encodeLead(out[0]); err != nil {
				return nil, fmt.Errorf("encode system prompt: %w", err)
			}
		}
	}
	raws := make([][]byte, len(out))
	var fresh []int
	same := len(out) == len(b.Messages)
	for j := b.lead; j < len(out); j++ {
		if i := b.original(out, j); i >= b.lead {
			raws[j] = b.raws[i-b.lead]
			same = same && i == j
			continue
		}
		fresh = append(fresh, j)
		same = false
	}
	if same && (b.lead == 0 || processor.Equal(out[0], b.Messages[0])) {
		// Nothing changed: the body as the client sent it.
		return net.Buffers{b.data}, nil
	}
	fresh = b.rewrite(out, fresh, raws)
	if len(fresh) > 0 {
		if err := b.hist.encode(out, fresh, raws); err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
	}
	// The pieces before the history's array, the array (its brackets and
	// commas between the messages), then the pieces after it, written
	// into one list.
	bufs := make(net.Buffers, 0, 2*len(raws)+7)
	if b.lead == 1 && b.leadStart < b.start {
		bufs = append(bufs, b.data[:b.leadStart], lead, b.data[b.leadEnd:b.start])
	} else {
		bufs = append(bufs, b.data[:b.start])
	}
	punct := []byte("[,]") // the bytes around and between messages
	bufs = append(bufs, punct[0:1:1])
	for i, r := range raws[b.lead:] {
		if i > 0 {
			bufs = append(bufs, punct[1:2:2])
		}
		bufs = append(bufs, r)
	}
	bufs = append(bufs, punct[2:3:3])
	if b.lead == 1 && b.leadStart >= b.start {
		bufs = append(bufs, b.data[b.end:b.leadStart], lead, b.data[b.leadEnd:])
	} else {
		bufs = append(bufs, b.data[b.end:])
	}
	return bufs, nil
}

// rewrite sets raws[j], for each j of fresh that is a message of the body
// changed (the one at j, or the one as far from the end), to that
// message's bytes with what changed replaced, and returns the indexes of
// fresh left to write anew.
func (b *Body) rewrite(out []processor.Message, fresh []int, raws [][]byte) []int {
	left := fresh[:0:0]
	n, m := len(b.Messages), len(out)
	for _, j := range fresh {
		done := false
		for k, i := range [2]int{j, n - (m - j)} {
			if i < b.lead || i >= n || b.Messages[i].Kind != out[j].Kind || k == 1 && i == j {
				continue
			}
			if r, ok := b.hist.rewrite(b.Messages[i], b.raws[i-b.lead], out[j], false); ok {
				raws[j], done = r, true
				break
			}
		}
		if !done {
			left = append(left, j)
		}
	}
	return left
}

// same reports whether out is the body's messages, unchanged and in order.
func (b *Body) same(out []processor.Message) bool {
	if len(out) != len(b.Messages) {
		return false
	}
	for i := range out {
		if !processor.Equal(out[i], b.Messages[i]) {
			return false
		}
	}
	return true
}

// systemOnly reports whether m is a request of system prompts alone.
func systemOnly(m processor.Message) bool {
	if m.Kind != processor.Request || len(m.Parts) == 0 {
		return false
	}
	for _, p := range m.Parts {
		if _, ok := p.(processor.SystemPrompt); !ok {
			return false
		}
	}
	return true
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

// sameMeta reports whether two messages are of one kind with the same
// metadata.
func sameMeta(a, b processor.Message) bool {
	return processor.Equal(processor.Message{Kind: a.Kind, Meta: a.Meta}, processor.Message{Kind: b.Kind, Meta: b.Meta})
}
