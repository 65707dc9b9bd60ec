package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/abridge-go/abridge/processor"
)

// ErrCodec is matched (with errors.Is) by errors of [MarshalMessage] and
// [UnmarshalMessage] about a message they cannot represent or read.
var ErrCodec = errors.New("session codec")

// The wire form of a message. Every field of processor.Message and of each
// part type has a key; optional keys are omitted when zero. Raw JSON held by
// the message model (UserContent.Data, ToolReturn.JSON) is stored as a JSON
// string, not embedded, so that its bytes come back exactly as they were
// (embedding would compact and re-escape them). Pointers mark the fields
// whose nil and empty values the model tells apart.
type wireMessage struct {
	Kind         string     `json:"kind"`
	Parts        []wirePart `json:"parts"`
	Usage        *wireUsage `json:"usage,omitempty"`
	ModelName    string     `json:"model_name,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Name         string     `json:"name,omitempty"`
	Refusal      string     `json:"refusal,omitempty"`
	Time         *time.Time `json:"time,omitempty"`
}

type wireUsage struct {
	InputTokens       int64 `json:"input_tokens,omitempty"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int64 `json:"cache_write_input_tokens,omitempty"`
	OutputTokens      int64 `json:"output_tokens,omitempty"`
	PromptMessages    int   `json:"prompt_messages,omitempty"`
}

// wirePart is the union of every part type's fields, tagged by Kind (the
// part's PartKind). Only the fields of that kind are set.
type wirePart struct {
	Kind       string             `json:"kind"`
	Content    string             `json:"content,omitempty"`
	Name       string             `json:"name,omitempty"`
	Developer  bool               `json:"developer,omitempty"`
	Contents   *[]wireUserContent `json:"contents,omitempty"`
	Texts      *[]string          `json:"texts,omitempty"`
	ToolName   string             `json:"tool_name,omitempty"`
	ToolCallID string             `json:"tool_call_id,omitempty"`
	JSON       *string            `json:"json,omitempty"`
	Args       string             `json:"args,omitempty"`
	Signature  string             `json:"signature,omitempty"`
	API        string             `json:"api,omitempty"`
	Type       string             `json:"type,omitempty"`
	Raw        string             `json:"raw,omitempty"`
}

type wireUserContent struct {
	Type string  `json:"type"`
	Text string  `json:"text,omitempty"`
	Data *string `json:"data,omitempty"`
}

// MarshalMessage encodes m as JSON in the session store's own format: an
// object with the message's kind ("request" or "response"), its metadata and
// its parts, each part an object tagged with its kind, for example
//
//	{"kind":"request","parts":[{"kind":"tool-return","tool_name":"ls","tool_call_id":"c1","content":"a.go"}]}
//
// Every field of the message model is kept: [UnmarshalMessage] returns a
// message [processor.Equal] to m. Strings are JSON strings, so invalid UTF-8
// in them is replaced by U+FFFD, as JSON requires. A message of unknown kind
// or with a nil part is an error.
func MarshalMessage(m processor.Message) ([]byte, error) {
	w, err := toWire(m)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal: %w", ErrCodec, err)
	}
	return b, nil
}

// UnmarshalMessage decodes a message written by [MarshalMessage]. An unknown
// message or part kind is an error.
func UnmarshalMessage(data []byte) (processor.Message, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return processor.Message{}, fmt.Errorf("%w: unmarshal: %w", ErrCodec, err)
	}
	return fromWire(w)
}

func toWire(m processor.Message) (wireMessage, error) {
	var w wireMessage
	switch m.Kind {
	case processor.Request, processor.Response:
		w.Kind = m.Kind.String()
	default:
		return w, fmt.Errorf("%w: message of %s", ErrCodec, m.Kind)
	}
	w.Parts = make([]wirePart, 0, len(m.Parts))
	for i, p := range m.Parts {
		wp, err := partToWire(p)
		if err != nil {
			return w, fmt.Errorf("part %d: %w", i, err)
		}
		w.Parts = append(w.Parts, wp)
	}
	meta := m.Info()
	if meta.Usage != (processor.Usage{}) {
		w.Usage = &wireUsage{
			InputTokens:       meta.Usage.InputTokens,
			CachedInputTokens: meta.Usage.CachedInputTokens,
			CacheWriteTokens:  meta.Usage.CacheWriteInputTokens,
			OutputTokens:      meta.Usage.OutputTokens,
			PromptMessages:    meta.Usage.PromptMessages,
		}
	}
	w.ModelName, w.FinishReason, w.Name, w.Refusal = meta.ModelName, meta.FinishReason, meta.Name, meta.Refusal
	if !meta.Time.IsZero() {
		t := meta.Time
		w.Time = &t
	}
	return w, nil
}

