package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/internal/provider"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Responses is a [Model] that calls an OpenAI Responses endpoint
// (<base URL>/responses, or a compatible one) through openai-go v3's
// client.Responses.New. It takes the same options as [New], reads the
// same environment (OPENAI_API_KEY, OPENAI_BASE_URL) and reports usage and
// errors the same way. Its requests are stateless: store is false, and the
// whole history is sent each time. It is safe for concurrent use.
type Responses struct {
	client  sdk.Client
	model   string
	logger  *zap.Logger
	idle    time.Duration
	secrets provider.Secrets
}

var _ model.Model = (*Responses)(nil)

// NewResponses returns a Responses model configured by opts (see [New]:
// the same options mean the same here; [WithBaseURL] names the base URL
// requests go to <url>/responses under).
func NewResponses(opts ...Option) *Responses {
	client, r, key := newClient(opts)
	return &Responses{client: client, model: r.Model, logger: r.Logger, idle: r.Idle, secrets: provider.SecretsOf(key)}
}

// Name returns the model name sent with every request.
func (m *Responses) Name() string { return m.model }

// Request sends messages as the input items of a Responses request and
// returns the response's output as a [processor.Response]: a
// [processor.Thinking] part per reasoning item (its summary's text, the
// item kept whole in Raw with API "responses"), a [processor.Text] part
// per output text, a [processor.ToolCall] per function call, and a
// [processor.Opaque] part per output item of another type, in the order
// of the output; the refusal in Refusal, the provider's model name, the
// status as finish reason ("completed", or the reason a response is
// incomplete, e.g. "max_output_tokens"), and usage (InputTokens =
// input_tokens, CachedInputTokens = input_tokens_details.cached_tokens,
// OutputTokens = output_tokens, PromptMessages = len(messages)).
//
// Messages become input items: system prompts messages of role system (or
// developer), user prompts user messages (text only), texts assistant
// messages, tool calls function_call items, tool returns (and retry
// prompts that answer a call) function_call_output items. A Thinking part
// or an Opaque part read from a Responses request is sent as its raw item;
// a Thinking part from another API is not sent (its reasoning belongs to
// that API's model), and an Opaque part from another API is an error. A
// tool choice is sent only with tools, and "required" with no tools is an
// error.
//
// With Settings.OnText set the request streams and OnText receives each
// output text delta; a stream that goes silent for longer than the stream
// idle timeout fails (see [WithStreamIdleTimeout]). Errors are as the
// [Chat] model's: an [*model.Error], matching [model.ErrContextOverflow],
// [model.ErrIncompleteResponse], [model.ErrMalformedResponse] or the context's error
// as the case is, with the API key redacted.
func (m *Responses) Request(ctx context.Context, messages []processor.Message, s model.Settings) (processor.Message, error) {
	params, err := m.params(messages, s)
	if err != nil {
		return processor.Message{}, fmt.Errorf("responses request: %w", err)
	}
	c, cancel := provider.NewCall(ctx, s)
	defer cancel()
	start := time.Now()
	var resp *responses.Response
	if s.OnText != nil {
		resp, err = m.stream(c, params, s.OnText)
	} else {
		resp, err = m.client.Responses.New(c.CallCtx, params, option.WithResponseInto(&c.Res))
	}
	if err != nil {
		var me *model.Error
		if !errors.As(err, &me) {
			me = callError(c, err)
		}
		return processor.Message{}, m.secrets.RedactError(me)
	}
	msg, err := responsesMessage(resp, c.Status())
	if err != nil {
		return processor.Message{}, m.secrets.RedactError(err)
	}
	return provider.Respond(m.logger, responsesAPI, m.model, messages, s, msg, start), nil
}

// params builds the request body.
func (m *Responses) params(messages []processor.Message, s model.Settings) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	if _, err := provider.CheckSettings(s); err != nil {
		return p, err
	}
	items, err := responsesInput(messages)
	if err != nil {
		return p, err
	}
	p.Model = m.model
	p.Store = sdk.Bool(false)
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range s.Tools {
		schema, err := provider.ToolSchema(t)
		if err != nil {
			return p, err
		}
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: schema, Strict: sdk.Bool(t.Strict)}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	switch {
	case s.ToolChoice == "" || len(s.Tools) == 0:
	case s.ToolChoice == "auto" || s.ToolChoice == "none" || s.ToolChoice == "required":
		p.ToolChoice.OfToolChoiceMode = sdk.Opt(responses.ToolChoiceOptions(s.ToolChoice))
	default:
		p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: s.ToolChoice}
	}
	if s.Temperature != nil {
		p.Temperature = sdk.Float(*s.Temperature)
	}
	if s.MaxTokens > 0 {
		p.MaxOutputTokens = sdk.Int(int64(s.MaxTokens))
	}
	return p, nil
}

// responsesAPI names the Responses API on the parts that keep its raw
// items.
const responsesAPI = "responses"

