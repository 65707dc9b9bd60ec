package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processor"
)

// Defaults of an [Anthropic] model.
const (
	// DefaultAnthropicModel is the model an Anthropic uses unless
	// [WithModel] names another.
	DefaultAnthropicModel = "claude-haiku-4-5"
	// DefaultAnthropicMaxTokens is the max_tokens an Anthropic sends
	// when Settings.MaxTokens is 0: the Messages API requires one.
	DefaultAnthropicMaxTokens = 8192
	// DefaultAnthropicBaseURL is the base URL of an Anthropic when
	// neither [WithBaseURL] nor ANTHROPIC_BASE_URL names one.
	DefaultAnthropicBaseURL = "https://api.anthropic.com/"
)

// Anthropic is a [Model] that calls an Anthropic Messages endpoint
// (<base URL>/v1/messages) through anthropic-sdk-go. It takes the options
// of [NewOpenAI] (anthropic-sdk-go's own through
// [WithAnthropicRequestOptions]) and reports usage and errors as the
// [OpenAI] model does. It is safe for concurrent use.
//
// Without [WithoutEnvironment], it reads ANTHROPIC_BASE_URL, and
// ANTHROPIC_API_KEY (sent as x-api-key) or else ANTHROPIC_AUTH_TOKEN (sent
// as a bearer token) from the environment; the options given win. It
// reads nothing else of the environment (no profile files).
type Anthropic struct {
	client  anthropic.Client
	model   string
	logger  *zap.Logger
	idle    time.Duration
	secrets []string
}

var _ Model = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic configured by opts. [WithBaseURL]
// names the server (requests go to <url>/v1/messages), [WithAPIKey] the
// key sent as x-api-key.
func NewAnthropic(opts ...Option) *Anthropic {
	r := resolve(DefaultAnthropicModel, opts)
	ropts := []aoption.RequestOption{aoption.WithoutEnvironmentDefaults()}
	base, key, token := r.baseURL, r.apiKey, ""
	if !r.noEnv {
		if base == "" {
			base = os.Getenv("ANTHROPIC_BASE_URL")
		}
		if key == "" {
			key = os.Getenv("ANTHROPIC_API_KEY")
		}
		if key == "" {
			token = os.Getenv("ANTHROPIC_AUTH_TOKEN")
		}
	}
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	ropts = append(ropts, aoption.WithBaseURL(base))
	switch {
	case key != "":
		ropts = append(ropts, aoption.WithAPIKey(key))
	case token != "":
		ropts = append(ropts, aoption.WithAuthToken(token))
	}
	if r.httpClient != nil {
		ropts = append(ropts, aoption.WithHTTPClient(r.httpClient))
	}
	if r.maxRetries != nil {
		ropts = append(ropts, aoption.WithMaxRetries(r.retries))
	}
	ropts = append(ropts, r.anthropicOptions...)
	return &Anthropic{client: anthropic.NewClient(ropts...), model: r.model, logger: r.logger, idle: r.idle,
		secrets: secretsOf(key, token)}
}

// Name returns the model name sent with every request.
func (m *Anthropic) Name() string { return m.model }

// messagesAPI names the Anthropic Messages API on the parts that keep its
// raw blocks.
const messagesAPI = "messages"

