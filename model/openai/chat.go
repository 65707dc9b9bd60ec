package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/provider"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Chat is a [model.Model] that calls an OpenAI Chat Completions endpoint
// (or a compatible one) through openai-go v3. It is safe for concurrent
// use.
//
// The client reads OPENAI_API_KEY and OPENAI_BASE_URL (and the
// organization and project ids) from the environment itself; the options
// given to [New] win over them.
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
type Chat struct {
	client  sdk.Client
	model   string
	logger  *zap.Logger
	idle    time.Duration // the stream idle timeout; 0 means none
	retries int           // how often a cut-off stream is tried again
	secrets provider.Secrets
}

var _ model.Model = (*Chat)(nil)

// New returns a Chat Completions model configured by opts.
func New(opts ...Option) *Chat {
	client, r, key := newClient(opts)
	return &Chat{client: client, model: r.Model, logger: r.Logger,
		idle: r.Idle, retries: r.Retries, secrets: provider.SecretsOf(key)}
}

// Name returns the model name sent with every request.
func (m *Chat) Name() string { return m.model }

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
// messages are sent as [ToParams] converts them, except that a response
// with tool calls also sends its Thinking parts, joined by newlines, as
// reasoning_content.
//
// With Settings.OnText set the request streams (usage included) and OnText
// receives the text as it arrives; the reasoning of the deltas is
// concatenated, and the returned message is the same. A stream counts as
// complete once its first choice has a finish_reason or the server has sent
// [DONE]; one that ends before either, or that stays silent longer than the
// stream idle timeout (see [WithStreamIdleTimeout]), is an error matching
// [model.ErrIncompleteResponse], never a response: it is tried again (see
// [WithMaxRetries]) while none of its text has reached OnText.
// Settings.Timeout bounds the whole call, retries included.
//
// Every failure of the call is an [*model.Error]: errors.Is(err,
// [model.ErrContextOverflow]) holds when the prompt was too long,
// [model.ErrIncompleteResponse] when the response was cut off,
// [model.ErrMalformedResponse] when the answer was not a Chat Completions
// response, and errors.Is(err, context.DeadlineExceeded) or
// context.Canceled when the timeout expired or ctx ended. Settings that
// cannot be sent and messages that cannot be converted (see [ToParams]) are
// reported before any call.
func (m *Chat) Request(ctx context.Context, messages []processor.Message, s model.Settings) (processor.Message, error) {
	params, err := m.params(messages, s)
	if err != nil {
		return processor.Message{}, fmt.Errorf("openai request: %w", err)
	}
	c, cancel := provider.NewCall(ctx, s)
	defer cancel()
	start := time.Now()
	var completion *sdk.ChatCompletion
	var reasoning string
	if s.OnText != nil {
		completion, reasoning, err = m.stream(c.CallCtx, params, s.OnText, &c.Res)
	} else {
		completion, err = m.client.Chat.Completions.New(c.CallCtx, params, option.WithResponseInto(&c.Res))
	}
	if err != nil {
		return processor.Message{}, m.callError(c, err)
	}
	msg, err := m.responseMessage(completion, reasoning, c.Status())
	if err != nil {
		return processor.Message{}, m.redactError(err)
	}
	return provider.Respond(m.logger, "chat", m.model, messages, s, msg, start), nil
}

