package model

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/redact"
	"github.com/abridge-go/abridge/processor"
)

// DefaultModel is the model an [OpenAI] uses unless [WithModel] names
// another.
const DefaultModel = "gpt-4.1-mini"

// OpenAI is a [Model] that calls an OpenAI Chat Completions endpoint (or a
// compatible one) through openai-go v3. It is safe for concurrent use.
//
// The client reads OPENAI_API_KEY and OPENAI_BASE_URL (and the
// organization and project ids) from the environment itself; the options
// given to [NewOpenAI] win over them.
//
// It understands two habits of OpenAI-compatible servers: the model's
// reasoning, returned in the non-standard message field reasoning_content
// (DeepSeek, vLLM, SGLang, Qwen) or reasoning (OpenRouter, Ollama), is kept
// as a [processor.Thinking] part of the response, and sent back as
// reasoning_content with a response that called tools (DeepSeek's thinking
// mode refuses a tool loop without it; a response without tool calls keeps
// its reasoning to itself, as servers drop it there anyway); and a tool
// call returned without an id is given one, so that its answer can be
// paired with it.
type OpenAI struct {
	client  openai.Client
	model   string
	logger  *zap.Logger
	idle    time.Duration // the stream idle timeout; 0 means none
	retries int           // how often a cut-off stream is tried again
	secrets []string      // values errors never show: the API key
}

var _ Model = (*OpenAI)(nil)

// Option configures an [OpenAI].
type Option interface {
	apply(*options)
}

type options struct {
	model          string
	baseURL        string
	apiKey         string
	httpClient     *http.Client
	maxRetries     *int
	streamIdle     *time.Duration
	logger         *zap.Logger
	requestOptions []option.RequestOption
	// anthropicOptions are given to the Anthropic client only.
	anthropicOptions []aoption.RequestOption
	// noEnv: the client reads no key nor base URL from the environment.
	noEnv bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithModel sets the model name sent with every request. The default is
// [DefaultModel]; an empty name keeps the default.
func WithModel(name string) Option {
	return optionFunc(func(o *options) {
		if name != "" {
			o.model = name
		}
	})
}

// WithBaseURL sets the endpoint's base URL; requests go to
// <url>/chat/completions. The default is OPENAI_BASE_URL, else OpenAI's.
func WithBaseURL(url string) Option {
	return optionFunc(func(o *options) { o.baseURL = url })
}

// WithAPIKey sets the API key. The default is OPENAI_API_KEY. The key is
// sent as a bearer token and never logged nor included in errors: wherever
// an error's text holds it (a provider that echoes the key it was sent),
// whatever its shape, it reads "[redacted key]". A key shorter than 8
// characters ("EMPTY", "ollama") is not taken for a secret.
func WithAPIKey(key string) Option {
	return optionFunc(func(o *options) { o.apiKey = key })
}

// WithHTTPClient sets the HTTP client requests are made with. The default
// is http.DefaultClient.
func WithHTTPClient(c *http.Client) Option {
	return optionFunc(func(o *options) { o.httpClient = c })
}

// WithMaxRetries sets how many times a failed request (a connection error,
// 408, 409, 429 or 5xx) is retried, and a stream cut off before any of its
// text reached Settings.OnText (see [ErrIncompleteResponse]). The default
// is openai-go's, 2. Settings.Timeout bounds the request with all its
// retries.
func WithMaxRetries(n int) Option {
	return optionFunc(func(o *options) { o.maxRetries = &n })
}

// DefaultStreamIdleTimeout is how long a streamed response may go without
// the server sending anything unless [WithStreamIdleTimeout] says
// otherwise.
const DefaultStreamIdleTimeout = 2 * time.Minute

// WithStreamIdleTimeout bounds how long a streamed response (a request
// with Settings.OnText) may go without the server sending a byte, from the
// moment the request is sent: the headers, each chunk and each keep-alive
// comment restart the clock. A stream that stays silent longer fails with
// an error matching [ErrIncompleteResponse] and context.DeadlineExceeded,
// and is tried again as a cut-off stream is (see [WithMaxRetries]). The
// default is [DefaultStreamIdleTimeout]; d <= 0 means no idle timeout
// (Settings.Timeout and ctx still bound the request).
func WithStreamIdleTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.streamIdle = &d })
}

