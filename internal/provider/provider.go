// Package provider holds what the model providers (model/openai's Chat
// Completions and Responses models, model/anthropic's Messages model)
// share and no SDK is needed for: the options every provider takes, the
// checks of [model.Settings] made before any call, the tools' schemas,
// the deadline and the errors of a call, the watch over a streamed
// response, the response's usage and log, and the redaction of API keys
// from errors. Each provider declares its own options over [Options], so
// that an option of one cannot be given to another.
package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// DefaultStreamIdleTimeout is how long a streamed response may go without
// the server sending anything unless a provider's WithStreamIdleTimeout
// option says otherwise.
const DefaultStreamIdleTimeout = 2 * time.Minute

// DefaultRetries is the number of retries of a failed request (and of a
// cut-off stream) unless a provider's WithMaxRetries option says
// otherwise: openai-go's default, 2.
const DefaultRetries = 2

// Options are the options every provider takes, as its With functions set
// them.
type Options struct {
	// Model is the model name sent with every request.
	Model string
	// BaseURL is the endpoint's base URL; "" means the provider's.
	BaseURL string
	// APIKey is the key sent; "" means the environment's.
	APIKey string
	// HTTPClient is the client requests are made with; nil means the
	// SDK's default.
	HTTPClient *http.Client
	// MaxRetries, when set, is how many times a request is retried.
	MaxRetries *int
	// StreamIdle, when set, is the stream idle timeout.
	StreamIdle *time.Duration
	// Logger is the logger; nil means zap.NewNop().
	Logger *zap.Logger
	// NoEnv: the client reads no key nor base URL from the environment.
	NoEnv bool
}

// Resolved is [Options] with their defaults applied.
type Resolved struct {
	Options
	// Idle is the stream idle timeout; 0 means none.
	Idle time.Duration
	// Retries is how often a failed request or a cut-off stream is tried
	// again.
	Retries int
}

// Resolve applies the defaults to o: a Nop logger, the default stream
// idle timeout and retries, negative values taken for 0.
func Resolve(o Options) Resolved {
	r := Resolved{Options: o, Idle: DefaultStreamIdleTimeout, Retries: DefaultRetries}
	if r.Logger == nil {
		r.Logger = zap.NewNop()
	}
	if o.StreamIdle != nil {
		r.Idle = max(*o.StreamIdle, 0)
	}
	if o.MaxRetries != nil {
		r.Retries = max(*o.MaxRetries, 0)
	}
	return r
}

// CheckSettings refuses the settings no API takes, and returns the set of
// the offered tools' names. The Responses and Messages models send a tool
// choice only with tools (a choice of "auto" or "none" without any means
// nothing, and Anthropic refuses one).
func CheckSettings(s model.Settings) (map[string]bool, error) {
	names := make(map[string]bool, len(s.Tools))
	for i, t := range s.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d without name", i)
		}
		names[t.Name] = true
	}
	switch s.ToolChoice {
	case "", "auto", "none":
	case "required":
		if len(s.Tools) == 0 {
			return nil, errors.New(`tool choice "required" with no tools offered`)
		}
	default:
		if !names[s.ToolChoice] {
			return nil, fmt.Errorf("tool choice %q names no offered tool", s.ToolChoice)
		}
	}
	if s.MaxTokens < 0 {
		return nil, fmt.Errorf("negative max tokens %d", s.MaxTokens)
	}
	if s.Timeout < 0 {
		return nil, fmt.Errorf("negative timeout %s", s.Timeout)
	}
	return names, nil
}

// ToolSchema returns a tool's parameters as a JSON object schema (an empty
// object schema for a tool without arguments).
func ToolSchema(t model.Tool) (map[string]any, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(t.Parameters))
	dec.UseNumber()
	var schema map[string]any
	if err := dec.Decode(&schema); err != nil || schema == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("tool %q: parameters must be a JSON object schema: %w", t.Name, err)
	}
	return schema, nil
}

// ToolReturnText is what a tool return sends as its output: its text, else
// its JSON, else its contents joined by newlines.
func ToolReturnText(p processor.ToolReturn) string {
	switch {
	case p.Content != "":
		return p.Content
	case len(p.JSON) > 0:
		return string(p.JSON)
	default:
		return strings.Join(p.Contents, "\n")
	}
}

// UserText returns the text of a user prompt, and an error naming the
// first part that is not text: the models of the Responses and Messages
// APIs send a user's text only.
func UserText(p processor.UserPrompt) (string, error) {
	if len(p.Contents) == 0 {
		return p.Content, nil
	}
	var b strings.Builder
	for i, c := range p.Contents {
		if c.Type != "text" {
			return "", fmt.Errorf("user content part %d has type %q: only text is sent", i, c.Type)
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// Respond completes a model's response msg to messages: it sets
// Usage.PromptMessages to len(messages), and logs the request at debug
// level.
func Respond(logger *zap.Logger, api, name string, messages []processor.Message, s model.Settings, msg processor.Message, start time.Time) processor.Message {
	meta := msg.Info()
	meta.Usage.PromptMessages = len(messages)
	msg = msg.WithMeta(meta)
	logger.Debug("model request",
		zap.String("api", api),
		zap.String("model", name),
		zap.String("response_model", meta.ModelName),
		zap.Int("messages", len(messages)),
		zap.Int("tools", len(s.Tools)),
		zap.Bool("stream", s.OnText != nil),
		zap.Int64("input_tokens", meta.Usage.InputTokens),
		zap.Int64("cached_input_tokens", meta.Usage.CachedInputTokens),
		zap.Int64("output_tokens", meta.Usage.OutputTokens),
		zap.String("finish_reason", meta.FinishReason),
		zap.Duration("elapsed", time.Since(start)),
	)
	return msg
}