func partToWire(p processor.Part) (wirePart, error) {
	switch p := p.(type) {
	case processor.SystemPrompt:
		return wirePart{Kind: p.PartKind(), Content: p.Content, Developer: p.Developer, Name: p.Name}, nil
	case processor.UserPrompt:
		w := wirePart{Kind: p.PartKind(), Content: p.Content, Name: p.Name}
		if p.Contents != nil {
			cs := make([]wireUserContent, len(p.Contents))
			for i, c := range p.Contents {
				cs[i] = wireUserContent{Type: c.Type, Text: c.Text}
				if c.Data != nil {
					d := string(c.Data)
					cs[i].Data = &d
				}
			}
			w.Contents = &cs
		}
		return w, nil
	case processor.ToolReturn:
		w := wirePart{Kind: p.PartKind(), ToolName: p.ToolName, ToolCallID: p.ToolCallID, Content: p.Content}
		if p.JSON != nil {
			j := string(p.JSON)
			w.JSON = &j
		}
		if p.Contents != nil {
			ts := append([]string{}, p.Contents...)
			w.Texts = &ts
		}
		return w, nil
	case processor.RetryPrompt:
		return wirePart{Kind: p.PartKind(), ToolName: p.ToolName, ToolCallID: p.ToolCallID, Content: p.Content}, nil
	case processor.Text:
		return wirePart{Kind: p.PartKind(), Content: p.Content}, nil
	case processor.ToolCall:
		return wirePart{Kind: p.PartKind(), ToolCallID: p.ToolCallID, ToolName: p.ToolName, Args: p.Args}, nil
	case processor.Thinking:
		return wirePart{Kind: p.PartKind(), Content: p.Content, Signature: p.Signature, API: p.API, Raw: p.Raw}, nil
	case processor.Opaque:
		return wirePart{Kind: p.PartKind(), API: p.API, Type: p.Type, Raw: p.Raw}, nil
	case nil:
		return wirePart{}, fmt.Errorf("%w: nil part", ErrCodec)
	}
	return wirePart{}, fmt.Errorf("%w: unknown part type %T", ErrCodec, p)
}

func fromWire(w wireMessage) (processor.Message, error) {
	var m processor.Message
	switch w.Kind {
	case processor.Request.String():
		m.Kind = processor.Request
	case processor.Response.String():
		m.Kind = processor.Response
	default:
		return m, fmt.Errorf("%w: unknown message kind %q", ErrCodec, w.Kind)
	}
	if len(w.Parts) > 0 {
		m.Parts = make([]processor.Part, 0, len(w.Parts))
	}
	for i, wp := range w.Parts {
		p, err := partFromWire(wp)
		if err != nil {
			return m, fmt.Errorf("part %d: %w", i, err)
		}
		m.Parts = append(m.Parts, p)
	}
	var meta processor.Meta
	if w.Usage != nil {
		meta.Usage = processor.Usage{
			InputTokens:           w.Usage.InputTokens,
			CachedInputTokens:     w.Usage.CachedInputTokens,
			CacheWriteInputTokens: w.Usage.CacheWriteTokens,
			OutputTokens:          w.Usage.OutputTokens,
			PromptMessages:        w.Usage.PromptMessages,
		}
	}
	meta.ModelName, meta.FinishReason, meta.Name, meta.Refusal = w.ModelName, w.FinishReason, w.Name, w.Refusal
	if w.Time != nil {
		meta.Time = *w.Time
	}
	return m.WithMeta(meta), nil
}

func partFromWire(w wirePart) (processor.Part, error) {
	switch w.Kind {
	case processor.SystemPrompt{}.PartKind():
		return processor.SystemPrompt{Content: w.Content, Developer: w.Developer, Name: w.Name}, nil
	case processor.UserPrompt{}.PartKind():
		p := processor.UserPrompt{Content: w.Content, Name: w.Name}
		if w.Contents != nil {
			p.Contents = make([]processor.UserContent, len(*w.Contents))
			for i, c := range *w.Contents {
				p.Contents[i] = processor.UserContent{Type: c.Type, Text: c.Text}
				if c.Data != nil {
					p.Contents[i].Data = json.RawMessage(*c.Data)
				}
			}
		}
		return p, nil
	case processor.ToolReturn{}.PartKind():
		p := processor.ToolReturn{ToolName: w.ToolName, ToolCallID: w.ToolCallID, Content: w.Content}
		if w.JSON != nil {
			p.JSON = json.RawMessage(*w.JSON)
		}
		if w.Texts != nil {
			p.Contents = append([]string{}, *w.Texts...)
		}
		return p, nil
	case processor.RetryPrompt{}.PartKind():
		return processor.RetryPrompt{ToolName: w.ToolName, ToolCallID: w.ToolCallID, Content: w.Content}, nil
	case processor.Text{}.PartKind():
		return processor.Text{Content: w.Content}, nil
	case processor.ToolCall{}.PartKind():
		return processor.ToolCall{ToolCallID: w.ToolCallID, ToolName: w.ToolName, Args: w.Args}, nil
	case processor.Thinking{}.PartKind():
		return processor.Thinking{Content: w.Content, Signature: w.Signature, API: w.API, Raw: w.Raw}, nil
	case processor.Opaque{}.PartKind():
		return processor.Opaque{API: w.API, Type: w.Type, Raw: w.Raw}, nil
	}
	return nil, fmt.Errorf("%w: unknown part kind %q", ErrCodec, w.Kind)
}
