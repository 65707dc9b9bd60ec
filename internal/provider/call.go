package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/abridge-go/abridge/model"
)

// Call is one request of a model: its deadline and what the response
// brought, shared by the models of the three APIs.
type Call struct {
	// Ctx is the caller's context, CallCtx the one Settings.Timeout
	// bounds.
	Ctx, CallCtx context.Context
	// Timeout is Settings.Timeout.
	Timeout time.Duration
	// Res is the response, once the SDK has put it there.
	Res *http.Response
}

// NewCall starts a call bounded by s.Timeout; cancel ends it.
func NewCall(ctx context.Context, s model.Settings) (c *Call, cancel context.CancelFunc) {
	c = &Call{Ctx: ctx, CallCtx: ctx, Timeout: s.Timeout}
	cancel = func() {}
	if s.Timeout > 0 {
		c.CallCtx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	return c, cancel
}

// Status is the response's HTTP status, 0 without one.
func (c *Call) Status() int {
	if c.Res == nil {
		return 0
	}
	return c.Res.StatusCode
}

// Stalled is the error of a stream the idle timeout ended.
func Stalled(status int, idle time.Duration, events int) error {
	return &model.Error{StatusCode: status,
		Message: fmt.Sprintf("response cut off: the stream sent nothing for %s (after %d events)", idle, events),
		Err:     fmt.Errorf("%w: %w", model.ErrIncompleteResponse, context.DeadlineExceeded)}
}

// Unfinished is the error of a stream that ended before its last event:
// cut off after some events, empty, or not an event stream at all.
func Unfinished(c *Call, w *StreamWatch, events int, last string) error {
	status := c.Status()
	switch {
	case events > 0:
		return &model.Error{StatusCode: status,
			Message: fmt.Sprintf("response cut off: the stream ended after %d events without %s", events, last),
			Err:     model.ErrIncompleteResponse}
	case len(w.head) == 0:
		return &model.Error{StatusCode: status, Message: "malformed response: the body of the stream is empty", Err: model.ErrMalformedResponse}
	default:
		ctype := ""
		if c.Res != nil {
			ctype = c.Res.Header.Get("Content-Type")
		}
		return &model.Error{StatusCode: status,
			Message: fmt.Sprintf("malformed response: not an event stream (Content-Type %q), it begins %q", ctype, Snippet(w.head)),
			Err:     model.ErrMalformedResponse}
	}
}

// CallError builds the Error for a failed call whose error is not the
// API's own error answer (the provider checks for that first): the end of
// ctx or of the timeout, an error event of a stream (when stream, given,
// reads one from err into e and reports it did), an error status, a body
// that is malformed JSON or not JSON at all.
func CallError(c *Call, err error, stream func(e *model.Error, err error) bool) *model.Error {
	status, ctype := 0, ""
	if c.Res != nil {
		status, ctype = c.Res.StatusCode, c.Res.Header.Get("Content-Type")
	}
	e := &model.Error{StatusCode: status, Err: err}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case c.Ctx.Err() != nil:
		e.Message = "request interrupted: " + c.Ctx.Err().Error()
		e.Err = withCause(c.Ctx.Err(), err)
	case c.CallCtx.Err() != nil:
		e.Message = fmt.Sprintf("request timed out after %s", c.Timeout)
		e.Err = withCause(c.CallCtx.Err(), err)
	case stream != nil && stream(e, err):
	case status >= 400:
		e.Message = http.StatusText(status) + ": " + ErrorBodyMessage(c.Res, true)
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.ErrUnexpectedEOF):
		e.Message = "malformed JSON in response: " + err.Error()
		e.Err = fmt.Errorf("%w: %w", model.ErrMalformedResponse, err)
	case status >= 200 && status < 300 && !isJSONOrStream(ctype):
		e.Message = fmt.Sprintf("response has Content-Type %q, not JSON", ctype)
		e.Err = fmt.Errorf("%w: %w", model.ErrMalformedResponse, err)
	}
	return e
}

// ErrorBodyMessage extracts what an error response says when it is not
// the usual {"error": {"message": ...}}: a string "error", "message" or
// "detail", or else, with snippet, the start of the body ("" without).
func ErrorBodyMessage(res *http.Response, snippet bool) string {
	unreadable := ""
	if snippet {
		unreadable = "unreadable error body"
	}
	if res == nil || res.Body == nil {
		return unreadable
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return unreadable
	}
	res.Body = io.NopCloser(bytes.NewReader(data))
	var body map[string]any
	if json.Unmarshal(data, &body) == nil {
		for _, k := range []string{"error", "message", "detail"} {
			if v, ok := body[k].(string); ok && v != "" {
				return v
			}
		}
	}
	if !snippet {
		return ""
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	if len(text) > 200 {
		text = strings.ToValidUTF8(text[:200], "") + "…"
	}
	if text == "" {
		return "empty error body"
	}
	return text
}

// isJSONOrStream reports whether a Content-Type is JSON or an event
// stream.
func isJSONOrStream(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "text/event-stream"
}

// withCause returns err when it already matches ctxErr, and otherwise an
// error matching both that reads "<ctxErr>: <err>".
func withCause(ctxErr, err error) error {
	if errors.Is(err, ctxErr) {
		return err
	}
	return fmt.Errorf("%w: %w", ctxErr, err)
}
