package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Load reads a history stored as OpenAI Chat Completions JSON: either a bare
// array of messages or an object whose "messages" key holds that array
// (other keys, such as "source", are ignored). Each message becomes one
// [processor.Message], as the package documentation describes.
//
// The decoder is strict about what the message model relies on: malformed
// JSON, a message that is not an object, a missing or unknown role, content
// of the wrong JSON type, a tool message without tool_call_id and an
// assistant tool call without id are errors that name the message's index,
// e.g. "message 12: tool message without tool_call_id". Unknown keys inside
// a message are ignored (audio, the deprecated function_call, the
// cache_control of text parts), except reasoning_content in an assistant
// message: a non-empty string there becomes a [processor.Thinking] part
// (any other value is ignored). Text arrays in system, developer and tool
// content are joined with newlines; the refusal parts of an assistant's
// content become its refusal when it has none of its own.
//
// Keys are matched as encoding/json matches them, without regard to case
// ("Content" is content). An object that holds two keys naming the same
// field ("type" and "Type", or "type" twice) is an error: readers differ on
// which one wins, so the history would not mean one thing.
func Load(r io.Reader) ([]processor.Message, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	return decodeMessages(data)
}

// LoadFile reads the history stored in the file at path, as [Load] does.
// Its errors name the file.
func LoadFile(path string) ([]processor.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	defer f.Close()
	h, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("load history %s: %w", path, err)
	}
	return h, nil
}

