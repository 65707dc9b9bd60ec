package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/abridge-go/abridge/processor"
)

// Load reads a history stored as OpenAI Chat Completions JSON: either a bare
// array of messages or an object whose "messages" key holds that array
// (other keys, such as "source", are ignored). Each message becomes one
// [processor.Message] as [FromOpenAI] describes.
//
// The decoder is strict about what the message model relies on: malformed
// JSON, a message that is not an object, a missing or unknown role, content
// of the wrong JSON type, a tool message without tool_call_id and an
// assistant tool call without id are errors that name the message's index,
// e.g. "message 12: tool message without tool_call_id". Unknown keys inside
// a message are ignored, except the non-standard reasoning_content of an
// assistant message: a non-empty string there becomes a [processor.Thinking]
// part before the message's other parts (any other value is ignored).
//
// Keys are matched as encoding/json matches them, without regard to case
// ("Content" is content). An object that holds two keys naming the same
// field ("type" and "Type", or "type" twice) is an error: readers differ on
// which one wins, so the history would not mean one thing.
func Load(r io.Reader) ([]processor.Message, error) {
	params, err := decodeMessages(r)
	if err != nil {
		return nil, err
	}
	return FromOpenAI(params)
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

// Save writes history as an indented JSON object {"messages": [...]} whose
// messages are the OpenAI Chat Completions messages [ToOpenAI] produces,
// plus, in an assistant message, the response's Thinking parts in
// "reasoning_content" (joined by newlines when there are several). [Load]
// reads it back into the same history, less what the format cannot hold
// (Usage, ModelName, FinishReason, Time, the Signature of Thinking parts)
// and with a response's Thinking parts merged into one, its first part.
func Save(w io.Writer, history []processor.Message) error {
	params, err := toOpenAI(history, reasoningAll)
	if err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	out := struct {
		Messages []savedMessage `json:"messages"`
	}{Messages: make([]savedMessage, len(params))}
	for i, p := range params {
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("save history: %w", &MessageError{Index: i, Reason: "encode", Err: err})
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&out.Messages[i]); err != nil {
			return fmt.Errorf("save history: %w", &MessageError{Index: i, Reason: "encode", Err: err})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

// SaveFile writes history to the file at path, as [Save] does. It writes a
// temporary file beside path and renames it, so a failed save leaves an
// existing file intact. Its errors name the file.
func SaveFile(path string, history []processor.Message) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("save history %s: %w", path, err)
	}
	tmp := f.Name()
	err = Save(f, history)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("save history %s: %w", path, err)
	}
	return nil
}

