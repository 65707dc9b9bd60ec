package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/provider"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Messages is a [model.Model] that calls an Anthropic Messages endpoint
// (<base URL>/v1/messages) through anthropic-sdk-go. It reports usage and
// errors as the models of package model/openai do. It is safe for
// concurrent use.
//
// Without [WithoutEnvironment], it reads ANTHROPIC_BASE_URL, and
// ANTHROPIC_API_KEY (sent as x-api-key) or else ANTHROPIC_AUTH_TOKEN (sent
// as a bearer token) from the environment; the options given win. It
// reads nothing else of the environment (no profile files).
type Messages struct {
	client  sdk.Client
	model   string
	logger  *zap.Logger
	idle    time.Duration
	secrets provider.Secrets
}

var _ model.Model = (*Messages)(nil)

// New returns a Messages model configured by opts. [WithBaseURL] names the
// server (requests go to <url>/v1/messages), [WithAPIKey] the key sent as
// x-api-key.
func New(opts ...Option) *Messages {
	o := options{Options: provider.Options{Model: DefaultModel}}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	r := provider.Resolve(o.Options)
	ropts := []option.RequestOption{option.WithoutEnvironmentDefaults()}
	base, key, token := r.BaseURL, r.APIKey, ""
	if !r.NoEnv {
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
		base = DefaultBaseURL
	}
	ropts = append(ropts, option.WithBaseURL(base))
	switch {
	case key != "":
		ropts = append(ropts, option.WithAPIKey(key))
	case token != "":
		ropts = append(ropts, option.WithAuthToken(token))
	}
	if r.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(r.HTTPClient))
	}
	if r.MaxRetries != nil {
		ropts = append(ropts, option.WithMaxRetries(r.Retries))
	}
	ropts = append(ropts, o.requestOptions...)
	return &Messages{client: sdk.NewClient(ropts...), model: r.Model, logger: r.Logger, idle: r.Idle,
		secrets: provider.SecretsOf(key, token)}
}

// Name returns the model name sent with every request.
func (m *Messages) Name() string { return m.model }

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
// max_tokens is Settings.MaxTokens, else [DefaultMaxTokens]; a
// tool choice is sent only with tools (Anthropic refuses one without
// them), and "required" with no tools is an error.
//
// With Settings.OnText set the request streams and OnText receives each
// text delta. Errors are as those of package model/openai: an
// [*model.Error] (its Type Anthropic's error type, e.g.
// "rate_limit_error"), matching [model.ErrContextOverflow] when Anthropic
// answers "prompt is too long", [model.ErrIncompleteResponse],
// [model.ErrMalformedResponse] or the context's error as the case is,
// with the key redacted.
func (m *Messages) Request(ctx context.Context, messages []processor.Message, s model.Settings) (processor.Message, error) {
	params, err := m.params(messages, s)
	if err != nil {
		return processor.Message{}, fmt.Errorf("anthropic request: %w", err)
	}
	c, cancel := provider.NewCall(ctx, s)
	defer cancel()
	start := time.Now()
	var resp *sdk.Message
	if s.OnText != nil {
		resp, err = m.stream(c, params, s.OnText)
	} else {
		resp, err = m.client.Messages.New(c.CallCtx, params, option.WithResponseInto(&c.Res))
	}
	if err != nil {
		return processor.Message{}, m.secrets.RedactError(callError(c, err))
	}
	msg, err := responseMessage(resp, c.Status())
	if err != nil {
		return processor.Message{}, m.secrets.RedactError(err)
	}
	return provider.Respond(m.logger, messagesAPI, m.model, messages, s, msg, start), nil
}

