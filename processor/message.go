// Package processor holds abridge's message model and the history-processor
// contract: the [Message] and [Part] types an agent's history is made of, the
// [Processor] interface with its [Func] adapter and [Chain] composite, the
// validity rules every processed history must satisfy ([Validate]), an explicit
// [Repair] for histories that arrive broken, and a token estimate anchored on
// provider-reported usage ([EstimateTokens]). It depends on the standard
// library only: nothing here knows about any model provider.
package processor

import (
	"encoding/json"
	"strconv"
	"time"
)

// Kind tells whether a [Message] goes to the model or came from it.
type Kind uint8

const (
	// Request is a message sent to the model: system prompts, user prompts,
	// tool returns and retry prompts.
	Request Kind = iota + 1
	// Response is a message the model returned: text, tool calls and thinking.
	Response
)

// String returns "request", "response" or "kind(N)".
func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Response:
		return "response"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one entry of a history. A request carries request parts
// ([SystemPrompt], [UserPrompt], [ToolReturn], [RetryPrompt]); a response
// carries response parts ([Text], [ToolCall], [Thinking]) and, when known,
// what the provider reported with it ([Meta]).
//
// Messages are small values (40 bytes: histories are copied whenever a
// processor changes one message) whose parts and metadata are shared when
// a message is copied: processors must treat the Parts slice, everything
// it points to and the Meta as read-only, and build new ones for what they
// change.
type Message struct {
	// Kind is Request or Response.
	Kind Kind
	// Parts is the ordered content of the message.
	Parts []Part
	// Meta is the message's metadata, nil when it has none (most
	// requests). It is shared by the copies of the message and never
	// changed once the message is in a history: to change it, point the
	// message at a new Meta (see [Message.WithMeta]).
	Meta *Meta
}

// Meta is what a provider reported with a response, and when a message was
// created. Its zero value means nothing is known.
type Meta struct {
	// Usage is what the provider reported for the request that produced
	// this response. Zero on requests and where it is unknown.
	Usage Usage
	// ModelName names the model that produced a response, when known.
	ModelName string
	// FinishReason is the provider's reason for ending a response
	// ("stop", "length", "tool_calls", "content_filter"), when known.
	FinishReason string
	// Name is the optional participant name of a response (OpenAI "name").
	Name string
	// Refusal is the model's refusal message, when it refused. It is part
	// of the response sent back to the provider.
	Refusal string
	// Time is when the message was created, when known. It is never sent
	// to a provider.
	Time time.Time
}

// Info returns m's metadata, or the zero Meta when it has none.
func (m Message) Info() Meta {
	if m.Meta == nil {
		return Meta{}
	}
	return *m.Meta
}

// WithMeta returns m with its metadata set to a new copy of meta, or
// removed when meta is the zero Meta. Other copies of m keep theirs.
func (m Message) WithMeta(meta Meta) Message {
	if meta == (Meta{}) {
		m.Meta = nil
	} else {
		m.Meta = &meta
	}
	return m
}

// Usage returns the usage reported with m (see [Meta.Usage]).
func (m Message) Usage() Usage {
	if m.Meta == nil {
		return Usage{}
	}
	return m.Meta.Usage
}

// Refusal returns m's refusal message (see [Meta.Refusal]).
func (m Message) Refusal() string {
	if m.Meta == nil {
		return ""
	}
	return m.Meta.Refusal
}

// Usage is the provider-reported token usage of one model request.
type Usage struct {
	// InputTokens is the number of prompt tokens the request used.
	InputTokens int64
	// CachedInputTokens is how many of InputTokens were served from the
	// provider's prompt cache.
	CachedInputTokens int64
	// CacheWriteInputTokens is how many of InputTokens were written to
	// the provider's prompt cache (Anthropic's
	// cache_creation_input_tokens); 0 where the API does not report it.
	CacheWriteInputTokens int64
	// OutputTokens is the number of tokens the response used.
	OutputTokens int64
	// PromptMessages is the number of history messages the request that
	// produced the response contained, or 0 when unknown. EstimateTokens
	// trusts InputTokens as an anchor only while the messages before the
	// response are still that many, so a history shortened by compaction
	// is not measured with a stale count.
	PromptMessages int
}