// savedMessage orders the keys of a saved message for readers; nested
// values are kept as decoded JSON so they are re-encoded without HTML
// escaping.
type savedMessage struct {
	Role             string `json:"role"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Content          any    `json:"content,omitempty"`
	Name             string `json:"name,omitempty"`
	Refusal          string `json:"refusal,omitempty"`
	ToolCalls        any    `json:"tool_calls,omitempty"`
	ToolCallID       string `json:"tool_call_id,omitempty"`
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

// decodeMessages reads the top-level value and decodes each message.
func decodeMessages(r io.Reader) ([]openai.ChatCompletionMessageParamUnion, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("empty input: want a JSON array of messages or an object with \"messages\"")
	}
	if err != nil {
		return nil, malformed(data, dec, err)
	}
	var params []openai.ChatCompletionMessageParamUnion
	switch tok {
	case json.Delim('['):
		if params, err = decodeArray(data, dec); err != nil {
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
			if params, err = decodeArray(data, dec); err != nil {
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
	return params, nil
}

// decodeArray decodes the messages of an array whose '[' was just read,
// and its closing ']'.
func decodeArray(data []byte, dec *json.Decoder) ([]openai.ChatCompletionMessageParamUnion, error) {
	var params []openai.ChatCompletionMessageParamUnion
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			line, col := position(data, start)
			return nil, &MessageError{Index: i, Reason: fmt.Sprintf("malformed JSON (the message starts near line %d, column %d)", line, col), Err: err}
		}
		p, err := decodeMessage(i, raw)
		if err != nil {
			return nil, err
		}
		params = append(params, p)
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed(data, dec, err)
	}
	return params, nil
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

// decodeMessage decodes message i into its param.
func decodeMessage(i int, raw json.RawMessage) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	if len(raw) == 0 || raw[0] != '{' {
		return u, msgErr(i, "not a JSON object")
	}
	if err := sameField(raw, messageFields); err != nil {
		return u, &MessageError{Index: i, Reason: "ambiguous keys", Err: err}
	}
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return u, typeErr(i, "", err)
	}
	if w.Role == nil || *w.Role == "" {
		return u, msgErr(i, "message without role")
	}
	role := *w.Role
	name := func() string {
		if w.Name == nil {
			return ""
		}
		return *w.Name
	}
	switch role {
	case "system", "developer":
		text, parts, err := textParts(i, role, w.Content)
		if err != nil {
			return u, err
		}
		if role == "system" {
			s := &openai.ChatCompletionSystemMessageParam{}
			setTextContent(&s.Content.OfString, &s.Content.OfArrayOfContentParts, text, parts)
			if w.Name != nil {
				s.Name = openai.String(name())
			}
			u.OfSystem = s
		} else {
			d := &openai.ChatCompletionDeveloperMessageParam{}
			setTextContent(&d.Content.OfString, &d.Content.OfArrayOfContentParts, text, parts)
			if w.Name != nil {
				d.Name = openai.String(name())
			}
			u.OfDeveloper = d
		}
	case "user":
		um := &openai.ChatCompletionUserMessageParam{}
		if w.Name != nil {
			um.Name = openai.String(name())
		}
		switch kind(w.Content) {
		case '"':
			var s string
			if err := json.Unmarshal(w.Content, &s); err != nil {
				return u, typeErr(i, "content", err)
			}
			um.Content.OfString = openai.String(s)
		case '[':
			var raws []json.RawMessage
			if err := json.Unmarshal(w.Content, &raws); err != nil {
				return u, typeErr(i, "content", err)
			}
			um.Content.OfArrayOfContentParts = make([]openai.ChatCompletionContentPartUnionParam, 0, len(raws))
			for k, rp := range raws {
				var wp wirePart
				if kind(rp) != '{' {
					return u, msgErr(i, "user content %d is not a JSON object", k)
				}
				if err := sameField(rp, partFields); err != nil {
					return u, &MessageError{Index: i, Reason: fmt.Sprintf("user content %d", k), Err: err}
				}
				if err := json.Unmarshal(rp, &wp); err != nil {
					return u, typeErr(i, fmt.Sprintf("user content %d", k), err)
				}
				if wp.Type == nil || *wp.Type == "" {
					return u, msgErr(i, "user content %d without type", k)
				}
				if *wp.Type == "text" {
					if wp.Text == nil {
						return u, msgErr(i, "user content %d: text part without text", k)
					}
					um.Content.OfArrayOfContentParts = append(um.Content.OfArrayOfContentParts, openai.TextContentPart(*wp.Text))
					continue
				}
				part, err := userPartFromData(rp)
				if err != nil {
					return u, &MessageError{Index: i, Reason: fmt.Sprintf("user content %d", k), Err: err}
				}
				um.Content.OfArrayOfContentParts = append(um.Content.OfArrayOfContentParts, part)
			}
		case 0, 'n':
			return u, msgErr(i, "user message without content")
		default:
			return u, msgErr(i, "user content is not a string or an array")
		}
		u.OfUser = um
	case "tool":
		if w.ToolCallID == nil || *w.ToolCallID == "" {
			return u, msgErr(i, "tool message without tool_call_id")
		}
		text, parts, err := textParts(i, role, w.Content)
		if err != nil {
			return u, err
		}
		t := &openai.ChatCompletionToolMessageParam{ToolCallID: *w.ToolCallID}
		setTextContent(&t.Content.OfString, &t.Content.OfArrayOfContentParts, text, parts)
		u.OfTool = t
	case "assistant":
		a, err := decodeAssistant(i, &w)
		if err != nil {
			return u, err
		}
		if w.Name != nil {
			a.Name = openai.String(name())
		}
		u.OfAssistant = a
	case "function":
		return u, msgErr(i, "deprecated function message is not supported")
	default:
		return u, msgErr(i, "unknown role %q", role)
	}
	return u, nil
}

func decodeAssistant(i int, w *wireMessage) (*openai.ChatCompletionAssistantMessageParam, error) {
	a := &openai.ChatCompletionAssistantMessageParam{}
	if w.Refusal != nil {
		a.Refusal = openai.String(*w.Refusal)
	}
	if s := jsonString(w.ReasoningContent); s != "" {
		a.SetExtraFields(map[string]any{reasoningContentKey: s})
	}
	switch kind(w.Content) {
	case 0, 'n':
	case '"':
		var s string
		if err := json.Unmarshal(w.Content, &s); err != nil {
			return nil, typeErr(i, "content", err)
		}
		a.Content.OfString = openai.String(s)
	case '[':
		if err := partsSameField(i, "assistant", w.Content); err != nil {
			return nil, err
		}
		var parts []wirePart
		if err := json.Unmarshal(w.Content, &parts); err != nil {
			return nil, typeErr(i, "content", err)
		}
		a.Content.OfArrayOfContentParts = make([]openai.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion, len(parts))
		for k, p := range parts {
			switch {
			case p.Type != nil && *p.Type == "text" && p.Text != nil:
				a.Content.OfArrayOfContentParts[k].OfText = &openai.ChatCompletionContentPartTextParam{Text: *p.Text}
			case p.Type != nil && *p.Type == "refusal" && p.Refusal != nil:
				a.Content.OfArrayOfContentParts[k].OfRefusal = &openai.ChatCompletionContentPartRefusalParam{Refusal: *p.Refusal}
			default:
				return nil, msgErr(i, "assistant content %d is not a text or refusal part", k)
			}
		}
	default:
		return nil, msgErr(i, "assistant content is not a string, an array or null")
	}
	for k, rc := range w.ToolCalls {
		if kind(rc) != '{' {
			return nil, msgErr(i, "assistant tool call %d is not a JSON object", k)
		}
		if err := toolCallSameField(rc); err != nil {
			return nil, &MessageError{Index: i, Reason: fmt.Sprintf("assistant tool call %d", k), Err: err}
		}
		var tc wireToolCall
		if err := json.Unmarshal(rc, &tc); err != nil {
			return nil, typeErr(i, fmt.Sprintf("assistant tool call %d", k), err)
		}
		if tc.ID == nil || *tc.ID == "" {
			return nil, msgErr(i, "assistant tool call %d without id", k)
		}
		if tc.Type != nil && *tc.Type != "function" {
			return nil, msgErr(i, "assistant tool call %d has unsupported type %q", k, *tc.Type)
		}
		if tc.Function == nil || tc.Function.Name == nil || *tc.Function.Name == "" {
			return nil, msgErr(i, "assistant tool call %d without function name", k)
		}
		f := &openai.ChatCompletionMessageFunctionToolCallParam{ID: *tc.ID}
		f.Function.Name = *tc.Function.Name
		if tc.Function.Arguments != nil {
			f.Function.Arguments = *tc.Function.Arguments
		}
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: f})
	}
	return a, nil
}

// textParts decodes the content of a system, developer or tool message:
// a string, or an array of text parts.
func textParts(i int, role string, content json.RawMessage) (*string, []openai.ChatCompletionContentPartTextParam, error) {
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
		parts := make([]openai.ChatCompletionContentPartTextParam, len(ws))
		for k, p := range ws {
			if p.Type == nil || *p.Type != "text" || p.Text == nil {
				return nil, nil, msgErr(i, "%s content %d is not a text part", role, k)
			}
			parts[k] = openai.ChatCompletionContentPartTextParam{Text: *p.Text}
		}
		return nil, parts, nil
	case 0, 'n':
		return nil, nil, msgErr(i, "%s message without content", role)
	}
	return nil, nil, msgErr(i, "%s content is not a string or an array", role)
}

func setTextContent(str *param.Opt[string], arr *[]openai.ChatCompletionContentPartTextParam, text *string, parts []openai.ChatCompletionContentPartTextParam) {
	if text != nil {
		*str = openai.String(*text)
		return
	}
	*arr = parts
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
