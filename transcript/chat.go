package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/processor"
)

// This file is the Chat Completions codec: the reader ([FromRawMessages])
// and the writer ([ToRawMessages], [AppendMessage]) that Load and Save,
// the proxy's Chat codec and package model's openai-go conversion share.
// Members are matched by their exact names, as the API matches them: a
// member "Role" is not "role".

// FromRawMessages converts Chat Completions messages given one raw JSON
// object each (a request's "messages" array decoded into
// []json.RawMessage) to a history, one [processor.Message] each, as the
// package documentation says and [Load] reads them. Members are matched
// by their exact names; other members are not read. A message that names
// a member twice, and malformed JSON, are errors; invalid UTF-8 in a
// string is read as U+FFFD. Its errors are of type [*MessageError],
// naming the message at fault.
//
// The history refers to raws (the Data of a user content part is a slice
// of its message): raws must not change while it is in use.
func FromRawMessages(raws []json.RawMessage) ([]processor.Message, error) {
	var r reader
	out := make([]processor.Message, len(raws))
	for i, raw := range raws {
		m, err := r.message(i, raw)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// chatMessage is what the reader takes of a message.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    jsontext.Value `json:"content"`
	Name       string         `json:"name"`
	Refusal    string         `json:"refusal"`
	ToolCallID string         `json:"tool_call_id"`
	ToolCalls  []chatToolCall `json:"tool_calls"`
	// ReasoningContent is kept raw: only a string is read, anything else
	// is ignored like an unknown member.
	ReasoningContent jsontext.Value `json:"reasoning_content"`
}

type chatToolCall struct {
	ID       string        `json:"id"`
	Type     *string       `json:"type"`
	Function *chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatPart is what the reader takes of a content part.
type chatPart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// reader reads the messages of one history in order; it remembers the
// name of each tool call, for the tool returns that answer it.
type reader struct {
	callNames map[string]string
}

// unmarshal decodes raw into v: exact names, no member named twice,
// invalid UTF-8 read as U+FFFD.
func unmarshal(raw []byte, v any) error {
	return jsonv2.Unmarshal(raw, v, jsontext.AllowInvalidUTF8(true))
}

// message reads message i of the history.
func (r *reader) message(i int, raw []byte) (processor.Message, error) {
	if jsontext.Value(raw).Kind() != '{' {
		return processor.Message{}, msgErr(i, "not a JSON object")
	}
	var w chatMessage
	if err := unmarshal(raw, &w); err != nil {
		return processor.Message{}, decodeErr(i, "", err)
	}
	switch role := w.Role; role {
	case "system", "developer":
		texts, _, err := textParts(i, role, w.Content)
		if err != nil {
			return processor.Message{}, err
		}
		return processor.NewRequest(processor.SystemPrompt{Content: strings.Join(texts, "\n"), Developer: role == "developer", Name: w.Name}), nil
	case "user":
		p, err := userPrompt(i, w.Content)
		p.Name = w.Name
		return processor.NewRequest(p), err
	case "tool":
		if w.ToolCallID == "" {
			return processor.Message{}, msgErr(i, "tool message without tool_call_id")
		}
		texts, isText, err := textParts(i, role, w.Content)
		if err != nil {
			return processor.Message{}, err
		}
		t := processor.ToolReturn{ToolCallID: w.ToolCallID, ToolName: r.callNames[w.ToolCallID]}
		if isText {
			t.Content = texts[0]
		} else {
			t.Contents = texts
		}
		return processor.NewRequest(t), nil
	case "assistant":
		m, err := assistant(i, &w)
		if err != nil {
			return processor.Message{}, err
		}
		for _, c := range m.ToolCalls() {
			if r.callNames == nil {
				r.callNames = map[string]string{}
			}
			r.callNames[c.ToolCallID] = c.ToolName
		}
		return m, nil
	case "":
		return processor.Message{}, msgErr(i, "message without role")
	case "function":
		return processor.Message{}, msgErr(i, "deprecated function message is not supported")
	default:
		return processor.Message{}, msgErr(i, "unknown role %q", role)
	}
}

// userPrompt reads the content of a user message: a string, or an array
// of parts, the text ones read and every other kept whole.
func userPrompt(i int, content jsontext.Value) (processor.UserPrompt, error) {
	var p processor.UserPrompt
	switch content.Kind() {
	case '"':
		if err := unmarshal(content, &p.Content); err != nil {
			return p, decodeErr(i, "content", err)
		}
		return p, nil
	case '[':
	case 0, 'n':
		return p, msgErr(i, "user message without content")
	default:
		return p, msgErr(i, "user content is not a string or an array")
	}
	raws, err := elements(content)
	if err != nil {
		return p, decodeErr(i, "content", err)
	}
	p.Contents = make([]processor.UserContent, 0, len(raws))
	for k, raw := range raws {
		where := fmt.Sprintf("user content %d", k)
		if raw.Kind() != '{' {
			return p, msgErr(i, "%s is not a JSON object", where)
		}
		var c chatPart
		if err := unmarshal(raw, &c); err != nil {
			return p, decodeErr(i, where, err)
		}
		switch {
		case c.Type == "":
			return p, msgErr(i, "%s without type", where)
		case c.Type == "text" && c.Text == nil:
			return p, msgErr(i, "%s: text part without text", where)
		case c.Type == "text":
			p.Contents = append(p.Contents, processor.UserContent{Type: "text", Text: *c.Text})
		default:
			p.Contents = append(p.Contents, processor.UserContent{Type: c.Type, Data: json.RawMessage(raw)})
		}
	}
	return p, nil
}

// assistant reads an assistant message into a response: its
// reasoning_content, its content (a string, or text and refusal parts)
// and its tool calls.
func assistant(i int, w *chatMessage) (processor.Message, error) {
	m := processor.Message{Kind: processor.Response}
	meta := processor.Meta{Name: w.Name, Refusal: w.Refusal}
	var thought string
	if w.ReasoningContent.Kind() == '"' && unmarshal(w.ReasoningContent, &thought) == nil && thought != "" {
		m.Parts = append(m.Parts, processor.Thinking{Content: thought})
	}
	switch w.Content.Kind() {
	case 0, 'n':
	case '"':
		var s string
		if err := unmarshal(w.Content, &s); err != nil {
			return m, decodeErr(i, "content", err)
		}
		m.Parts = append(m.Parts, processor.Text{Content: s})
	case '[':
		parts, err := contentParts(i, "assistant", w.Content)
		if err != nil {
			return m, err
		}
		var refusals []string
		for k, p := range parts {
			switch {
			case p.Type == "text" && p.Text != nil:
				m.Parts = append(m.Parts, processor.Text{Content: *p.Text})
			case p.Type == "refusal" && p.Refusal != nil:
				refusals = append(refusals, *p.Refusal)
			default:
				return m, msgErr(i, "assistant content %d is not a text or refusal part", k)
			}
		}
		if meta.Refusal == "" && refusals != nil {
			meta.Refusal = strings.Join(refusals, "\n")
		}
	default:
		return m, msgErr(i, "assistant content is not a string, an array or null")
	}
	for k, c := range w.ToolCalls {
		switch {
		case c.ID == "":
			return m, msgErr(i, "assistant tool call %d without id", k)
		case c.Type != nil && *c.Type != "function":
			return m, msgErr(i, "assistant tool call %d has unsupported type %q", k, *c.Type)
		case c.Function == nil || c.Function.Name == "":
			return m, msgErr(i, "assistant tool call %d without function name", k)
		}
		m.Parts = append(m.Parts, processor.ToolCall{ToolCallID: c.ID, ToolName: c.Function.Name, Args: c.Function.Arguments})
	}
	return m.WithMeta(meta), nil
}

// textParts reads the content of a system, developer or tool message: a
// string (one text, isText set), or an array of text parts (their texts).
func textParts(i int, role string, content jsontext.Value) (texts []string, isText bool, err error) {
	switch content.Kind() {
	case '"':
		var s string
		if err := unmarshal(content, &s); err != nil {
			return nil, false, decodeErr(i, "content", err)
		}
		return []string{s}, true, nil
	case '[':
		parts, err := contentParts(i, role, content)
		if err != nil {
			return nil, false, err
		}
		texts := make([]string, len(parts))
		for k, p := range parts {
			if p.Type != "text" || p.Text == nil {
				return nil, false, msgErr(i, "%s content %d is not a text part", role, k)
			}
			texts[k] = *p.Text
		}
		return texts, false, nil
	case 0, 'n':
		return nil, false, msgErr(i, "%s message without content", role)
	}
	return nil, false, msgErr(i, "%s content is not a string or an array", role)
}

// contentParts reads an array of content parts of a role's message.
func contentParts(i int, role string, content jsontext.Value) ([]chatPart, error) {
	raws, err := elements(content)
	if err != nil {
		return nil, decodeErr(i, "content", err)
	}
	parts := make([]chatPart, len(raws))
	for k, raw := range raws {
		where := fmt.Sprintf("%s content %d", role, k)
		if raw.Kind() != '{' {
			return nil, msgErr(i, "%s is not a JSON object", where)
		}
		if err := unmarshal(raw, &parts[k]); err != nil {
			return nil, decodeErr(i, where, err)
		}
	}
	return parts, nil
}

// elements returns the values of the JSON array v, each a slice of v.
func elements(v jsontext.Value) ([]jsontext.Value, error) {
	// A bytes.Buffer is read where it is, so offsets are v's.
	dec := jsontext.NewDecoder(bytes.NewBuffer(v), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var out []jsontext.Value
	for dec.PeekKind() != ']' {
		e, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		out = append(out, v[end-len(e):end:end])
	}
	return out, nil
}

// decodeErr turns an error decoding message i (where: the value of it
// being decoded, "" for the message) into a message error naming the
// member in JSON terms.
func decodeErr(i int, where string, err error) error {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.JSONKind != 0 && se.GoType != nil {
		field := where
		tokens := slices.Collect(se.JSONPointer.Tokens())
		if where == "" && len(tokens) >= 2 && tokens[0] == "tool_calls" {
			field, tokens = "assistant tool call "+tokens[1], tokens[2:]
		}
		if len(tokens) > 0 {
			if field != "" {
				field += ": "
			}
			field += strings.Join(tokens, ".")
		}
		return msgErr(i, "%s is a JSON %s, want %s", field, kindName(se.JSONKind), goKind(se.GoType))
	}
	var sy *jsontext.SyntacticError
	if errors.As(err, &sy) && errors.Is(sy.Err, jsontext.ErrDuplicateName) {
		return &MessageError{Index: i, Reason: "ambiguous keys (a member named twice)", Err: err}
	}
	if where == "" {
		where = "malformed"
	}
	return &MessageError{Index: i, Reason: where, Err: err}
}

// kindName names a JSON kind as encoding/json names JSON values.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "null"
}

// goKind names the JSON value a Go type takes.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	}
	return "a " + t.Kind().String()
}

// ToRawMessages converts a history to Chat Completions messages, one raw
// JSON object each, in order, as a request body carries them and
// [FromRawMessages] reads them back.
//
// A request becomes one message per part: a [processor.SystemPrompt] a
// "system" (or "developer") message, a [processor.UserPrompt] a "user"
// message (the JSON of each non-text part as it is in Data), a
// [processor.ToolReturn] a "tool" message (its JSON, when it has some, as
// a string), and a [processor.RetryPrompt] a "tool" message when it
// answers a call and a "user" message otherwise. A response becomes one
// "assistant" message: its Thinking parts in "reasoning_content" (joined
// by newlines when there are several), its text parts the content (a
// string for one part, an array of text parts for several, no content for
// none), its tool calls the tool_calls, and the refusal and name of its
// Meta the members of the same names. Usage, ModelName, FinishReason,
// Time and the Signature and Raw of Thinking parts are left out. Strings
// are written without escaping <, > and &.
//
// The history is not modified. A message of unknown kind, a part that does
// not belong to its message's kind, a request without parts, a tool call or
// tool return without an ID, and a user content part whose Data is not one
// JSON object are errors of type [*MessageError] naming the message's index.
func ToRawMessages(history []processor.Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(history))
	for i, m := range history {
		var err error
		if out, err = appendRaws(out, m); err != nil {
			var f *fault
			errors.As(err, &f)
			return nil, &MessageError{Index: i, Reason: f.reason, Err: f.err}
		}
	}
	return out, nil
}