// WithLogger sets the logger; nil (the default) means zap.NewNop(). A
// successful request is logged at debug level with its model, message
// count, usage and duration, and so is each id generated for a tool call
// the server returned without one; failures are returned, not logged.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// WithAnthropicRequestOptions adds anthropic-sdk-go request options
// (headers, middleware, ...) to an [Anthropic] model, applied after the
// options above. The OpenAI models ignore them.
func WithAnthropicRequestOptions(opts ...aoption.RequestOption) Option {
	return optionFunc(func(o *options) { o.anthropicOptions = append(o.anthropicOptions, opts...) })
}

// WithoutEnvironment makes the model read no API key and no base URL from
// the environment (OPENAI_API_KEY, OPENAI_BASE_URL, the organization and
// project; ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BASE_URL):
// it sends the key [WithAPIKey] gives, else none, to the base URL
// [WithBaseURL] gives, else the provider's. A proxy whose HTTP client adds
// its client's credential builds its models so.
func WithoutEnvironment() Option {
	return optionFunc(func(o *options) { o.noEnv = true })
}

// WithRequestOptions adds openai-go request options (headers, middleware,
// ...), applied after the options above.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return optionFunc(func(o *options) { o.requestOptions = append(o.requestOptions, opts...) })
}

// NewOpenAI returns an OpenAI configured by opts.
func NewOpenAI(opts ...Option) *OpenAI {
	r := resolve(DefaultModel, opts)
	client, key := newOpenAIClient(r)
	return &OpenAI{client: client, model: r.model, logger: r.logger,
		idle: r.idle, retries: r.retries, secrets: secretsOf(key)}
}

// defaultRetries is openai-go's default number of retries.
const defaultRetries = 2

// Name returns the model name sent with every request.
func (m *OpenAI) Name() string { return m.model }

// Request sends messages to the Chat Completions endpoint and returns the
// first choice as a [processor.Response]: a [processor.Thinking] part when
// the server returned reasoning (a non-empty string in reasoning_content,
// else in reasoning; a null or non-string value is ignored), a
// [processor.Text] part when the content is not empty, a
// [processor.ToolCall] part per tool call, in that order, the refusal in
// Refusal, the provider's model name, finish reason and usage (InputTokens
// = prompt_tokens, CachedInputTokens = cached prompt tokens, OutputTokens =
// completion_tokens, PromptMessages = len(messages)). A tool call without
// an id gets a fresh one, "call_" and 24 random hex digits.
//
// messages are sent as [ToOpenAI] converts them, except that a response
// with tool calls also sends its Thinking parts, joined by newlines, as
// reasoning_content.
//
// With Settings.OnText set the request streams (usage included) and OnText
// receives the text as it arrives; the reasoning of the deltas is
// concatenated, and the returned message is the same. A stream counts as
// complete once its first choice has a finish_reason or the server has sent
// [DONE]; one that ends before either, or that stays silent longer than the
// stream idle timeout (see [WithStreamIdleTimeout]), is an error matching
// [ErrIncompleteResponse], never a response: it is tried again (see
// [WithMaxRetries]) while none of its text has reached OnText.
// Settings.Timeout bounds the whole call, retries included.
//
// Every failure of the call is an [*Error]: errors.Is(err,
// [ErrContextOverflow]) holds when the prompt was too long,
// [ErrIncompleteResponse] when the response was cut off,
// [ErrMalformedResponse] when the answer was not a Chat Completions
// response, and errors.Is(err, context.DeadlineExceeded) or
// context.Canceled when the timeout expired or ctx ended. Settings that
// cannot be sent and messages that cannot be converted (see [ToOpenAI]) are
// reported before any call.
func (m *OpenAI) Request(ctx context.Context, messages []processor.Message, s Settings) (processor.Message, error) {
	params, err := m.params(messages, s)
	if err != nil {
		return processor.Message{}, fmt.Errorf("openai request: %w", err)
	}
	callCtx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	start := time.Now()
	var res *http.Response
	var completion *openai.ChatCompletion
	var reasoning string
	if s.OnText != nil {
		completion, reasoning, err = m.stream(callCtx, params, s.OnText, &res)
	} else {
		completion, err = m.client.Chat.Completions.New(callCtx, params, option.WithResponseInto(&res))
	}
	status := 0
	if res != nil {
		status = res.StatusCode
	}
	if err != nil {
		return processor.Message{}, m.callError(ctx, callCtx, s.Timeout, res, err)
	}
	msg, err := m.responseMessage(completion, reasoning, status)
	if err != nil {
		return processor.Message{}, m.redactError(err)
	}
	meta := msg.Info()
	meta.Usage.PromptMessages = len(messages)
	msg = msg.WithMeta(meta)
	logRequest(m.logger, "chat", m.model, messages, s, meta, start)
	return msg, nil
}