// Request sends messages to the Messages endpoint and returns the
// response's content as a [processor.Response]: a [processor.Text] part
// per text block, a [processor.ToolCall] per tool_use block, a
// [processor.Thinking] part per thinking or redacted_thinking block (its
// text and signature, the block kept whole in Raw with API "messages"),
// and a [processor.Opaque] part per block of another type, in order; the
// provider's model name, stop_reason as finish reason, and usage:
// InputTokens is input_tokens, cache_read_input_tokens and
// cache_creation_input_tokens summed (Anthropic's input_tokens leaves the
// cache's reads and writes out), CachedInputTokens the cache reads,
// OutputTokens output_tokens, PromptMessages len(messages).
//
// The system prompts go to "system"; the other messages become
// alternating user and assistant messages (consecutive ones of one role
// merged, tool_result blocks first in theirs): user prompts text blocks
// (text only), tool returns tool_result blocks, retry prompts that answer
// a call tool_result blocks with is_error, texts text blocks, tool calls
// tool_use blocks. A Thinking part or an Opaque part read from a Messages
// request is sent as its raw block, a Thinking part from another API with
// a signature as a thinking block, one without none (its reasoning belongs
// to that API's model); an Opaque part from another API is an error.
// max_tokens is Settings.MaxTokens, else [DefaultAnthropicMaxTokens]; a
// tool choice is sent only with tools (Anthropic refuses one without
// them), and "required" with no tools is an error.
//
// With Settings.OnText set the request streams and OnText receives each
// text delta. Errors are as the [OpenAI] model's: an [*Error] (its Type
// Anthropic's error type, e.g. "rate_limit_error"), matching
// [ErrContextOverflow] when Anthropic answers "prompt is too long",
// [ErrIncompleteResponse], [ErrMalformedResponse] or the context's error
// as the case is, with the key redacted.
func (m *Anthropic) Request(ctx context.Context, messages []processor.Message, s Settings) (processor.Message, error) {
	params, err := m.params(messages, s)
	if err != nil {
		return processor.Message{}, fmt.Errorf("anthropic request: %w", err)
	}
	c, cancel := newCall(ctx, s)
	defer cancel()
	start := time.Now()
	var resp *anthropic.Message
	if s.OnText != nil {
		resp, err = m.stream(c, params, s.OnText)
	} else {
		resp, err = m.client.Messages.New(c.callCtx, params, aoption.WithResponseInto(&c.res))
	}
	if err != nil {
		return processor.Message{}, m.redactError(anthropicError(c, err))
	}
	msg, err := anthropicMessage(resp, c.status())
	if err != nil {
		return processor.Message{}, m.redactError(err)
	}
	meta := msg.Info()
	meta.Usage.PromptMessages = len(messages)
	msg = msg.WithMeta(meta)
	logRequest(m.logger, messagesAPI, m.model, messages, s, meta, start)
	return msg, nil
}

func (m *Anthropic) redactError(err error) error {
	return redactErr(err, func(s string) string { return redactSecrets(m.secrets, s) })
}

// params builds the request body.
func (m *Anthropic) params(messages []processor.Message, s Settings) (anthropic.MessageNewParams, error) {
	var p anthropic.MessageNewParams
	if _, err := checkSettings(s); err != nil {
		return p, err
	}
	system, msgs, err := anthropicInput(messages)
	if err != nil {
		return p, err
	}
	p.Model = anthropic.Model(m.model)
	p.Messages = msgs
	for _, text := range system {
		p.System = append(p.System, anthropic.TextBlockParam{Text: text})
	}
	p.MaxTokens = DefaultAnthropicMaxTokens
	if s.MaxTokens > 0 {
		p.MaxTokens = int64(s.MaxTokens)
	}
	for _, t := range s.Tools {
		schema, err := toolSchema(t)
		if err != nil {
			return p, err
		}
		tool := map[string]any{"name": t.Name, "input_schema": schema}
		if t.Description != "" {
			tool["description"] = t.Description
		}
		if t.Strict {
			tool["strict"] = true
		}
		p.Tools = append(p.Tools, param.Override[anthropic.ToolUnionParam](tool))
	}
	switch {
	case s.ToolChoice == "" || len(s.Tools) == 0:
	case s.ToolChoice == "auto":
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
	case s.ToolChoice == "none":
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case s.ToolChoice == "required":
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	default:
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(s.ToolChoice)
	}
	if s.Temperature != nil {
		p.Temperature = anthropic.Float(*s.Temperature)
	}
	return p, nil
}

// anthropicInput converts a history to Anthropic's system prompt and
// messages.
func anthropicInput(messages []processor.Message) ([]string, []anthropic.MessageParam, error) {
	var system []string
	var out []anthropic.MessageParam
	role := ""
	var results, blocks []any // of the message being built: tool_result blocks, the others
	flush := func() {
		if role != "" && len(results)+len(blocks) > 0 {
			out = append(out, param.Override[anthropic.MessageParam](map[string]any{"role": role, "content": append(results, blocks...)}))
		}
		results, blocks = nil, nil
	}
	for i, msg := range messages {
		r := "user"
		if msg.Kind == processor.Response {
			r = "assistant"
		}
		for j, part := range msg.Parts {
			where := func(err error) error { return fmt.Errorf("message %d part %d: %w", i, j, err) }
			if sp, ok := part.(processor.SystemPrompt); ok {
				system = append(system, sp.Content)
				continue
			}
			if r != role {
				flush()
				role = r
			}
			switch p := part.(type) {
			case processor.UserPrompt:
				text, err := userText(p)
				if err != nil {
					return nil, nil, where(err)
				}
				if text != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: text})
				}
			case processor.ToolReturn:
				results = append(results, toolResult{Type: "tool_result", ToolUseID: p.ToolCallID, Content: toolReturnText(p)})
			case processor.RetryPrompt:
				if p.ToolCallID != "" {
					results = append(results, toolResult{Type: "tool_result", ToolUseID: p.ToolCallID, Content: p.Content, IsError: true})
				} else if p.Content != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: p.Content})
				}
			case processor.Text:
				if p.Content != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: p.Content})
				}
			case processor.ToolCall:
				input := json.RawMessage(strings.TrimSpace(p.Args))
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				if !json.Valid(input) {
					return nil, nil, where(fmt.Errorf("tool call %q: arguments are not JSON", p.ToolName))
				}
				if p.ToolCallID == "" {
					return nil, nil, where(fmt.Errorf("tool call %q without id", p.ToolName))
				}
				blocks = append(blocks, toolUse{Type: "tool_use", ID: p.ToolCallID, Name: p.ToolName, Input: input})
			case processor.Thinking:
				switch {
				case p.API == messagesAPI && p.Raw != "":
					blocks = append(blocks, json.RawMessage(p.Raw))
				case p.Signature != "":
					blocks = append(blocks, thinkingBlock{Type: "thinking", Thinking: p.Content, Signature: p.Signature})
				}
			case processor.Opaque:
				if p.API != messagesAPI {
					return nil, nil, where(fmt.Errorf("%s item of type %q cannot be sent to the Messages API", p.API, p.Type))
				}
				blocks = append(blocks, json.RawMessage(p.Raw))
			default:
				return nil, nil, where(fmt.Errorf("unsupported part %T", part))
			}
		}
	}
	flush()
	return system, out, nil
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

type toolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// anthropicMessage converts a response.
func anthropicMessage(r *anthropic.Message, status int) (processor.Message, error) {
	if r == nil || r.Type != "message" {
		return processor.Message{}, &Error{StatusCode: status, Message: "malformed response: not a message", Err: ErrMalformedResponse}
	}
	u := r.Usage
	meta := processor.Meta{ModelName: string(r.Model), FinishReason: string(r.StopReason),
		Usage: processor.Usage{
			InputTokens:           u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			CachedInputTokens:     u.CacheReadInputTokens,
			CacheWriteInputTokens: u.CacheCreationInputTokens,
			OutputTokens:          u.OutputTokens,
		}}
	out := processor.Message{Kind: processor.Response}
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			out.Parts = append(out.Parts, processor.Text{Content: b.Text})
		case "tool_use":
			out.Parts = append(out.Parts, processor.ToolCall{ToolCallID: b.ID, ToolName: b.Name, Args: string(b.Input)})
		case "thinking", "redacted_thinking":
			out.Parts = append(out.Parts, processor.Thinking{Content: b.Thinking, Signature: b.Signature, API: messagesAPI, Raw: b.RawJSON()})
		default:
			out.Parts = append(out.Parts, processor.Opaque{API: messagesAPI, Type: b.Type, Raw: b.RawJSON()})
		}
	}
	return out.WithMeta(meta), nil
}

// stream makes a streaming request: each text delta goes to onText, and
// the message is the events accumulated up to message_stop.
func (m *Anthropic) stream(c *call, params anthropic.MessageNewParams, onText func(string)) (*anthropic.Message, error) {
	ctx, w, stop := watch(c.callCtx, m.idle)
	defer stop()
	st := m.client.Messages.NewStreaming(ctx, params, aoption.WithResponseInto(&c.res), aoption.WithMiddleware(w.middleware))
	defer st.Close()
	var msg anthropic.Message
	events, stopped := 0, false
	for st.Next() {
		ev := st.Current()
		events++
		if err := msg.Accumulate(ev); err != nil {
			return nil, &Error{StatusCode: c.status(), Message: "malformed stream: " + err.Error(), Err: fmt.Errorf("%w: %w", ErrMalformedResponse, err)}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				onText(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := st.Err(); err != nil {
		if c.callCtx.Err() == nil && errors.Is(context.Cause(ctx), errStalled) {
			return nil, stalled(c.status(), m.idle, events)
		}
		return nil, err
	}
	if !stopped {
		return nil, unfinished(c, w, events, "message_stop")
	}
	return &msg, nil
}

// anthropicError builds the Error for a failed call: Anthropic's error
// answer (its type, its message; "prompt is too long" an overflow), else
// as for the OpenAI models.
func anthropicError(c *call, err error) error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return providerError(c.ctx, c.callCtx, c.timeout, c.res, err)
	}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(ae.RawJSON()), &body)
	e := &Error{StatusCode: ae.StatusCode, Type: body.Error.Type, Message: body.Error.Message, Err: err}
	if e.Type == "" {
		e.Type = string(ae.Type())
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.StatusCode) + " (no error message in the response)"
	}
	if e.Type == "invalid_request_error" && strings.Contains(strings.ToLower(e.Message), "prompt is too long") {
		e.Err = fmt.Errorf("%w: %w", ErrContextOverflow, err)
	}
	return e
}