// AppendMessage appends to dst the Chat Completions messages m becomes, as
// [ToRawMessages] writes them, separated by commas: one per part of a
// request, one for a response. Its error says what is wrong with m, as the
// Reason of ToRawMessages' does.
func AppendMessage(dst []byte, m processor.Message) ([]byte, error) {
	raws, err := appendRaws(nil, m)
	if err != nil {
		return dst, err
	}
	for k, r := range raws {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, r...)
	}
	return dst, nil
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

// fault is what is wrong with a message the writer cannot write: the
// Reason and Err of its [MessageError].
type fault struct {
	reason string
	err    error
}

func (f *fault) Error() string {
	if f.err == nil {
		return f.reason
	}
	return f.reason + ": " + f.err.Error()
}

// Unwrap returns [processor.ErrMalformed] and the underlying error.
func (f *fault) Unwrap() []error {
	if f.err == nil {
		return []error{processor.ErrMalformed}
	}
	return []error{processor.ErrMalformed, f.err}
}

func faultf(format string, args ...any) error {
	return &fault{reason: fmt.Sprintf(format, args...)}
}

// chatOut is a message as the writer writes it, its members in the order
// a reader expects them.
type chatOut struct {
	Role             string `json:"role"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Content is left out when nil (an assistant message of no text),
	// written when it holds an empty string.
	Content    any           `json:"content,omitempty"`
	Name       string        `json:"name,omitempty"`
	Refusal    string        `json:"refusal,omitempty"`
	ToolCalls  []toolCallOut `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

// toolCallOut is a tool call as the writer writes it.
type toolCallOut struct {
	Function struct {
		Arguments string `json:"arguments"`
		Name      string `json:"name"`
	} `json:"function"`
	ID   string `json:"id"`
	Type string `json:"type"`
}

// textPart is a text part of a message's content.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// appendRaws appends the messages m becomes to raws; its errors are
// *fault.
func appendRaws(raws []json.RawMessage, m processor.Message) ([]json.RawMessage, error) {
	switch m.Kind {
	case processor.Request:
		if len(m.Parts) == 0 {
			return raws, faultf("request without parts")
		}
		for j, p := range m.Parts {
			o, err := requestPart(j, p)
			if err != nil {
				return raws, err
			}
			if raws, err = appendOut(raws, o); err != nil {
				return raws, err
			}
		}
		return raws, nil
	case processor.Response:
		o, err := response(m)
		if err != nil {
			return raws, err
		}
		return appendOut(raws, o)
	}
	return raws, faultf("unknown message kind %v", m.Kind)
}

// appendOut appends o as JSON, <, > and & as they are.
func appendOut(raws []json.RawMessage, o chatOut) ([]json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return raws, &fault{reason: "encode", err: err}
	}
	return append(raws, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// texts returns texts as text parts.
func texts(ts []string) []textPart {
	parts := make([]textPart, len(ts))
	for k, t := range ts {
		parts[k] = textPart{Type: "text", Text: t}
	}
	return parts
}

// requestPart is part j of a request as a message.
func requestPart(j int, p processor.Part) (chatOut, error) {
	switch p := p.(type) {
	case processor.SystemPrompt:
		role := "system"
		if p.Developer {
			role = "developer"
		}
		return chatOut{Role: role, Content: p.Content, Name: p.Name}, nil
	case processor.UserPrompt:
		o := chatOut{Role: "user", Content: p.Content, Name: p.Name}
		if p.Contents == nil {
			return o, nil
		}
		parts := make([]any, len(p.Contents))
		for k, u := range p.Contents {
			if u.Type == "text" {
				parts[k] = textPart{Type: "text", Text: u.Text}
				continue
			}
			if err := oneObject(u.Data); err != nil {
				return o, &fault{reason: fmt.Sprintf("part %d: user content %d (%q)", j, k, u.Type), err: err}
			}
			parts[k] = u.Data
		}
		o.Content = parts
		return o, nil
	case processor.ToolReturn:
		if p.ToolCallID == "" {
			return chatOut{}, faultf("part %d: tool return without tool call id", j)
		}
		o := chatOut{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}
		switch {
		case p.JSON != nil:
			o.Content = string(p.JSON)
		case p.Contents != nil:
			o.Content = texts(p.Contents)
		}
		return o, nil
	case processor.RetryPrompt:
		if p.ToolCallID != "" {
			return chatOut{Role: "tool", ToolCallID: p.ToolCallID, Content: p.Content}, nil
		}
		return chatOut{Role: "user", Content: p.Content}, nil
	case nil:
		return chatOut{}, faultf("part %d is nil", j)
	}
	return chatOut{}, faultf("part %d: %s part in a request", j, p.PartKind())
}

// oneObject checks that data, the JSON of a user content part, is one
// JSON object.
func oneObject(data json.RawMessage) error {
	if len(data) == 0 {
		return errors.New("no data")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("data: %w", err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return errors.New("data: more than one JSON value")
	}
	if v[0] != '{' {
		return errors.New("data is not a JSON object")
	}
	return nil
}

// response is a response as an assistant message.
func response(m processor.Message) (chatOut, error) {
	meta := m.Info()
	o := chatOut{Role: "assistant", Name: meta.Name, Refusal: meta.Refusal}
	var ts, thoughts []string
	for j, p := range m.Parts {
		switch p := p.(type) {
		case processor.Text:
			ts = append(ts, p.Content)
		case processor.ToolCall:
			if p.ToolCallID == "" {
				return o, faultf("part %d: tool call %q without id", j, p.ToolName)
			}
			var c toolCallOut
			c.ID, c.Type = p.ToolCallID, "function"
			c.Function.Name, c.Function.Arguments = p.ToolName, p.Args
			o.ToolCalls = append(o.ToolCalls, c)
		case processor.Thinking:
			if p.Content != "" {
				thoughts = append(thoughts, p.Content)
			}
		case nil:
			return o, faultf("part %d is nil", j)
		default:
			return o, faultf("part %d: %s part in a response", j, p.PartKind())
		}
	}
	switch len(ts) {
	case 0:
	case 1:
		o.Content = ts[0]
	default:
		o.Content = texts(ts)
	}
	o.ReasoningContent = strings.Join(thoughts, "\n")
	return o, nil
}
