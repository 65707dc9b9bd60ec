package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Chat is the codec of OpenAI Chat Completions (POST …/chat/completions):
// the history is the body's "messages", one message of the model per
// message of the body; the system prompt is one of them.
var Chat Codec = chat{}

type chat struct{}

// API returns "chat".
func (chat) API() string { return "chat" }

// Parse reads a Chat Completions request body.
func (chat) Parse(data []byte) (*Body, error) {
	b := &Body{data: data, codec: Chat, hist: chatHistory{}}
	if b.fastSplit() && b.Messages != nil {
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

// Validate accepts what processor.Validate accepts.
func (chat) Validate(_, _ []processor.Message) error { return nil }

// Overflow reports a 400 whose error code is one of a context overflow.
func (chat) Overflow(status int, body []byte) bool { return openAIOverflow(status, body) }

// Usage reads "usage" (prompt_tokens, its cached_tokens, completion_tokens)
// of a completion or of a stream's chunk.
func (chat) Usage(data []byte) (processor.Usage, bool) {
	u := readUsage(data)
	if u == nil {
		return processor.Usage{}, false
	}
	return processor.Usage{InputTokens: u.PromptTokens, CachedInputTokens: u.PromptTokensDetails.CachedTokens, OutputTokens: u.CompletionTokens}, true
}

// Refuse answers in OpenAI's error shape, naming "messages" as the field
// at fault when the error is about the history.
func (chat) Refuse(status int, code, message string) []byte {
	return openAIError(status, code, message, "messages")
}

// openAIError is OpenAI's error body, {"error": {message, type, param,
// code}}: param names the history's field when the code is about the
// history.
func openAIError(status int, code, message, history string) []byte {
	typ := apierror.TypeInvalidRequest
	if status >= 500 {
		typ = apierror.TypeUpstream
	}
	e := apierror.Error{Status: status, Type: typ, Code: code, Message: message}
	switch code {
	case CodeMissingMessages, CodeInvalidMessage, CodeInvalidHistory:
		e.Param = history
	}
	return e.Body()
}

// openAIOverflow reports whether an OpenAI answer (Chat Completions or
// Responses) is a context overflow: a 400 with one of the codes package
// model reads as one.
func openAIOverflow(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var e struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	code, _ := e.Error.Code.(string)
	return (&model.Error{Code: code}).IsContextOverflow()
}

// chatHistory writes Chat Completions messages.
type chatHistory struct{}

func (chatHistory) encodeLead(processor.Message) ([]byte, error) {
	return nil, fmt.Errorf("chat completions keeps its system prompt among the messages")
}

// encode writes the messages of the shapes processors make with the
// package's own encoder, the others through package model in the context
// of the whole history (a tool return's call is looked up in it).
func (chatHistory) encode(out []processor.Message, fresh []int, raws [][]byte) error {
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
	if len(slow) == 0 {
		return nil
	}
	all, err := model.ToRawMessages(out)
	if err != nil {
		return err
	}
	for _, j := range slow {
		raws[j] = all[j]
	}
	return nil
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

// fit returns out: every history the processors make is one the API takes.
func (chatHistory) fit(out []processor.Message) []processor.Message { return out }

// rewrite writes a tool message whose output changed to text (trimmed,
// cleared) as the client's message with its "content" replaced: its
// other keys (a name, keys abridge does not know) and their order are
// kept.
func (chatHistory) rewrite(orig processor.Message, raw []byte, m processor.Message, lead bool) ([]byte, bool) {
	if lead || len(orig.Parts) != 1 || len(m.Parts) != 1 || !sameMeta(orig, m) {
		return nil, false
	}
	o, ok := orig.Parts[0].(processor.ToolReturn)
	if !ok {
		return nil, false
	}
	var id, content string
	switch p := m.Parts[0].(type) {
	case processor.ToolReturn:
		if p.JSON != nil || p.Contents != nil {
			return nil, false
		}
		id, content = p.ToolCallID, p.Content
	case processor.RetryPrompt:
		id, content = p.ToolCallID, p.Content
	}
	if id == "" || id != o.ToolCallID {
		return nil, false
	}
	out, err := patch(raw, appendString(nil, content), "content")
	return out, err == nil
}