// responsesInput converts a history to Responses input items.
func responsesInput(messages []processor.Message) (responses.ResponseInputParam, error) {
	var items []any
	add := func(v any) { items = append(items, v) }
	for i, msg := range messages {
		for j, part := range msg.Parts {
			where := func(err error) error { return fmt.Errorf("message %d part %d: %w", i, j, err) }
			switch p := part.(type) {
			case processor.SystemPrompt:
				role := "system"
				if p.Developer {
					role = "developer"
				}
				add(inputMessage{Type: "message", Role: role, Content: p.Content})
			case processor.UserPrompt:
				text, err := provider.UserText(p)
				if err != nil {
					return nil, where(err)
				}
				add(inputMessage{Type: "message", Role: "user", Content: text})
			case processor.ToolReturn:
				add(callOutput{Type: "function_call_output", CallID: p.ToolCallID, Output: provider.ToolReturnText(p)})
			case processor.RetryPrompt:
				if p.ToolCallID != "" {
					add(callOutput{Type: "function_call_output", CallID: p.ToolCallID, Output: p.Content})
				} else {
					add(inputMessage{Type: "message", Role: "user", Content: p.Content})
				}
			case processor.Text:
				add(inputMessage{Type: "message", Role: "assistant", Content: p.Content})
			case processor.ToolCall:
				if p.ToolCallID == "" {
					return nil, where(fmt.Errorf("tool call %q without id", p.ToolName))
				}
				add(functionCall{Type: "function_call", CallID: p.ToolCallID, Name: p.ToolName, Arguments: p.Args})
			case processor.Thinking:
				if p.API == responsesAPI && p.Raw != "" {
					add(json.RawMessage(p.Raw))
				}
			case processor.Opaque:
				if p.API != responsesAPI {
					return nil, where(fmt.Errorf("%s item of type %q cannot be sent to the Responses API", p.API, p.Type))
				}
				add(json.RawMessage(p.Raw))
			default:
				return nil, where(fmt.Errorf("unsupported part %T", part))
			}
		}
	}
	out := make(responses.ResponseInputParam, len(items))
	for k, it := range items {
		out[k] = param.Override[responses.ResponseInputItemUnionParam](it)
	}
	return out, nil
}

type inputMessage struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

type callOutput struct {
	Type   string `json:"type"`
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type functionCall struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// responsesMessage converts a response. A response that failed is an
// error; one without output is malformed.
func responsesMessage(r *responses.Response, status int) (processor.Message, error) {
	if r == nil {
		return processor.Message{}, &model.Error{StatusCode: status, Message: "malformed response: no response", Err: model.ErrMalformedResponse}
	}
	if r.Status == responses.ResponseStatusFailed || r.Error.Message != "" {
		e := &model.Error{StatusCode: status, Code: string(r.Error.Code), Message: r.Error.Message}
		if e.Message == "" {
			e.Message = "the response failed"
		}
		return processor.Message{}, e
	}
	finish := string(r.Status)
	if r.IncompleteDetails.Reason != "" {
		finish = string(r.IncompleteDetails.Reason)
	}
	meta := processor.Meta{ModelName: string(r.Model), FinishReason: finish,
		Usage: processor.Usage{
			InputTokens:       r.Usage.InputTokens,
			CachedInputTokens: r.Usage.InputTokensDetails.CachedTokens,
			OutputTokens:      r.Usage.OutputTokens,
		}}
	out := processor.Message{Kind: processor.Response}
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					out.Parts = append(out.Parts, processor.Text{Content: c.Text})
				case "refusal":
					meta.Refusal += c.Refusal
				}
			}
		case "function_call":
			fc := it.AsFunctionCall()
			out.Parts = append(out.Parts, processor.ToolCall{ToolCallID: fc.CallID, ToolName: fc.Name, Args: fc.Arguments})
		case "reasoning":
			var text []string
			for _, s := range it.Summary {
				text = append(text, s.Text)
			}
			out.Parts = append(out.Parts, processor.Thinking{Content: strings.Join(text, "\n"), API: responsesAPI, Raw: it.RawJSON()})
		default:
			out.Parts = append(out.Parts, processor.Opaque{API: responsesAPI, Type: it.Type, Raw: it.RawJSON()})
		}
	}
	return out.WithMeta(meta), nil
}

// stream makes a streaming request: each output text delta goes to onText,
// and the response is the one the stream's last event (response.completed,
// response.incomplete or response.failed) carries.
func (m *Responses) stream(c *provider.Call, params responses.ResponseNewParams, onText func(string)) (*responses.Response, error) {
	ctx, w, stop := provider.Watch(c.CallCtx, m.idle)
	defer stop()
	st := m.client.Responses.NewStreaming(ctx, params, option.WithResponseInto(&c.Res), option.WithMiddleware(w.Middleware))
	defer st.Close()
	var final *responses.Response
	events := 0
	for st.Next() {
		ev := st.Current()
		events++
		switch ev.Type {
		case "response.output_text.delta":
			if ev.Delta != "" {
				onText(ev.Delta)
			}
		case "response.completed", "response.incomplete", "response.failed":
			r := ev.Response
			final = &r
		case "error":
			return nil, &model.Error{StatusCode: c.Status(), Code: ev.Code, Message: "stream error: " + ev.Message}
		}
	}
	if err := st.Err(); err != nil {
		if c.CallCtx.Err() == nil && errors.Is(context.Cause(ctx), provider.ErrStalled) {
			return nil, provider.Stalled(c.Status(), m.idle, events)
		}
		return nil, err
	}
	if final == nil {
		return nil, provider.Unfinished(c, w, events, "response.completed")
	}
	return final, nil
}
