package wire

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/processor"
)

// span is a JSON value's byte range in a body.
type span struct{ start, end int }

// decoder returns a jsontext decoder reading data where it is (a
// bytes.Buffer is read without a copy and never written to).
func decoder(data []byte, opts ...jsontext.Options) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(data), opts...)
}

// checked is the decoding of a part of a body topFields read whole: what
// it checked (valid UTF-8, no member named twice) is not checked again.
func checked() jsontext.Options {
	return jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// unmarshal decodes raw, a part of a body topFields read whole, into v.
func unmarshal(raw []byte, v any) error {
	return jsonv2.Unmarshal(raw, v, checked())
}

// notJSON wraps what jsontext said of a body that is not one JSON object.
func notJSON(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %w", ErrNotJSON, err)
}

// fields is what readObject found of an object: the byte range of the
// value of each key it was asked for and, when the value of its list key
// is an array, the byte ranges of the array's elements (nil else) and,
// when it counted them, the JSON tokens they hold, the ends of objects
// and arrays apart.
type fields struct {
	spans  map[string]span
	items  []span
	tokens int
}

// topFields reads data, a whole body, as one JSON object (checking it:
// else an error wrapping ErrNotJSON), and returns what readObject finds
// of it, the tokens of the list counted, and one for each other value
// found.
func topFields(data []byte, list string, want ...string) (fields, error) {
	dec := decoder(data)
	if k := dec.PeekKind(); k != '{' {
		if _, err := dec.ReadToken(); err != nil {
			return fields{}, notJSON(err)
		}
		return fields{}, fmt.Errorf("%w: it is %s", ErrNotJSON, kindName(k))
	}
	f, err := readObject(dec, true, list, want...)
	if err != nil {
		return fields{}, notJSON(err)
	}
	if end := dec.InputOffset(); !errors.Is(dec.SkipValue(), io.EOF) {
		return fields{}, fmt.Errorf("%w: bytes after the object, from offset %d", ErrNotJSON, end)
	}
	f.tokens += len(f.spans)
	return f, nil
}

// parseTop starts the Parse of codec: it reads data's top level (see
// topFields: the history's field list, the fields want, "model" and
// "stream"), gives reserve the tokens counted, and returns a Body with
// its model, stream and, when the history's field is an array, its range
// and elements (an error when it is empty, or missing and needed).
func parseTop(data []byte, codec Codec, hist history, reserve func(int) error, list string, want ...string) (*Body, fields, error) {
	f, err := topFields(data, list, append(want, "model", "stream")...)
	if err != nil {
		return nil, f, err
	}
	if reserve != nil {
		if err := reserve(f.tokens); err != nil {
			return nil, f, err
		}
	}
	b := &Body{data: data, codec: codec, hist: hist}
	b.header(f.spans)
	v, ok := f.spans[list]
	switch {
	case !ok:
		return nil, f, fmt.Errorf(`%w: no %q field`, ErrNoMessages, list)
	case f.items != nil && len(f.items) == 0:
		return nil, f, fmt.Errorf(`%w: %q is empty`, ErrNoMessages, list)
	}
	b.start, b.end = v.start, v.end
	b.raws = make([]json.RawMessage, 0, len(f.items))
	return b, f, nil
}

// readObject reads the object at dec's position: see fields. count tells
// whether to count the tokens of the list's elements.
func readObject(dec *jsontext.Decoder, count bool, list string, want ...string) (fields, error) {
	f := fields{spans: map[string]span{}}
	if _, err := dec.ReadToken(); err != nil {
		return f, err
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return f, err
		}
		key := name.String()
		var v span
		switch {
		case key == list && dec.PeekKind() == '[':
			v, f.items, f.tokens, err = arrayElements(dec, count)
		case key == list || slices.Contains(want, key):
			var raw jsontext.Value
			raw, err = dec.ReadValue()
			v.end = int(dec.InputOffset())
			v.start = v.end - len(raw)
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return f, err
		}
		if key == list || slices.Contains(want, key) {
			f.spans[key] = v
		}
	}
	_, err := dec.ReadToken() // the closing brace
	return f, err
}