// FromRawMessages converts Chat Completions messages given one raw JSON
// object each (a request's "messages" array decoded into
// []json.RawMessage) to a history, one [processor.Message] each, as [Load]
// reads them. Its errors name the message at fault.
func FromRawMessages(raws []json.RawMessage) ([]processor.Message, error) {
	var d decoder
	out := make([]processor.Message, len(raws))
	for i, raw := range raws {
		m, err := d.message(i, raw)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// wireMessage is one stored message, decoded precisely enough to report
// what is wrong with it.
type wireMessage struct {
	Role       *string           `json:"role"`
	Content    json.RawMessage   `json:"content"`
	Name       *string           `json:"name"`
	Refusal    *string           `json:"refusal"`
	ToolCallID *string           `json:"tool_call_id"`
	ToolCalls  []json.RawMessage `json:"tool_calls"`
	// ReasoningContent is kept raw: only a string is read, anything else
	// is ignored like an unknown key.
	ReasoningContent json.RawMessage `json:"reasoning_content"`
}

type wireToolCall struct {
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

type wirePart struct {
	Type    *string `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// decoder decodes the messages of one history in order; it remembers the
// name of each tool call, for the tool returns that answer it.
type decoder struct {
	callNames map[string]string
}

// decodeMessages reads the top-level value of data and decodes each
// message.
func decodeMessages(data []byte) ([]processor.Message, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("empty input: want a JSON array of messages or an object with \"messages\"")
	}
	if err != nil {
		return nil, malformed(data, dec, err)
	}
	var msgs []processor.Message
	switch tok {
	case json.Delim('['):
		if msgs, err = decodeArray(data, dec); err != nil {
			return nil, err
		}
	case json.Delim('{'):
		found := false
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, malformed(data, dec, err)
			}
			if key != "messages" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, malformed(data, dec, err)
				}
				continue
			}
			tok, err := dec.Token()
			if err != nil {
				return nil, malformed(data, dec, err)
			}
			if tok != json.Delim('[') {
				return nil, errors.New(`"messages" is not an array`)
			}
			if msgs, err = decodeArray(data, dec); err != nil {
				return nil, err
			}
			found = true
		}
		if _, err := dec.Token(); err != nil {
			return nil, malformed(data, dec, err)
		}
		if !found {
			return nil, errors.New(`no "messages" array in the object`)
		}
	default:
		return nil, errors.New("want a JSON array of messages or an object with \"messages\"")
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, malformed(data, dec, err)
		}
		return nil, errors.New("unexpected data after the messages")
	}
	return msgs, nil
}

// decodeArray decodes the messages of an array whose '[' was just read,
// and its closing ']'.
func decodeArray(data []byte, dec *json.Decoder) ([]processor.Message, error) {
	var d decoder
	var msgs []processor.Message
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			line, col := position(data, start)
			return nil, &MessageError{Index: i, Reason: fmt.Sprintf("malformed JSON (the message starts near line %d, column %d)", line, col), Err: err}
		}
		m, err := d.message(i, raw)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed(data, dec, err)
	}
	return msgs, nil
}

func malformed(data []byte, dec *json.Decoder, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	line, col := position(data, dec.InputOffset())
	return fmt.Errorf("malformed JSON near line %d, column %d: %w", line, col, err)
}

// position returns the 1-based line and column of a byte offset.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// message decodes message i of the history.
func (d *decoder) message(i int, raw json.RawMessage) (processor.Message, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return processor.Message{}, msgErr(i, "not a JSON object")
	}
	if err := sameField(raw, messageFields); err != nil {
		return processor.Message{}, &MessageError{Index: i, Reason: "ambiguous keys", Err: err}
	}
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return processor.Message{}, typeErr(i, "", err)
	}
	if w.Role == nil || *w.Role == "" {
		return processor.Message{}, msgErr(i, "message without role")
	}
	var name string
	if w.Name != nil {
		name = *w.Name
	}
	switch role := *w.Role; role {
	case "system", "developer":
		text, parts, err := textParts(i, role, w.Content)
		if err != nil {
			return processor.Message{}, err
		}
		if text == nil {
			joined := strings.Join(parts, "\n")
			text = &joined
		}
		return processor.NewRequest(processor.SystemPrompt{Content: *text, Developer: role == "developer", Name: name}), nil
	case "user":
		p, err := userPrompt(i, w.Content)
		if err != nil {
			return processor.Message{}, err
		}
		p.Name = name
		return processor.NewRequest(p), nil
	case "tool":
		if w.ToolCallID == nil || *w.ToolCallID == "" {
			return processor.Message{}, msgErr(i, "tool message without tool_call_id")
		}
		r := processor.ToolReturn{ToolCallID: *w.ToolCallID, ToolName: d.callNames[*w.ToolCallID]}
		text, parts, err := textParts(i, role, w.Content)
		if err != nil {
			return processor.Message{}, err
		}
		if text != nil {
			r.Content = *text
		} else {
			r.Contents = parts
		}
		return processor.NewRequest(r), nil
	case "assistant":
		m, err := assistant(i, &w, name)
		if err != nil {
			return processor.Message{}, err
		}
		for _, c := range m.ToolCalls() {
			if d.callNames == nil {
				d.callNames = map[string]string{}
			}
			d.callNames[c.ToolCallID] = c.ToolName
		}
		return m, nil
	case "function":
		return processor.Message{}, msgErr(i, "deprecated function message is not supported")
	default:
		return processor.Message{}, msgErr(i, "unknown role %q", role)
	}
}

// userPrompt decodes the content of a user message: a string, or an array
// of parts, the text ones read and every other kept whole.
func userPrompt(i int, content json.RawMessage) (processor.UserPrompt, error) {
	var p processor.UserPrompt
	switch kind(content) {
	case '"':
		if err := json.Unmarshal(content, &p.Content); err != nil {
			return p, typeErr(i, "content", err)
		}
		return p, nil
	case '[':
	case 0, 'n':
		return p, msgErr(i, "user message without content")
	default:
		return p, msgErr(i, "user content is not a string or an array")
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return p, typeErr(i, "content", err)
	}
	p.Contents = make([]processor.UserContent, 0, len(raws))
	for k, rp := range raws {
		if kind(rp) != '{' {
			return p, msgErr(i, "user content %d is not a JSON object", k)
		}
		if err := sameField(rp, partFields); err != nil {
			return p, &MessageError{Index: i, Reason: fmt.Sprintf("user content %d", k), Err: err}
		}
		var wp wirePart
		if err := json.Unmarshal(rp, &wp); err != nil {
			return p, typeErr(i, fmt.Sprintf("user content %d", k), err)
		}
		if wp.Type == nil || *wp.Type == "" {
			return p, msgErr(i, "user content %d without type", k)
		}
		if *wp.Type == "text" {
			if wp.Text == nil {
				return p, msgErr(i, "user content %d: text part without text", k)
			}
			p.Contents = append(p.Contents, processor.UserContent{Type: "text", Text: *wp.Text})
			continue
		}
		var data bytes.Buffer
		if err := json.Compact(&data, rp); err != nil {
			return p, &MessageError{Index: i, Reason: fmt.Sprintf("user content %d", k), Err: err}
		}
		p.Contents = append(p.Contents, processor.UserContent{Type: *wp.Type, Data: data.Bytes()})
	}
	return p, nil
}

// assistant decodes an assistant message named name into a response.
func assistant(i int, w *wireMessage, name string) (processor.Message, error) {
	m := processor.Message{Kind: processor.Response}
	var refusal string
	if w.Refusal != nil {
		refusal = *w.Refusal
	}
	if s := jsonString(w.ReasoningContent); s != "" {
		m.Parts = append(m.Parts, processor.Thinking{Content: s})
	}
	switch kind(w.Content) {
	case 0, 'n':
	case '"':
		var s string
		if err := json.Unmarshal(w.Content, &s); err != nil {
			return m, typeErr(i, "content", err)
		}
		m.Parts = append(m.Parts, processor.Text{Content: s})
	case '[':
		if err := partsSameField(i, "assistant", w.Content); err != nil {
			return m, err
		}
		var parts []wirePart
		if err := json.Unmarshal(w.Content, &parts); err != nil {
			return m, typeErr(i, "content", err)
		}
		var refusals []string
		for k, p := range parts {
			switch {
			case p.Type != nil && *p.Type == "text" && p.Text != nil:
				m.Parts = append(m.Parts, processor.Text{Content: *p.Text})
			case p.Type != nil && *p.Type == "refusal" && p.Refusal != nil:
				refusals = append(refusals, *p.Refusal)
			default:
				return m, msgErr(i, "assistant content %d is not a text or refusal part", k)
			}
		}
		if refusal == "" && refusals != nil {
			refusal = strings.Join(refusals, "\n")
		}
	default:
		return m, msgErr(i, "assistant content is not a string, an array or null")
	}
	for k, rc := range w.ToolCalls {
		if kind(rc) != '{' {
			return m, msgErr(i, "assistant tool call %d is not a JSON object", k)
		}
		if err := toolCallSameField(rc); err != nil {
			return m, &MessageError{Index: i, Reason: fmt.Sprintf("assistant tool call %d", k), Err: err}
		}
		var tc wireToolCall
		if err := json.Unmarshal(rc, &tc); err != nil {
			return m, typeErr(i, fmt.Sprintf("assistant tool call %d", k), err)
		}
		if tc.ID == nil || *tc.ID == "" {
			return m, msgErr(i, "assistant tool call %d without id", k)
		}
		if tc.Type != nil && *tc.Type != "function" {
			return m, msgErr(i, "assistant tool call %d has unsupported type %q", k, *tc.Type)
		}
		if tc.Function == nil || tc.Function.Name == nil || *tc.Function.Name == "" {
			return m, msgErr(i, "assistant tool call %d without function name", k)
		}
		c := processor.ToolCall{ToolCallID: *tc.ID, ToolName: *tc.Function.Name}
		if tc.Function.Arguments != nil {
			c.Args = *tc.Function.Arguments
		}
		m.Parts = append(m.Parts, c)
	}
	return m.WithMeta(processor.Meta{Name: name, Refusal: refusal}), nil
}

// textParts decodes the content of a system, developer or tool message:
// a string (text), or an array of text parts (their texts).
func textParts(i int, role string, content json.RawMessage) (*string, []string, error) {
	switch kind(content) {
	case '"':
		var s string
		if err := json.Unmarshal(content, &s); err != nil {
			return nil, nil, typeErr(i, "content", err)
		}
		return &s, nil, nil
	case '[':
		if err := partsSameField(i, role, content); err != nil {
			return nil, nil, err
		}
		var ws []wirePart
		if err := json.Unmarshal(content, &ws); err != nil {
			return nil, nil, typeErr(i, "content", err)
		}
		texts := make([]string, len(ws))
		for k, p := range ws {
			if p.Type == nil || *p.Type != "text" || p.Text == nil {
				return nil, nil, msgErr(i, "%s content %d is not a text part", role, k)
			}
			texts[k] = *p.Text
		}
		return nil, texts, nil
	case 0, 'n':
		return nil, nil, msgErr(i, "%s message without content", role)
	}
	return nil, nil, msgErr(i, "%s content is not a string or an array", role)
}

// The fields Load reads from each kind of object, by their JSON names.
var (
	messageFields  = []string{"role", "content", "name", "refusal", "tool_call_id", "tool_calls", "reasoning_content"}
	partFields     = []string{"type", "text", "refusal"}
	toolCallFields = []string{"id", "type", "function"}
	functionFields = []string{"name", "arguments"}
)

// sameField returns an error when the JSON object raw holds two keys that
// encoding/json takes for the same one of fields (it matches keys without
// regard to case, the last one winning): "type" and "tYpE", or "type"
// twice. Keys naming no field, and raw when it is not an object, pass.
func sameField(raw json.RawMessage, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := make(map[string]string, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // json.Unmarshal reports it
		}
		key, _ := tok.(string)
		for _, f := range fields {
			if !strings.EqualFold(key, f) {
				continue
			}
			if first, ok := seen[f]; ok {
				return fmt.Errorf("keys %q and %q both name %q (keys are matched without regard to case): keep one", first, key, f)
			}
			seen[f] = key
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// partsSameField checks each object of a content array with sameField.
func partsSameField(i int, role string, content json.RawMessage) error {
	var raws []json.RawMessage
	if json.Unmarshal(content, &raws) != nil {
		return nil // decoding the parts reports it
	}
	for k, rp := range raws {
		if err := sameField(rp, partFields); err != nil {
			return &MessageError{Index: i, Reason: fmt.Sprintf("%s content %d", role, k), Err: err}
		}
	}
	return nil
}

// toolCallSameField checks a tool call and its function with sameField.
func toolCallSameField(raw json.RawMessage) error {
	if err := sameField(raw, toolCallFields); err != nil {
		return err
	}
	var tc map[string]json.RawMessage
	if json.Unmarshal(raw, &tc) != nil {
		return nil
	}
	for key, v := range tc {
		if strings.EqualFold(key, "function") {
			if err := sameField(v, functionFields); err != nil {
				return fmt.Errorf("function: %w", err)
			}
		}
	}
	return nil
}

// kind returns the first non-space byte of a JSON value, or 0 when empty.
func kind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// jsonString returns the value of raw when it is a JSON string, and ""
// for anything else (null, a number, an object, malformed JSON).
func jsonString(raw []byte) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// typeErr turns a JSON type mismatch into a message error that names the
// field in JSON terms.
func typeErr(i int, where string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if where != "" && field != "" {
			field = where + ": " + field
		} else if where != "" {
			field = where
		}
		return msgErr(i, "%s is a JSON %s, want %s", field, te.Value, jsonKind(te.Type))
	}
	if where == "" {
		return &MessageError{Index: i, Reason: "malformed", Err: err}
	}
	return &MessageError{Index: i, Reason: where, Err: err}
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "a JSON value"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	}
	return "a " + t.Kind().String()
}