// params builds the request body.
func (m *OpenAI) params(messages []processor.Message, s Settings) (openai.ChatCompletionNewParams, error) {
	var p openai.ChatCompletionNewParams
	msgs, err := toOpenAI(messages, true)
	if err != nil {
		return p, err
	}
	p.Model = m.model
	p.Messages = msgs
	names := make(map[string]bool, len(s.Tools))
	for i, t := range s.Tools {
		if t.Name == "" {
			return p, fmt.Errorf("tool %d without name", i)
		}
		names[t.Name] = true
		def := openai.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		if t.Strict {
			def.Strict = openai.Bool(true)
		}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(t.Parameters))
			dec.UseNumber()
			var schema map[string]any
			if err := dec.Decode(&schema); err != nil {
				return p, fmt.Errorf("tool %q: parameters must be a JSON object schema: %w", t.Name, err)
			}
			def.Parameters = schema
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	switch s.ToolChoice {
	case "":
	case "auto", "none", "required":
		p.ToolChoice.OfAuto = openai.String(s.ToolChoice)
	default:
		if !names[s.ToolChoice] {
			return p, fmt.Errorf("tool choice %q names no offered tool", s.ToolChoice)
		}
		p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: s.ToolChoice})
	}
	if s.Temperature != nil {
		p.Temperature = openai.Float(*s.Temperature)
	}
	switch {
	case s.MaxTokens < 0:
		return p, fmt.Errorf("negative max tokens %d", s.MaxTokens)
	case s.MaxTokens > 0:
		p.MaxCompletionTokens = openai.Int(int64(s.MaxTokens))
	}
	if s.Timeout < 0 {
		return p, fmt.Errorf("negative timeout %s", s.Timeout)
	}
	return p, nil
}

// stream makes a streaming request and accumulates its chunks. It also
// returns the reasoning of the first choice's deltas, concatenated, which
// the accumulator does not keep. A stream cut off before any text reached
// onText is tried again, up to m.retries times.
func (m *OpenAI) stream(ctx context.Context, params openai.ChatCompletionNewParams, onText func(string), res **http.Response) (*openai.ChatCompletion, string, error) {
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	for attempt := 0; ; attempt++ {
		c, reasoning, delivered, err := m.streamOnce(ctx, params, onText, res)
		if err == nil || delivered || attempt >= m.retries || ctx.Err() != nil || !errors.Is(err, ErrIncompleteResponse) {
			return c, reasoning, err
		}
		// Nothing of it was shown: the request can be made again.
		m.logger.Debug("stream cut off before its text: retrying", zap.Int("retry", attempt+1), zap.Error(m.redactError(err)))
		t := time.NewTimer(streamRetryDelay << attempt)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, "", ctx.Err()
		case <-t.C:
		}
	}
}

// streamRetryDelay is the wait before the first retry of a cut-off
// stream; it doubles with each retry.
const streamRetryDelay = 250 * time.Millisecond

// errStalled is the cause of a stream attempt the idle timeout ended.
var errStalled = errors.New("stream idle timeout")