// params builds the request body.
func (m *Messages) params(messages []processor.Message, s model.Settings) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if _, err := provider.CheckSettings(s); err != nil {
		return p, err
	}
	system, msgs, err := input(messages)
	if err != nil {
		return p, err
	}
	p.Model = sdk.Model(m.model)
	p.Messages = msgs
	for _, text := range system {
		p.System = append(p.System, sdk.TextBlockParam{Text: text})
	}
	p.MaxTokens = DefaultMaxTokens
	if s.MaxTokens > 0 {
		p.MaxTokens = int64(s.MaxTokens)
	}
	for _, t := range s.Tools {
		schema, err := provider.ToolSchema(t)
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
		p.Tools = append(p.Tools, param.Override[sdk.ToolUnionParam](tool))
	}
	switch {
	case s.ToolChoice == "" || len(s.Tools) == 0:
	case s.ToolChoice == "auto":
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
	case s.ToolChoice == "none":
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case s.ToolChoice == "required":
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	default:
		p.ToolChoice = sdk.ToolChoiceParamOfTool(s.ToolChoice)
	}
	if s.Temperature != nil {
		p.Temperature = sdk.Float(*s.Temperature)
	}
	return p, nil
}

// input converts a history to Anthropic's system prompt and
// messages.
func input(messages []processor.Message) ([]string, []sdk.MessageParam, error) {
	var system []string
	var out []sdk.MessageParam
	role := ""
	var results, blocks []any // of the message being built: tool_result blocks, the others
	flush := func() {
		if role != "" && len(results)+len(blocks) > 0 {
			out = append(out, param.Override[sdk.MessageParam](map[string]any{"role": role, "content": append(results, blocks...)}))
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
				text, err := provider.UserText(p)
				if err != nil {
					return nil, nil, where(err)
				}
				if text != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: text})
				}
			case processor.ToolReturn:
				results = append(results, toolResult{Type: "tool_result", ToolUseID: p.ToolCallID, Content: provider.ToolReturnText(p)})
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

// responseMessage converts a response.
func responseMessage(r *sdk.Message, status int) (processor.Message, error) {
	if r == nil || r.Type != "message" {
		return processor.Message{}, &model.Error{StatusCode: status, Message: "malformed response: not a message", Err: model.ErrMalformedResponse}
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
func (m *Messages) stream(c *provider.Call, params sdk.MessageNewParams, onText func(string)) (*sdk.Message, error) {
	ctx, w, stop := provider.Watch(c.CallCtx, m.idle)
	defer stop()
	st := m.client.Messages.NewStreaming(ctx, params, option.WithResponseInto(&c.Res), option.WithMiddleware(w.Middleware))
	defer st.Close()
	var msg sdk.Message
	events, stopped := 0, false
	for st.Next() {
		ev := st.Current()
		events++
		if err := msg.Accumulate(ev); err != nil {
			return nil, &model.Error{StatusCode: c.Status(), Message: "malformed stream: " + err.Error(), Err: fmt.Errorf("%w: %w", model.ErrMalformedResponse, err)}
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
		if c.CallCtx.Err() == nil && errors.Is(context.Cause(ctx), provider.ErrStalled) {
			return nil, provider.Stalled(c.Status(), m.idle, events)
		}
		return nil, err
	}
	if !stopped {
		return nil, provider.Unfinished(c, w, events, "message_stop")
	}
	return &msg, nil
}

// callError builds the Error for a failed call: Anthropic's error
// answer (its type, its message; "prompt is too long" an overflow), else
// as for the OpenAI models.
func callError(c *provider.Call, err error) error {
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	var ae *sdk.Error
	if !errors.As(err, &ae) {
		return provider.CallError(c, err, nil)
	}
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(ae.RawJSON()), &body)
	e := &model.Error{StatusCode: ae.StatusCode, Type: body.Error.Type, Message: body.Error.Message, Err: err}
	if e.Type == "" {
		e.Type = string(ae.Type())
	}
	if e.Message == "" {
		e.Message = http.StatusText(e.StatusCode) + " (no error message in the response)"
	}
	if e.Type == "invalid_request_error" && strings.Contains(strings.ToLower(e.Message), "prompt is too long") {
		e.Err = fmt.Errorf("%w: %w", model.ErrContextOverflow, err)
	}
	return e
}
