package wire

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

// Chat is the codec of OpenAI Chat Completions (POST …/chat/completions):
// the history is the body's "messages", one message of the model per
// message of the body, the system prompt among them, read and written by
// package transcript's reader and writer (transcript.FromRawMessages and
// transcript.AppendMessage: a user message's non-text parts kept whole in
// UserContent.Data, a tool message named from its call, an assistant
// message's reasoning_content a [processor.Thinking]), which the loader
// and the openai-go conversion share.
var Chat Codec = chat{}

type chat struct{}

// API returns "chat".
func (chat) API() string { return "chat" }

// Parse reads a Chat Completions request body.
func (chat) Parse(data []byte, reserve func(tokens int) error) (*Body, error) {
	b, f, err := parseTop(data, Chat, chatHistory{}, reserve, "messages")
	if err != nil {
		return nil, err
	}
	items := f.items
	if items == nil {
		return nil, fmt.Errorf(`%w: "messages" is not an array`, ErrNoMessages)
	}
	for _, it := range items {
		b.raws = append(b.raws, data[it.start:it.end])
	}
	if b.Messages, err = transcript.FromRawMessages(b.raws); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
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
// Responses) is a context overflow: a 400 with one of the codes
// apierror.ContextOverflow names.
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
	return apierror.ContextOverflow(code)
}

// chatHistory writes Chat Completions messages.
type chatHistory struct{}

func (chatHistory) encodeLead(processor.Message) ([]byte, error) {
	return nil, fmt.Errorf("chat completions keeps its system prompt among the messages")
}

// encode writes each message of fresh: a request as one message per
// part, a response as one assistant message.
func (chatHistory) encode(out []processor.Message, fresh []int, raws [][]byte) error {
	for _, j := range fresh {
		var err error
		if raws[j], err = transcript.AppendMessage(nil, out[j]); err != nil {
			return fmt.Errorf("message %d: %w", j, err)
		}
	}
	return nil
}

// fit returns out: every history the processors make is one the API takes.
func (chatHistory) fit(out []processor.Message) []processor.Message { return out }

// position names message i, the i-th of "messages".
func (chatHistory) position(_ *Body, i, _ int) string { return fmt.Sprintf("message %d", i) }

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
