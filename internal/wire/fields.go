package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// span is a JSON value's byte range in a body.
type span struct{ start, end int }

// topFields reads a body's top-level object and returns the byte range of
// the value of each key of want found in it. A key of want given twice is
// refused: a reader taking the first and one taking the last would see
// different requests.
func topFields(data []byte, want ...string) (map[string]span, error) {
	if found, ok := scanFields(data, want); ok {
		return found, nil
	}
	// encoding/json reads what the scanner did not, or says what is wrong.
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, ErrNotJSON
	}
	found := map[string]span{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
		}
		end := int(dec.InputOffset())
		for _, w := range want {
			if w != key {
				continue
			}
			if _, dup := found[key]; dup {
				return nil, fmt.Errorf("%w: %q given twice", ErrNotJSON, key)
			}
			found[key] = span{end - len(raw), end}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	// Only white space may follow the object (Token skips what it cannot
	// read as one, so it cannot say).
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the object", ErrNotJSON, len(rest))
	}
	return found, nil
}

// scanFields is topFields on the package's scanner, which reports false
// for any body it does not take (a key of want given twice included).
func scanFields(data []byte, want []string) (map[string]span, bool) {
	s := scanner{data: data}
	if !s.eat('{') {
		return nil, false
	}
	found := map[string]span{}
	if !s.eat('}') {
		for {
			raw, esc, ok := s.str()
			if !ok || !s.eat(':') {
				return nil, false
			}
			key := unquote(raw, esc)
			s.ws()
			start := s.pos
			if !s.skip(1) {
				return nil, false
			}
			if slices.Contains(want, key) {
				if _, dup := found[key]; dup {
					return nil, false
				}
				found[key] = span{start, s.pos}
			}
			if s.eat(',') {
				continue
			}
			if !s.eat('}') {
				return nil, false
			}
			break
		}
	}
	s.ws()
	return found, s.pos == len(data)
}

// elements returns the byte ranges of the values of the JSON array at v
// in data.
func elements(data []byte, v span) ([]span, error) {
	if out, ok := scanElements(data, v); ok {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data[v.start:v.end]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("not an array")
	}
	var out []span
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		end := v.start + int(dec.InputOffset())
		out = append(out, span{end - len(raw), end})
	}
	return out, nil
}

// scanElements is elements on the package's scanner, which reports false
// for any array it does not take.
func scanElements(data []byte, v span) ([]span, bool) {
	s := scanner{data: data[:v.end], pos: v.start}
	if !s.eat('[') {
		return nil, false
	}
	out := []span{}
	if s.eat(']') {
		return out, true
	}
	for {
		s.ws()
		start := s.pos
		if !s.skip(1) {
			return nil, false
		}
		out = append(out, span{start, s.pos})
		if s.eat(',') {
			continue
		}
		return out, s.eat(']')
	}
}

// stringValue returns the text of the JSON string at v, or ok false when
// the value is not a string.
func stringValue(data []byte, v span) (string, bool) {
	if v.start >= v.end || data[v.start] != '"' {
		return "", false // not a string, told without reading it through
	}
	// The scanner reads most strings; one it leaves (see scanner) is
	// read by encoding/json.
	sc := scanner{data: data[v.start:v.end]}
	if raw, esc, ok := sc.str(); ok && sc.pos == len(sc.data) {
		return unquote(raw, esc), true
	}
	var s string
	if json.Unmarshal(data[v.start:v.end], &s) != nil {
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
		switch string(b.data[v.start:v.end]) {
		case "true":
			b.Stream = true
		case "false":
		default:
			_ = json.Unmarshal(b.data[v.start:v.end], &b.Stream)
		}
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