// Add returns the sum of two usages. PromptMessages is taken from v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:           u.InputTokens + v.InputTokens,
		CachedInputTokens:     u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens + v.CacheWriteInputTokens,
		OutputTokens:          u.OutputTokens + v.OutputTokens,
		PromptMessages:        v.PromptMessages,
	}
}

// Part is one piece of a message's content. The concrete types are
// [SystemPrompt], [UserPrompt], [ToolReturn] and [RetryPrompt] (request parts),
// [Text], [ToolCall] and [Thinking] (response parts), and [Opaque], which
// either may hold. The set is closed.
type Part interface {
	// PartKind returns the part's kind name, e.g. "tool-return".
	PartKind() string
	isPart()
}

// SystemPrompt is a system (or developer) instruction.
type SystemPrompt struct {
	// Content is the instruction text.
	Content string
	// Developer marks an OpenAI "developer" message rather than "system".
	Developer bool
	// Name is the optional participant name.
	Name string
}

// UserPrompt is what the user said. Plain text is in Content; multi-part
// content (text and images, audio or files) is in Contents, in which case
// Content is empty.
type UserPrompt struct {
	// Content is the plain-text prompt.
	Content string
	// Contents holds the parts of a multi-part prompt, in order. Nil for a
	// plain-text prompt.
	Contents []UserContent
	// Name is the optional participant name.
	Name string
}

// UserContent is one part of a multi-part user prompt.
type UserContent struct {
	// Type is the provider's part type: "text", "image_url", "input_audio",
	// "file".
	Type string
	// Text is the text of a "text" part.
	Text string
	// Data is the provider's JSON for any other part type, kept verbatim.
	Data json.RawMessage
}

// ToolReturn is the result of a tool call, answering the [ToolCall] with the
// same ToolCallID.
type ToolReturn struct {
	// ToolName names the tool that ran, when known. OpenAI's wire format
	// does not carry it; conversions fill it from the matching call.
	ToolName string
	// ToolCallID is the ID of the call this return answers.
	ToolCallID string
	// Content is the textual result.
	Content string
	// JSON is a structured result; when set, it is sent serialized and
	// Content is ignored.
	JSON json.RawMessage
	// Contents holds the text parts of a multi-part tool message, in order;
	// nil for plain content.
	Contents []string
}

// RetryPrompt tells the model to try again: a tool's error, or output that
// failed validation. With a ToolCallID it answers that call.
type RetryPrompt struct {
	// ToolName names the tool whose call failed, if any.
	ToolName string
	// ToolCallID is the call this retry answers, if any.
	ToolCallID string
	// Content describes what went wrong.
	Content string
}

// Text is text the model wrote.
type Text struct {
	// Content is the text.
	Content string
}

// ToolCall is the model's request to run a tool.
type ToolCall struct {
	// ToolCallID identifies the call; the answering [ToolReturn] or
	// [RetryPrompt] carries the same ID.
	ToolCallID string
	// ToolName is the tool to run.
	ToolName string
	// Args is the call's arguments as the model wrote them (normally a JSON
	// object, kept verbatim even when it is not valid JSON).
	Args string
}

// Thinking is reasoning the model exposed. It is kept in the history but not
// sent back to providers that cannot take it.
type Thinking struct {
	// Content is the reasoning text (for encrypted reasoning, the summary
	// the provider gave of it, if any).
	Content string
	// Signature is a provider's opaque signature for the reasoning, if any.
	Signature string
	// API names the wire format Raw is written in: "chat", "responses"
	// or "messages" (see [Opaque.API]); empty when Raw is.
	API string
	// Raw is the reasoning item or thinking block exactly as the provider
	// sent it (encrypted content and signatures included), when it came
	// from a wire format that sends it back whole. A codec of that API
	// writes Raw instead of Content; processors never change it.
	Raw string
}

