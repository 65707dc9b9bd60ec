// Package model is abridge's boundary with language models, as its
// callers (the agent, the summarizer, the window) see it: the [Model]
// interface, the per-request [Settings] and [Tool]s, the [Error] a
// provider reports and its sentinels ([ErrContextOverflow] and the
// others), [Observe] to see what each request cost, and [Recorder], a
// scripted model that records exactly what each request sent. It imports
// no SDK: the models that call a provider live in a package of their own
// each, with options of their own (package model/openai for OpenAI Chat
// Completions and Responses on openai-go, package model/anthropic for
// Anthropic Messages on anthropic-sdk-go).
package model

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/processor"
)

// Model sends a history to a language model and returns its response.
//
// The messages are read-only: Request must not modify them. The returned
// message is a [processor.Response] whose Usage is filled with what the
// provider reported, including Usage.PromptMessages = len(messages).
// Implementations are safe for concurrent use and honour ctx and
// Settings.Timeout.
type Model interface {
	Request(ctx context.Context, messages []processor.Message, settings Settings) (processor.Message, error)
}

// Settings are the per-request options of a model call. The zero value
// means: no tools, the provider's default temperature, no request timeout.
type Settings struct {
	// Tools are the tools offered to the model.
	Tools []Tool
	// ToolChoice is "" (the provider's default), "auto", "none",
	// "required", or the name of one tool the model must call.
	ToolChoice string
	// Temperature, when non-nil, is sent explicitly (0 included).
	Temperature *float64
	// MaxTokens caps the response's tokens; 0 means no cap.
	MaxTokens int
	// Timeout bounds the whole request, retries included; 0 means none
	// beyond ctx.
	Timeout time.Duration
	// OnText, when set, makes the request stream and receives each piece
	// of the response's text as it arrives. The returned message is the
	// same as without streaming.
	OnText func(delta string)
}

// Tool describes a tool the model may call.
type Tool struct {
	// Name is the tool's name.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON schema of the tool's arguments (an object
	// schema). Nil means a tool without arguments.
	Parameters json.RawMessage
	// Strict asks the provider to enforce the schema exactly.
	Strict bool
}

// Float returns a pointer to f, for [Settings.Temperature].
func Float(f float64) *float64 { return &f }

// ErrContextOverflow is matched (with errors.Is) by errors that report the
// prompt was too long for the model's context window.
var ErrContextOverflow = errors.New("context window exceeded")

// ErrIncompleteResponse is matched (with errors.Is) by errors that report a
// response cut off before it was complete: a stream that ended, or stopped
// sending, before the server said the response was finished. What arrived
// of it is not returned.
var ErrIncompleteResponse = errors.New("incomplete response")

// ErrMalformedResponse is matched (with errors.Is) by errors that report an
// answer that is not a response of the API called: an empty body, a body
// that is not JSON or not an event stream, malformed JSON, no choices.
var ErrMalformedResponse = errors.New("malformed response")

// Error is an error reported by a model provider.
type Error struct {
	// StatusCode is the HTTP status, or 0 when no response was received.
	StatusCode int
	// Code is the provider's error code, e.g. "context_length_exceeded".
	Code string
	// Type is the provider's error type, e.g. "invalid_request_error".
	Type string
	// Message is the provider's message.
	Message string
	// Err is the underlying error, if any. The text of an Error from a
	// provider's model, Err's included, never holds its API key; the
	// provider's own error values Err wraps hold what the server sent as
	// it was.
	Err error
}

// Error describes the provider error.
func (e *Error) Error() string {
	s := "model provider"
	if e.StatusCode != 0 {
		s += " status " + strconv.Itoa(e.StatusCode)
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	} else if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether e is a context overflow, so that
// errors.Is(err, ErrContextOverflow) holds for one.
func (e *Error) Is(target error) bool {
	return target == ErrContextOverflow && e.IsContextOverflow()
}

// IsContextOverflow reports whether the provider said the prompt is too
// long: by its code (OpenAI's), or in words that the model recognized and
// wrapped ErrContextOverflow in Err for (Anthropic's "prompt is too
// long").
func (e *Error) IsContextOverflow() bool {
	return errors.Is(e.Err, ErrContextOverflow) || apierror.ContextOverflow(e.Code)
}