// arrayElements reads the array at dec's position: its byte range, those
// of its elements and, when count is set, the tokens they hold.
func arrayElements(dec *jsontext.Decoder, count bool) (v span, items []span, tokens int, err error) {
	if _, err := dec.ReadToken(); err != nil {
		return v, nil, 0, err
	}
	v.start = int(dec.InputOffset()) - 1
	depth := dec.StackDepth()
	items = []span{}
	for dec.PeekKind() != ']' {
		var e span
		if k := dec.PeekKind(); count && (k == '{' || k == '[') {
			// Token by token, to the end of the element.
			for first := true; first || dec.StackDepth() > depth; first = false {
				tok, err := dec.ReadToken()
				if err != nil {
					return v, nil, 0, err
				}
				if first {
					e.start = int(dec.InputOffset()) - 1
				}
				if k := tok.Kind(); k != '}' && k != ']' {
					tokens++
				}
			}
			e.end = int(dec.InputOffset())
		} else {
			raw, err := dec.ReadValue()
			if err != nil {
				return v, nil, 0, err
			}
			e.end = int(dec.InputOffset())
			e.start = e.end - len(raw)
			tokens++
		}
		items = append(items, e)
	}
	if _, err := dec.ReadToken(); err != nil {
		return v, nil, 0, err
	}
	v.end = int(dec.InputOffset())
	return v, items, tokens, nil
}

// elements returns the byte ranges of the values of the JSON array at v
// in data.
func elements(data []byte, v span) ([]span, error) {
	dec := decoder(data[v.start:v.end])
	if dec.PeekKind() != '[' {
		return nil, errors.New("not an array")
	}
	_, items, _, err := arrayElements(dec, false)
	for i := range items {
		items[i].start += v.start
		items[i].end += v.start
	}
	return items, err
}

// textOrRaw is a field most often a string (a content, a tool output): a
// string is decoded as it is read, anything else kept as its JSON
// (encoding/json/v2 calls UnmarshalJSONFrom), nil when the field is
// absent.
type textOrRaw struct {
	text   string
	isText bool
	raw    jsontext.Value
}

// UnmarshalJSONFrom reads the field's value.
func (t *textOrRaw) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '"' {
		v, err := dec.ReadValue()
		t.raw = bytes.Clone(v) // valid until the next read only
		return err
	}
	tok, err := dec.ReadToken()
	if err == nil {
		t.text, t.isText = tok.String(), true
	}
	return err
}

// kind returns the kind of the field's value, 0 when it is absent.
func (t textOrRaw) kind() jsontext.Kind {
	if t.isText {
		return '"'
	}
	return t.raw.Kind()
}

// decodeObject decodes raw, a message or an item, into v, or says it is
// not an object.
func decodeObject(raw []byte, v any) error {
	if k := jsontext.Value(raw).Kind(); k != '{' {
		return fmt.Errorf("%s, not an object", kindName(k))
	}
	return unmarshal(raw, v)
}

// stringValue returns the text of the JSON string at v, or ok false when
// the value is not a string.
func stringValue(data []byte, v span) (string, bool) {
	var s string
	if v.start >= v.end || data[v.start] != '"' || unmarshal(data[v.start:v.end], &s) != nil {
		return "", false
	}
	return s, true
}

// header reads the fields every body reports: "model" and "stream".
func (b *Body) header(fs map[string]span) {
	if v, ok := fs["model"]; ok {
		b.Model, _ = stringValue(b.data, v)
	}
	if v, ok := fs["stream"]; ok {
		b.Stream = string(b.data[v.start:v.end]) == "true"
	}
}

// appendJSON appends v as JSON without escaping <, > and & (as a client
// writes them).
func appendJSON(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// textPart is a text part written anew: Chat's and Anthropic's text
// content.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// appendString appends s as a JSON string (invalid UTF-8 replaced by
// U+FFFD).
func appendString(dst []byte, s string) []byte {
	out, _ := jsontext.AppendQuote(dst, s)
	return out
}

// validJSON returns s as a raw JSON value when it is one, else the empty
// object.
func validJSON(s string) json.RawMessage {
	if s = strings.TrimSpace(s); s != "" && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage(`{}`)
}

// samePart reports whether two parts are equal as processor.Equal says.
func samePart(a, b processor.Part) bool {
	return processor.Equal(processor.Message{Kind: processor.Request, Parts: []processor.Part{a}},
		processor.Message{Kind: processor.Request, Parts: []processor.Part{b}})
}

// usageFields are the usage keys of the OpenAI and Anthropic answers.
type usageFields struct {
	// Chat Completions.
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Responses and Messages.
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	// Messages.
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// readUsage returns the usage data holds: its "usage", or the one of the
// response or message it carries (a stream's events), or nil.
func readUsage(data []byte) *usageFields {
	var r struct {
		Usage    *usageFields `json:"usage"`
		Response struct {
			Usage *usageFields `json:"usage"`
		} `json:"response"`
		Message struct {
			Usage *usageFields `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &r) != nil {
		return nil
	}
	return cmp.Or(r.Usage, r.Response.Usage, r.Message.Usage)
}