// streamOnce makes one streaming request. delivered reports whether any
// text reached onText.
func (m *OpenAI) streamOnce(ctx context.Context, params openai.ChatCompletionNewParams, onText func(string), res **http.Response) (_ *openai.ChatCompletion, _ string, delivered bool, _ error) {
	attemptCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := &streamWatch{idle: m.idle}
	if m.idle > 0 {
		w.timer = time.AfterFunc(m.idle, func() { cancel(errStalled) })
		defer w.timer.Stop()
	}
	st := m.client.Chat.Completions.NewStreaming(attemptCtx, params, option.WithResponseInto(res), option.WithMiddleware(w.middleware))
	defer st.Close()
	acc := &openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	chunks, finished := 0, false
	for st.Next() {
		chunk := st.Current()
		chunks++
		if !acc.AddChunk(chunk) {
			return nil, "", delivered, errors.New("stream chunk could not be accumulated (inconsistent id or index)")
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			finished = finished || c.FinishReason != ""
			reasoning.WriteString(reasoningText(c.Delta.JSON.ExtraFields))
			if c.Delta.Content != "" {
				delivered = true
				onText(c.Delta.Content)
			}
		}
	}
	status := 0
	if *res != nil {
		status = (*res).StatusCode
	}
	if err := st.Err(); err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(attemptCtx), errStalled) {
			return nil, "", delivered, &Error{StatusCode: status,
				Message: fmt.Sprintf("response cut off: the stream sent nothing for %s (after %d chunks)", m.idle, chunks),
				Err:     fmt.Errorf("%w: %w", ErrIncompleteResponse, context.DeadlineExceeded)}
		}
		return nil, "", delivered, err
	}
	if !finished && !w.done {
		switch {
		case chunks > 0:
			return nil, "", delivered, &Error{StatusCode: status,
				Message: fmt.Sprintf("response cut off: the stream ended after %d chunks without a finish_reason or [DONE]", chunks),
				Err:     ErrIncompleteResponse}
		case len(w.head) == 0:
			return nil, "", delivered, &Error{StatusCode: status,
				Message: "malformed response: the body of the stream is empty", Err: ErrMalformedResponse}
		default:
			ctype := ""
			if *res != nil {
				ctype = (*res).Header.Get("Content-Type")
			}
			return nil, "", delivered, &Error{StatusCode: status,
				Message: fmt.Sprintf("malformed response: not an event stream (Content-Type %q), it begins %q", ctype, snippet(w.head)),
				Err:     ErrMalformedResponse}
		}
	}
	return &acc.ChatCompletion, reasoning.String(), delivered, nil
}

// streamWatch watches the body of a streamed response: it restarts the
// idle timer whenever bytes arrive, keeps the first bytes for error
// messages, and notes a [DONE] event. Its methods run on the goroutine
// reading the stream.
type streamWatch struct {
	idle  time.Duration
	timer *time.Timer // nil without an idle timeout
	head  []byte      // the body's first bytes (none: nothing came)
	line  []byte      // the start of the current line
	done  bool        // a "data: [DONE]" line arrived
}

// streamHeadLen bounds what a streamWatch keeps of a body.
const streamHeadLen = 120

// middleware watches the response of each attempt openai-go makes.
func (w *streamWatch) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	w.touch()
	if res != nil && res.Body != nil {
		res.Body = &watchedBody{ReadCloser: res.Body, w: w}
	}
	return res, err
}

func (w *streamWatch) touch() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

// saw takes note of bytes of the body.
func (w *streamWatch) saw(p []byte) {
	w.touch()
	if n := streamHeadLen - len(w.head); n > 0 {
		w.head = append(w.head, p[:min(n, len(p))]...)
	}
	for _, b := range p {
		if b == '\n' || b == '\r' {
			// As the event stream decoder reads it: "data:", an
			// optional space, then data starting with [DONE].
			if rest, ok := bytes.CutPrefix(w.line, []byte("data:")); ok {
				rest = bytes.TrimPrefix(rest, []byte(" "))
				w.done = w.done || bytes.HasPrefix(rest, []byte("[DONE]"))
			}
			w.line = w.line[:0]
			continue
		}
		if len(w.line) < 16 {
			w.line = append(w.line, b)
		}
	}
}