// params builds the request body.
func (m *Chat) params(messages []processor.Message, s model.Settings) (sdk.ChatCompletionNewParams, error) {
	var p sdk.ChatCompletionNewParams
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
		def := sdk.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		if t.Strict {
			def.Strict = sdk.Bool(true)
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
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	switch s.ToolChoice {
	case "":
	case "auto", "none", "required":
		p.ToolChoice.OfAuto = sdk.String(s.ToolChoice)
	default:
		if !names[s.ToolChoice] {
			return p, fmt.Errorf("tool choice %q names no offered tool", s.ToolChoice)
		}
		p.ToolChoice = sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: s.ToolChoice})
	}
	if s.Temperature != nil {
		p.Temperature = sdk.Float(*s.Temperature)
	}
	switch {
	case s.MaxTokens < 0:
		return p, fmt.Errorf("negative max tokens %d", s.MaxTokens)
	case s.MaxTokens > 0:
		p.MaxCompletionTokens = sdk.Int(int64(s.MaxTokens))
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
func (m *Chat) stream(ctx context.Context, params sdk.ChatCompletionNewParams, onText func(string), res **http.Response) (*sdk.ChatCompletion, string, error) {
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}
	for attempt := 0; ; attempt++ {
		c, reasoning, delivered, err := m.streamOnce(ctx, params, onText, res)
		if err == nil || delivered || attempt >= m.retries || ctx.Err() != nil || !errors.Is(err, model.ErrIncompleteResponse) {
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

// streamOnce makes one streaming request. delivered reports whether any
// text reached onText.
func (m *Chat) streamOnce(ctx context.Context, params sdk.ChatCompletionNewParams, onText func(string), res **http.Response) (_ *sdk.ChatCompletion, _ string, delivered bool, _ error) {
	attemptCtx, w, stop := provider.Watch(ctx, m.idle)
	defer stop()
	st := m.client.Chat.Completions.NewStreaming(attemptCtx, params, option.WithResponseInto(res), option.WithMiddleware(w.Middleware))
	defer st.Close()
	acc := &sdk.ChatCompletionAccumulator{}
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
		if ctx.Err() == nil && errors.Is(context.Cause(attemptCtx), provider.ErrStalled) {
			return nil, "", delivered, &model.Error{StatusCode: status,
				Message: fmt.Sprintf("response cut off: the stream sent nothing for %s (after %d chunks)", m.idle, chunks),
				Err:     fmt.Errorf("%w: %w", model.ErrIncompleteResponse, context.DeadlineExceeded)}
		}
		return nil, "", delivered, err
	}
	if !finished && !w.Done() {
		switch {
		case chunks > 0:
			return nil, "", delivered, &model.Error{StatusCode: status,
				Message: fmt.Sprintf("response cut off: the stream ended after %d chunks without a finish_reason or [DONE]", chunks),
				Err:     model.ErrIncompleteResponse}
		case len(w.Head()) == 0:
			return nil, "", delivered, &model.Error{StatusCode: status,
				Message: "malformed response: the body of the stream is empty", Err: model.ErrMalformedResponse}
		default:
			ctype := ""
			if *res != nil {
				ctype = (*res).Header.Get("Content-Type")
			}
			return nil, "", delivered, &model.Error{StatusCode: status,
				Message: fmt.Sprintf("malformed response: not an event stream (Content-Type %q), it begins %q", ctype, provider.Snippet(w.Head())),
				Err:     model.ErrMalformedResponse}
		}
	}
	return &acc.ChatCompletion, reasoning.String(), delivered, nil
}

// responseMessage converts the first choice of a completion. reasoning is
// what a stream's deltas carried; when it is empty, the reasoning is read
// from the message's unknown fields.
func (m *Chat) responseMessage(c *sdk.ChatCompletion, reasoning string, status int) (processor.Message, error) {
	if c == nil || len(c.Choices) == 0 {
		return processor.Message{}, &model.Error{StatusCode: status, Message: "response has no choices", Err: model.ErrMalformedResponse}
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
			return processor.Message{}, &model.Error{StatusCode: status, Message: fmt.Sprintf("response tool call %d has unsupported type %q", k, tc.Type), Err: model.ErrMalformedResponse}
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
func (m *Chat) callError(c *provider.Call, err error) error {
	var me *model.Error
	if !errors.As(err, &me) {
		me = callError(c, err)
	}
	return m.redactError(me)
}

// redactError returns err with the API key, and what looks like a key,
// redacted from its text: an *Error's Message, and the text of what it
// wraps.
func (m *Chat) redactError(err error) error {
	return m.secrets.RedactError(err)
}

// redact replaces the model's API key wherever it appears in s, and what
// looks like an API key, whole or masked, so that an error never repeats
// any part of a key.
func (m *Chat) redact(s string) string {
	return m.secrets.Redact(s)
}

// callError builds the Error for a failed call of the OpenAI models:
// openai-go's error answer, an error event of a stream, else as
// [provider.CallError] tells.
func callError(c *provider.Call, err error) *model.Error {
	var ae *sdk.Error
	if errors.As(err, &ae) {
		e := &model.Error{StatusCode: ae.StatusCode, Code: ae.Code, Type: ae.Type, Message: ae.Message, Err: err}
		if e.Message == "" {
			if msg := provider.ErrorBodyMessage(ae.Response, false); msg != "" {
				e.Message = http.StatusText(e.StatusCode) + ": " + msg
			} else {
				e.Message = http.StatusText(e.StatusCode) + " (no error message in the response)"
			}
		}
		return e
	}
	return provider.CallError(c, err, streamError)
}

// streamError reads an error event of an openai-go stream into e, and
// reports whether err was one.
func streamError(e *model.Error, err error) bool {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return false
	}
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
	return true
}
