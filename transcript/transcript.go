// Package transcript reads and writes histories as OpenAI Chat
// Completions JSON: a saved conversation, the "messages" of a request
// body. [Load] and [LoadFile] read one into abridge's message model,
// [Save] and [SaveFile] write one. [FromRawMessages] and [ToRawMessages]
// are the reader and the writer under them, one raw JSON object per
// message; the proxy's Chat Completions codec and package model's
// openai-go conversion use them too, so a message reads the same
// wherever it comes from. Members are matched by their exact names, as
// the API matches them. It imports no provider SDK: a program that
// replays or processes saved transcripts needs only this package, package
// processor and the processors.
//
// One Chat Completions message is one [processor.Message]: "system" and
// "developer" messages become requests with a [processor.SystemPrompt],
// "user" messages requests with a [processor.UserPrompt] (multi-part
// content in Contents, every part but text kept as its JSON in Data),
// "tool" messages requests with a [processor.ToolReturn] whose ToolName is
// taken from the matching earlier tool call, and "assistant" messages
// responses: a [processor.Thinking] part when the message carries a
// non-empty string in the non-standard reasoning_content (DeepSeek, vLLM,
// SGLang and Qwen servers write it), a [processor.Text] part when the
// content is present (an empty string included; one part per text element
// of array content), and a [processor.ToolCall] part per tool call, in
// that order, with the refusal and the name in the message's Meta.
package transcript

import (
	"fmt"

	"github.com/abridge-go/abridge/processor"
)

// MessageError reports a message that cannot be loaded, converted or
// saved. It matches [processor.ErrMalformed] with errors.Is.
type MessageError struct {
	// Index is the zero-based position of the offending message.
	Index int
	// Reason says what is wrong with it, e.g. "tool message without
	// tool_call_id".
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "message <index>: <reason>[: <underlying error>]".
func (e *MessageError) Error() string {
	s := fmt.Sprintf("message %d: %s", e.Index, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns [processor.ErrMalformed] and the underlying error.
func (e *MessageError) Unwrap() []error {
	if e.Err == nil {
		return []error{processor.ErrMalformed}
	}
	return []error{processor.ErrMalformed, e.Err}
}

func msgErr(i int, format string, args ...any) error {
	return &MessageError{Index: i, Reason: fmt.Sprintf(format, args...)}
}