// watchedBody is a response body whose reads a streamWatch sees.
type watchedBody struct {
	io.ReadCloser
	w *streamWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.saw(p[:n])
	}
	return n, err
}

// snippet returns the start of a body as one line of valid UTF-8.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if len(b) >= streamHeadLen {
		s += "…"
	}
	return s
}

// responseMessage converts the first choice of a completion. reasoning is
// what a stream's deltas carried; when it is empty, the reasoning is read
// from the message's unknown fields.
func (m *OpenAI) responseMessage(c *openai.ChatCompletion, reasoning string, status int) (processor.Message, error) {
	if c == nil || len(c.Choices) == 0 {
		return processor.Message{}, &Error{StatusCode: status, Message: "response has no choices", Err: ErrMalformedResponse}
	}
	ch := c.Choices[0]
	msg := ch.Message
	out := processor.Message{Kind: processor.Response}.WithMeta(processor.Meta{
		ModelName:    c.Model,
		FinishReason: ch.FinishReason,
		Refusal:      msg.Refusal,
		Usage: processor.Usage{
			InputTokens:       c.Usage.PromptTokens,
			CachedInputTokens: c.Usage.PromptTokensDetails.CachedTokens,
			OutputTokens:      c.Usage.CompletionTokens,
		},
	})
	if reasoning == "" {
		reasoning = reasoningText(msg.JSON.ExtraFields)
	}
	if reasoning != "" {
		out.Parts = append(out.Parts, processor.Thinking{Content: reasoning})
	}
	if msg.Content != "" {
		out.Parts = append(out.Parts, processor.Text{Content: msg.Content})
	}
	for k, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return processor.Message{}, &Error{StatusCode: status, Message: fmt.Sprintf("response tool call %d has unsupported type %q", k, tc.Type), Err: ErrMalformedResponse}
		}
		id := tc.ID
		if id == "" {
			id = newCallID()
			m.logger.Debug("response tool call without id: generated one",
				zap.Int("index", k), zap.String("tool", tc.Function.Name), zap.String("id", id))
		}
		out.Parts = append(out.Parts, processor.ToolCall{ToolCallID: id, ToolName: tc.Function.Name, Args: tc.Function.Arguments})
	}
	return out, nil
}

// reasoningContentKey is the message field that carries reasoning in the
// responses of DeepSeek, vLLM, SGLang and Qwen servers, and in the
// histories transcript.Save writes.
const reasoningContentKey = "reasoning_content"

// reasoningKeys are the non-standard fields of a response message (and of
// a stream delta) that carry the model's reasoning, in the order they are
// read: OpenRouter and Ollama use "reasoning". Servers that fill both (vLLM
// in transition) repeat the same text, so only one is taken.
var reasoningKeys = [...]string{reasoningContentKey, "reasoning"}

// reasoningText returns the first non-empty JSON string among the
// reasoning fields of a response message's or delta's unknown fields, or
// "" when there is none.
func reasoningText(extra map[string]respjson.Field) string {
	for _, k := range reasoningKeys {
		// The decoder keeps an unknown field's raw JSON (its Valid is
		// always false).
		if s := jsonString([]byte(extra[k].Raw())); s != "" {
			return s
		}
	}
	return ""
}

// jsonString returns the value of raw when it is a JSON string, and ""
// for anything else (null, a number, an object, malformed JSON).
func jsonString(raw []byte) string {
	var s string
	// Most stream deltas have no such field: no decoding for them.
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// newCallID returns a fresh tool call id, "call_" and 24 random lowercase
// hex digits, for a call that a server returned without one.
func newCallID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return "call_" + hex.EncodeToString(b[:])
}

