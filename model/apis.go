package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/redact"
	"github.com/abridge-go/abridge/processor"
)

// What the models of the three APIs share: their options resolved, the
// secrets their errors never show, and the checks of Settings made before
// any call.

// resolved is the options of a model with their defaults applied.
type resolved struct {
	options
	logger  *zap.Logger
	idle    time.Duration
	retries int
}

// resolve applies opts over the defaults, the model name being name.
func resolve(name string, opts []Option) resolved {
	o := options{model: name}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	r := resolved{options: o, logger: o.logger, idle: DefaultStreamIdleTimeout, retries: defaultRetries}
	if r.logger == nil {
		r.logger = zap.NewNop()
	}
	if o.streamIdle != nil {
		r.idle = max(*o.streamIdle, 0)
	}
	if o.maxRetries != nil {
		r.retries = max(*o.maxRetries, 0)
	}
	return r
}

// secretsOf returns what an error must never show of keys: each key long
// enough to be a secret, in the forms a message may quote it (see
// redact.Forms).
func secretsOf(keys ...string) []string {
	return redact.Forms(keys...)
}

// checkSettings refuses the settings no API takes, and returns the set of
// the offered tools' names. The Responses and Messages models send a tool
// choice only with tools (a choice of "auto" or "none" without any means
// nothing, and Anthropic refuses one).
func checkSettings(s Settings) (map[string]bool, error) {
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

// toolSchema returns a tool's parameters as a JSON object schema (an empty
// object schema for a tool without arguments).
func toolSchema(t Tool) (map[string]any, error) {
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

// toolReturnText is what a tool return sends as its output: its text, else
// its JSON, else its contents joined by newlines.
func toolReturnText(p processor.ToolReturn) string {
	switch {
	case p.Content != "":
		return p.Content
	case len(p.JSON) > 0:
		return string(p.JSON)
	default:
		return strings.Join(p.Contents, "\n")
	}
}

// userText returns the text of a user prompt, and an error naming the
// first part that is not text: the models of the Responses and Messages
// APIs send a user's text only.
func userText(p processor.UserPrompt) (string, error) {
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

// call is one request of a model: its deadline and what the response
// brought, shared by the models of the three APIs.
type call struct {
	ctx, callCtx context.Context
	timeout      time.Duration
	res          *http.Response
}

// newCall starts a call bounded by s.Timeout; cancel ends it.
func newCall(ctx context.Context, s Settings) (c *call, cancel context.CancelFunc) {
	c = &call{ctx: ctx, callCtx: ctx, timeout: s.Timeout}
	cancel = func() {}
	if s.Timeout > 0 {
		c.callCtx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	return c, cancel
}

// status is the response's HTTP status, 0 without one.
func (c *call) status() int {
	if c.res == nil {
		return 0
	}
	return c.res.StatusCode
}

// stalled is the error of a stream the idle timeout ended.
func stalled(status int, idle time.Duration, events int) error {
	return &Error{StatusCode: status,
		Message: fmt.Sprintf("response cut off: the stream sent nothing for %s (after %d events)", idle, events),
		Err:     fmt.Errorf("%w: %w", ErrIncompleteResponse, context.DeadlineExceeded)}
}

// unfinished is the error of a stream that ended before its last event:
// cut off after some events, empty, or not an event stream at all.
func unfinished(c *call, w *streamWatch, events int, last string) error {
	status := c.status()
	switch {
	case events > 0:
		return &Error{StatusCode: status,
			Message: fmt.Sprintf("response cut off: the stream ended after %d events without %s", events, last),
			Err:     ErrIncompleteResponse}
	case len(w.head) == 0:
		return &Error{StatusCode: status, Message: "malformed response: the body of the stream is empty", Err: ErrMalformedResponse}
	default:
		ctype := ""
		if c.res != nil {
			ctype = c.res.Header.Get("Content-Type")
		}
		return &Error{StatusCode: status,
			Message: fmt.Sprintf("malformed response: not an event stream (Content-Type %q), it begins %q", ctype, snippet(w.head)),
			Err:     ErrMalformedResponse}
	}
}

// watch returns a context for one streamed attempt that the idle timeout
// cancels, the streamWatch that restarts it, and the function that stops
// both.
func watch(ctx context.Context, idle time.Duration) (context.Context, *streamWatch, func()) {
	attemptCtx, cancel := context.WithCancelCause(ctx)
	w := &streamWatch{idle: idle}
	if idle > 0 {
		w.timer = time.AfterFunc(idle, func() { cancel(errStalled) })
	}
	return attemptCtx, w, func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		cancel(nil)
	}
}

// logRequest logs a successful request at debug level.
func logRequest(logger *zap.Logger, api, name string, messages []processor.Message, s Settings, meta processor.Meta, start time.Time) {
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
}