// Opaque is an item or block of a wire format that abridge does not model:
// an item type newer than abridge, a reference to a stored item, redacted
// thinking, a provider's compaction item. It is carried whole and written
// back byte for byte by the codec of its API; processors count its bytes
// and may drop the message holding it, but never open or change it. It may
// stand in a request or in a response.
type Opaque struct {
	// API names the wire format Raw is written in, e.g. "responses" or
	// "messages" (the format, not the vendor: one format serves several
	// providers).
	API string
	// Type is the item's or block's type as the wire format names it,
	// e.g. "item_reference" or "redacted_thinking".
	Type string
	// Raw is the item or block as received.
	Raw string
}

// PartKind returns "system-prompt".
func (SystemPrompt) PartKind() string { return "system-prompt" }

// PartKind returns "user-prompt".
func (UserPrompt) PartKind() string { return "user-prompt" }

// PartKind returns "tool-return".
func (ToolReturn) PartKind() string { return "tool-return" }

// PartKind returns "retry-prompt".
func (RetryPrompt) PartKind() string { return "retry-prompt" }

// PartKind returns "text".
func (Text) PartKind() string { return "text" }

// PartKind returns "tool-call".
func (ToolCall) PartKind() string { return "tool-call" }

// PartKind returns "thinking".
func (Thinking) PartKind() string { return "thinking" }

// PartKind returns "opaque".
func (Opaque) PartKind() string { return "opaque" }

func (SystemPrompt) isPart() {}
func (UserPrompt) isPart()   {}
func (ToolReturn) isPart()   {}
func (RetryPrompt) isPart()  {}
func (Text) isPart()         {}
func (ToolCall) isPart()     {}
func (Thinking) isPart()     {}
func (Opaque) isPart()       {}

// NewRequest returns a request message with the given parts.
func NewRequest(parts ...Part) Message {
	return Message{Kind: Request, Parts: parts}
}

// NewResponse returns a response message with the given parts.
func NewResponse(parts ...Part) Message {
	return Message{Kind: Response, Parts: parts}
}

// UserMessage returns a request holding one plain-text user prompt.
func UserMessage(text string) Message {
	return NewRequest(UserPrompt{Content: text})
}

// SystemMessage returns a request holding one system prompt.
func SystemMessage(text string) Message {
	return NewRequest(SystemPrompt{Content: text})
}

// TextMessage returns a response holding one text part.
func TextMessage(text string) Message {
	return NewResponse(Text{Content: text})
}

// ToolCalls returns the tool calls of a response, in order. It returns nil
// for requests and for responses without calls.
func (m Message) ToolCalls() []ToolCall {
	if m.Kind != Response {
		return nil
	}
	var calls []ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(ToolCall); ok {
			calls = append(calls, c)
		}
	}
	return calls
}

// HasToolCalls reports whether m is a response with at least one tool call.
func (m Message) HasToolCalls() bool {
	if m.Kind != Response {
		return false
	}
	for _, p := range m.Parts {
		if _, ok := p.(ToolCall); ok {
			return true
		}
	}
	return false
}

// Text returns the concatenated text of a message's text-like parts: Text
// parts of a response, user prompts of a request. Parts are joined by a
// newline.
func (m Message) Text() string {
	var out []byte
	add := func(s string) {
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, s...)
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case Text:
			add(p.Content)
		case UserPrompt:
			if p.Contents == nil {
				add(p.Content)
				continue
			}
			for _, c := range p.Contents {
				if c.Type == "text" {
					add(c.Text)
				}
			}
		}
	}
	return string(out)
}

// ToolReturnContent returns the text a tool return sends to the model: its
// JSON when structured, its text parts joined by newlines when multi-part,
// otherwise its Content.
func (r ToolReturn) ToolReturnContent() string {
	switch {
	case r.JSON != nil:
		return string(r.JSON)
	case r.Contents != nil:
		n := 0
		for _, c := range r.Contents {
			n += len(c) + 1
		}
		b := make([]byte, 0, n)
		for i, c := range r.Contents {
			if i > 0 {
				b = append(b, '\n')
			}
			b = append(b, c...)
		}
		return string(b)
	}
	return r.Content
}
