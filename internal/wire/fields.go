package wire

import (
	"bytes"
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

// Bodies are read with jsontext, which refuses what is not JSON, invalid
// UTF-8 and an object naming a member twice, at every level: a reader
// taking the first of two "messages" and one taking the last would see
// different requests. Messages, items and blocks are decoded with
// encoding/json/v2 (go-json-experiment/json), which refuses the same and
// matches keys as they are written, as the providers do.

// span is a JSON value's byte range in a body.
type span struct{ start, end int }

// decoder returns a jsontext decoder reading data where it is (a
// bytes.Buffer is read without a copy and never written to).
func decoder(data []byte) *jsontext.Decoder {
	return jsontext.NewDecoder(bytes.NewBuffer(data))
}

// notJSON wraps what jsontext said of a body that is not one JSON object.
func notJSON(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %w", ErrNotJSON, err)
}

// topFields reads data, a whole body, as one JSON object and returns the
// byte range of the value of each key of want found in it.
func topFields(data []byte, want ...string) (map[string]span, error) {
	dec := decoder(data)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, notJSON(err)
	}
	if tok.Kind() != '{' {
		return nil, fmt.Errorf("%w: it is %s", ErrNotJSON, kindName(tok.Kind()))
	}
	found := map[string]span{}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, notJSON(err)
		}
		if key := name.String(); slices.Contains(want, key) {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, notJSON(err)
			}
			end := int(dec.InputOffset())
			found[key] = span{end - len(v), end}
		} else if err := dec.SkipValue(); err != nil {
			return nil, notJSON(err)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, notJSON(err)
	}
	if end := dec.InputOffset(); !errors.Is(dec.SkipValue(), io.EOF) {
		return nil, fmt.Errorf("%w: bytes after the object, from offset %d", ErrNotJSON, end)
	}
	return found, nil
}

// Measure checks that data is one JSON object, as Parse does (valid UTF-8,
// no member named twice, nothing after it: else an error wrapping
// ErrNotJSON), and returns the number of JSON tokens it holds, the ends
// of objects and arrays apart: strings (member names included), numbers,
// literals, and the starts of objects and arrays. It decodes nothing: a
// host can bound what decoding the body will cost in memory, which grows
// with that number, before it decodes it.
func Measure(data []byte) (int, error) {
	dec := decoder(data)
	tokens := 0
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return 0, notJSON(err)
		}
		switch k := tok.Kind(); {
		case tokens == 0 && k != '{':
			return 0, fmt.Errorf("%w: it is %s", ErrNotJSON, kindName(k))
		case k != '}' && k != ']':
			tokens++
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	if end := dec.InputOffset(); !errors.Is(dec.SkipValue(), io.EOF) {
		return 0, fmt.Errorf("%w: bytes after the object, from offset %d", ErrNotJSON, end)
	}
	return tokens, nil
}

// elements returns the byte ranges of the values of the JSON array at v
// in data.
func elements(data []byte, v span) ([]span, error) {
	dec := decoder(data[v.start:v.end])
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, errors.New("not an array")
	}
	var out []span
	for dec.PeekKind() != ']' {
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		end := v.start + int(dec.InputOffset())
		out = append(out, span{end - len(raw), end})
	}
	return out, nil
}

// decodeObject decodes raw, a message or an item, into v, or says it is
// not an object.
func decodeObject(raw []byte, v any) error {
	if k := jsontext.Value(raw).Kind(); k != '{' {
		return fmt.Errorf("%s, not an object", kindName(k))
	}
	return jsonv2.Unmarshal(raw, v)
}

// stringValue returns the text of the JSON string at v, or ok false when
// the value is not a string.
func stringValue(data []byte, v span) (string, bool) {
	var s string
	if v.start >= v.end || data[v.start] != '"' || jsonv2.Unmarshal(data[v.start:v.end], &s) != nil {
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

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	out, _ := appendJSON(dst, s) // a string always encodes
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
	for _, u := range []*usageFields{r.Usage, r.Response.Usage, r.Message.Usage} {
		if u != nil {
			return u
		}
	}
	return nil
}