// callError turns a failed call into an *Error that keeps err (and the
// context's error) matchable, with the API key and anything that looks
// like one redacted.
func (m *OpenAI) callError(ctx, callCtx context.Context, timeout time.Duration, res *http.Response, err error) error {
	var me *Error
	if !errors.As(err, &me) {
		me = providerError(ctx, callCtx, timeout, res, err)
	}
	return m.redactError(me)
}

// redactError returns err with the API key, and what looks like a key,
// redacted from its text: an *Error's Message, and the text of what it
// wraps.
func (m *OpenAI) redactError(err error) error {
	return redactErr(err, m.redact)
}

// redactErr returns err with its text passed through redact: an *Error's
// Message, and the text of what it wraps.
func redactErr(err error, redact func(string) string) error {
	var me *Error
	if !errors.As(err, &me) {
		return &redacted{err: err, redact: redact}
	}
	out := *me
	out.Message = redact(out.Message)
	if out.Err != nil {
		out.Err = &redacted{err: out.Err, redact: redact}
	}
	return &out
}

// redacted is an error whose text passes through redact; it unwraps to the
// error it holds.
type redacted struct {
	err    error
	redact func(string) string
}

func (r *redacted) Error() string { return r.redact(r.err.Error()) }
func (r *redacted) Unwrap() error { return r.err }

// redact replaces the model's API key wherever it appears in s, and what
// looks like an API key, whole or masked, so that an error never repeats
// any part of a key.
func (m *OpenAI) redact(s string) string {
	return redactSecrets(m.secrets, s)
}

// redactSecrets replaces each of secrets wherever it appears in s, and what
// looks like an API key, whole or masked.
func redactSecrets(secrets []string, s string) string {
	return redact.Keys(redact.Replace(s, redact.Mark, secrets...))
}

// providerError builds the Error for a failed call.
func providerError(ctx, callCtx context.Context, timeout time.Duration, res *http.Response, err error) *Error {
	var ae *openai.Error
	if errors.As(err, &ae) {
		e := &Error{StatusCode: ae.StatusCode, Code: ae.Code, Type: ae.Type, Message: ae.Message, Err: err}
		if e.Message == "" {
			if msg := errorBodyMessage(ae.Response, false); msg != "" {
				e.Message = http.StatusText(e.StatusCode) + ": " + msg
			} else {
				e.Message = http.StatusText(e.StatusCode) + " (no error message in the response)"
			}
		}
		return e
	}
	status, ctype := 0, ""
	if res != nil {
		status, ctype = res.StatusCode, res.Header.Get("Content-Type")
	}
	e := &Error{StatusCode: status, Err: err}
	var se *ssestream.StreamError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case ctx.Err() != nil:
		e.Message = "request interrupted: " + ctx.Err().Error()
		e.Err = withCause(ctx.Err(), err)
	case callCtx.Err() != nil:
		e.Message = fmt.Sprintf("request timed out after %s", timeout)
		e.Err = withCause(callCtx.Err(), err)
	case errors.As(err, &se):
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		e.Message = se.Message
		if json.Unmarshal(se.Event.Data, &body) == nil && body.Error.Message != "" {
			e.Message = "stream error: " + body.Error.Message
			e.Type = body.Error.Type
			if body.Error.Code != nil {
				e.Code = fmt.Sprint(body.Error.Code)
			}
		}
	case status >= 400:
		e.Message = http.StatusText(status) + ": " + errorBodyMessage(res, true)
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.ErrUnexpectedEOF):
		e.Message = "malformed JSON in response: " + err.Error()
		e.Err = fmt.Errorf("%w: %w", ErrMalformedResponse, err)
	case status >= 200 && status < 300 && !isJSONOrStream(ctype):
		e.Message = fmt.Sprintf("response has Content-Type %q, not JSON", ctype)
		e.Err = fmt.Errorf("%w: %w", ErrMalformedResponse, err)
	}
	return e
}

// errorBodyMessage extracts what an error response says when it is not
// the usual {"error": {"message": ...}}: a string "error", "message" or
// "detail", or else, with snippet, the start of the body ("" without).
func errorBodyMessage(res *http.Response, snippet bool) string {
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
