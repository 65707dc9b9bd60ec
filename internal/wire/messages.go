package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/transcript"
)

// Messages is the codec of the Anthropic Messages API (POST …/messages).
// The history is the body's "messages" after "system", which, when
// present, is its first message, a request of system prompts (one per
// text block). Each message is one of the model: a user message a
// request, an assistant message a response, a system one (Claude Code
// sends its environment so) a request of system prompts. In a user
// message, tool_result blocks are [processor.ToolReturn] parts, the
// others [processor.UserPrompt] content (all but plain text kept whole,
// cache_control included); in an assistant message, tool_use is a
// [processor.ToolCall], thinking a [processor.Thinking] holding the block
// whole, the others [processor.Opaque] parts.
var Messages Codec = messages{}

type messages struct{}

const apiMessages = "messages"

// API returns "messages".
func (messages) API() string { return apiMessages }

// msgBlock is what the codec reads of a block of an assistant message or
// of the system prompt.
type msgBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Input     jsontext.Value `json:"input"`
	Thinking  string         `json:"thinking"`
	Signature string         `json:"signature"`
}

// msgHistory remembers the tool_use and tool_result blocks as received,
// by ID (the last of each).
type msgHistory struct {
	uses    map[string]msgKept
	results map[string]msgKept
}

type msgKept struct {
	part    processor.Part
	raw     []byte
	isError bool
	cache   json.RawMessage
}

// Parse reads a Messages request body.
func (messages) Parse(data []byte, reserve func(tokens int) error) (*Body, error) {
	h := &msgHistory{uses: map[string]msgKept{}, results: map[string]msgKept{}}
	b, f, err := parseTop(data, Messages, h, reserve, "messages", "system")
	if err != nil {
		return nil, err
	}
	items := f.items
	if items == nil {
		return nil, fmt.Errorf(`%w: "messages" is not an array`, ErrNoMessages)
	}
	if v, ok := f.spans["system"]; ok {
		if m, ok := systemValue(textOrRaw{raw: data[v.start:v.end]}); ok {
			b.lead, b.leadStart, b.leadEnd = 1, v.start, v.end
			b.Messages = append(b.Messages, m)
		}
	}
	b.Messages = slices.Grow(b.Messages, len(items))
	for i, it := range items {
		raw := data[it.start:it.end]
		m, err := h.read(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", ErrBadMessage, i, err)
		}
		b.Messages = append(b.Messages, nameReturns(m, func(id string) processor.Part { return h.uses[id].part }))
		b.raws = append(b.raws, raw)
	}
	return b, nil
}

// systemValue reads "system": a string, or text blocks. Anything else
// (null, an empty string) is no system prompt of the history's, and is
// left where it is.
func systemValue(v textOrRaw) (processor.Message, bool) {
	s, raws, isText, err := content(v)
	switch {
	case err != nil:
		return processor.Message{}, false
	case isText:
		return processor.SystemMessage(s), s != ""
	}
	parts := make([]processor.Part, len(raws))
	for i, raw := range raws {
		var bl msgBlock
		if unmarshal(raw, &bl) != nil || bl.Type != "text" {
			return processor.Message{}, false
		}
		parts[i] = processor.SystemPrompt{Content: bl.Text}
	}
	return processor.NewRequest(parts...), len(parts) > 0
}

// read decodes one message.
func (h *msgHistory) read(raw []byte) (processor.Message, error) {
	if k := jsontext.Value(raw).Kind(); k != '{' {
		return processor.Message{}, fmt.Errorf("%s, not an object", kindName(k))
	}
	// The blocks are found where they are in the body, not copied.
	f, err := readObject(decoder(raw, checked()), false, "content", "role")
	if err != nil {
		return processor.Message{}, err
	}
	role, _ := stringValue(raw, f.spans["role"])
	c := textOrRaw{}
	if v, ok := f.spans["content"]; ok {
		c.raw = raw[v.start:v.end]
	}
	var s string
	var raws []jsontext.Value
	var isText bool
	if f.items != nil {
		raws, err = objects(raw, f.items)
	} else {
		s, raws, isText, err = content(c)
	}
	if err != nil {
		return processor.Message{}, err
	}
	switch role {
	case roleUser:
		if isText {
			return processor.UserMessage(s), nil
		}
		return h.user(raws)
	case roleAssistant:
		if isText {
			return processor.TextMessage(s), nil
		}
		return h.assistant(raws)
	case roleSystem:
		// Claude Code sends one among the messages (its environment).
		if sys, ok := systemValue(c); ok {
			return sys, nil
		}
		return processor.Message{}, fmt.Errorf("a system message that is neither text nor text blocks")
	}
	return processor.Message{}, fmt.Errorf("role %q", role)
}

// userBlock is what the codec reads of a block of a user message: a
// tool_result's members and a text block's; Other holds the other
// members.
type userBlock struct {
	Type      string         `json:"type"`
	Text      *string        `json:"text"`
	ToolUseID *string        `json:"tool_use_id"`
	Content   textOrRaw      `json:"content"`
	IsError   *bool          `json:"is_error"`
	Cache     jsontext.Value `json:"cache_control"`
	Other     jsontext.Value `json:",embed"`
}

// content returns a block that is not a tool_result, raw, read as bl (ok
// false when it could not be): a text block with no other member is
// plain text, any other is kept whole in Data, with its type.
func (bl *userBlock) content(raw jsontext.Value, ok bool) processor.UserContent {
	alone := bl.ToolUseID == nil && bl.Content.kind() == 0 && bl.IsError == nil && bl.Cache == nil && len(bl.Other) == 0
	if ok && bl.Type == "text" && bl.Text != nil && alone {
		return processor.UserContent{Type: "text", Text: *bl.Text}
	}
	return processor.UserContent{Type: bl.Type, Data: json.RawMessage(raw)}
}

// user reads a user message's blocks: tool results as tool returns, each
// run of other blocks as one user prompt.
func (h *msgHistory) user(raws []jsontext.Value) (processor.Message, error) {
	var parts []processor.Part
	var cs []processor.UserContent
	flush := func() {
		if cs != nil {
			parts = append(parts, processor.UserPrompt{Contents: cs})
			cs = nil
		}
	}
	for k, raw := range raws {
		var bl userBlock
		err := unmarshal(raw, &bl)
		if bl.Type != "tool_result" {
			cs = append(cs, bl.content(raw, err == nil))
			continue
		}
		if err != nil {
			return processor.Message{}, fmt.Errorf("block %d: %w", k, err)
		}
		flush()
		if bl.ToolUseID == nil || *bl.ToolUseID == "" {
			return processor.Message{}, fmt.Errorf("block %d: tool_result without a tool_use_id", k)
		}
		r := processor.ToolReturn{ToolCallID: *bl.ToolUseID}
		switch bl.Content.kind() {
		case 0:
		case '"':
			r.Content = bl.Content.text
		default:
			r.Contents, r.JSON = textBlocks(bl.Content.raw)
		}
		h.results[r.ToolCallID] = msgKept{part: r, raw: raw, isError: bl.IsError != nil && *bl.IsError, cache: json.RawMessage(bl.Cache)}
		parts = append(parts, r)
	}
	flush()
	if len(parts) == 0 {
		return processor.Message{}, fmt.Errorf("no content")
	}
	return processor.NewRequest(parts...), nil
}

// textBlocks reads a tool result's blocks: their texts when all are text
// blocks (a text block with more keys, cache_control or citations, too: a
// rewrite keeps its keys), else the blocks whole.
func textBlocks(raw jsontext.Value) ([]string, json.RawMessage) {
	_, blocks, isText, err := content(textOrRaw{raw: raw})
	if err != nil || isText {
		return nil, json.RawMessage(raw)
	}
	texts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		var bl struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if unmarshal(b, &bl) != nil || bl.Type != "text" || bl.Text == nil {
			return nil, json.RawMessage(raw)
		}
		texts = append(texts, *bl.Text)
	}
	return texts, nil
}

// assistant reads an assistant message's blocks.
func (h *msgHistory) assistant(raws []jsontext.Value) (processor.Message, error) {
	m := processor.Message{Kind: processor.Response}
	for k, raw := range raws {
		var bl msgBlock
		if err := unmarshal(raw, &bl); err != nil {
			return m, fmt.Errorf("block %d: %w", k, err)
		}
		switch bl.Type {
		case "text":
			// Keys beyond the text (citations, cache_control) go back
			// with the message unchanged only.
			m.Parts = append(m.Parts, processor.Text{Content: bl.Text})
			continue
		case "tool_use":
			if bl.ID == "" {
				return m, fmt.Errorf("block %d: tool_use without an id", k)
			}
			c := processor.ToolCall{ToolCallID: bl.ID, ToolName: bl.Name, Args: string(bl.Input)}
			h.uses[bl.ID] = msgKept{part: c, raw: raw}
			m.Parts = append(m.Parts, c)
			continue
		case "thinking":
			m.Parts = append(m.Parts, processor.Thinking{Content: bl.Thinking, Signature: bl.Signature, API: apiMessages, Raw: string(raw)})
			continue
		}
		m.Parts = append(m.Parts, processor.Opaque{API: apiMessages, Type: bl.Type, Raw: string(raw)})
	}
	return m, nil
}

func (h *msgHistory) encodeLead(m processor.Message) ([]byte, error) {
	if len(m.Parts) == 1 {
		return appendJSON(nil, m.Parts[0].(processor.SystemPrompt).Content)
	}
	blocks := make([]textPart, len(m.Parts))
	for i, p := range m.Parts {
		blocks[i] = textPart{"text", p.(processor.SystemPrompt).Content}
	}
	return appendJSON(nil, blocks)
}

// position names message i as the (i-lead)-th of "messages", or
// "system", and part j as the block it was read from.
func (h *msgHistory) position(b *Body, i, j int) string {
	where := fmt.Sprintf("message %d", i-b.lead)
	if i < b.lead {
		where = `"system"`
	}
	if j < 0 {
		return where
	}
	return fmt.Sprintf("%s block %d", where, len(pieces(b.Messages[i].Parts[:j])))
}

// fit joins each run of requests in a row into one (the system prompt's
// apart).
func (h *msgHistory) fit(out []processor.Message) []processor.Message {
	fitted := make([]processor.Message, 0, len(out))
	for i, m := range out {
		if i > 0 && m.Kind == processor.Request && out[i-1].Kind == processor.Request && !systemOnly(m) && !systemOnly(out[i-1]) {
			last := &fitted[len(fitted)-1]
			last.Parts = append(slices.Clip(last.Parts), m.Parts...)
			continue
		}
		fitted = append(fitted, m)
	}
	return fitted
}

func (h *msgHistory) encode(out []processor.Message, fresh []int, raws [][]byte) error {
	for _, j := range fresh {
		raw, err := h.message(out[j])
		if err != nil {
			return fmt.Errorf("message %d: %w", j, err)
		}
		raws[j] = raw
	}
	return nil
}

// message writes one message.
func (h *msgHistory) message(m processor.Message) ([]byte, error) {
	if systemOnly(m) {
		lead, err := h.encodeLead(m)
		if err != nil {
			return nil, err
		}
		return append(append([]byte(`{"role":"system","content":`), lead...), '}'), nil
	}
	role := roleAssistant
	if m.Kind == processor.Request {
		role = roleUser
		if len(m.Parts) == 1 {
			if p, ok := m.Parts[0].(processor.UserPrompt); ok && p.Contents == nil {
				return appendJSON(nil, struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				}{role, p.Content})
			}
		}
	}
	blocks, err := h.blocks(m.Parts)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("a %s with nothing to send", m.Kind)
	}
	var b bytes.Buffer
	b.WriteString(`{"role":"` + role + `","content":[`)
	b.Write(bytes.Join(blocks, []byte(",")))
	b.WriteString("]}")
	return b.Bytes(), nil
}

// blocks writes the content blocks of parts: calls and results as they
// came, or with what changed replaced, the others anew.
func (h *msgHistory) blocks(parts []processor.Part) ([][]byte, error) {
	type text = textPart
	var blocks [][]byte
	add := func(v any) error {
		b, err := appendJSON(nil, v)
		blocks = append(blocks, b)
		return err
	}
	for _, p := range parts {
		var err error
		switch p := p.(type) {
		case processor.UserPrompt:
			if p.Contents == nil {
				err = add(text{"text", p.Content})
				break
			}
			for _, c := range p.Contents {
				if c.Data != nil {
					blocks = append(blocks, c.Data)
					continue
				}
				if err = add(text{"text", c.Text}); err != nil {
					break
				}
			}
		case processor.ToolReturn:
			kept, ok := h.results[p.ToolCallID]
			if ok && samePart(kept.part, p) {
				blocks = append(blocks, kept.raw)
				continue
			}
			if ok {
				if r, ok := patchResult(kept.raw, p); ok {
					blocks = append(blocks, r)
					continue
				}
			}
			err = add(toolResult{Type: "tool_result", ToolUseID: p.ToolCallID, Content: json.RawMessage(resultValue(p)), IsError: kept.isError, Cache: kept.cache})
		case processor.RetryPrompt:
			if p.ToolCallID == "" {
				err = add(text{"text", p.Content})
				break
			}
			if kept, ok := h.results[p.ToolCallID]; ok {
				if r, ok := patchResult(kept.raw, p); ok {
					blocks = append(blocks, r)
					continue
				}
			}
			err = add(toolResult{Type: "tool_result", ToolUseID: p.ToolCallID, Content: p.Content, IsError: true})
		case processor.Text:
			err = add(text{"text", p.Content})
		case processor.ToolCall:
			if kept, ok := h.uses[p.ToolCallID]; ok && samePart(kept.part, p) {
				blocks = append(blocks, kept.raw)
				continue
			}
			err = add(struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}{"tool_use", p.ToolCallID, p.ToolName, validJSON(p.Args)})
		case processor.Thinking:
			// Thinking goes back only as the block it came in.
			if p.API == apiMessages && p.Raw != "" {
				blocks = append(blocks, []byte(p.Raw))
			}
		case processor.Opaque:
			if p.API != apiMessages {
				return nil, fmt.Errorf("%w: %s %s", errForeign, p.API, p.Type)
			}
			blocks = append(blocks, []byte(p.Raw))
		case processor.SystemPrompt:
			return nil, fmt.Errorf("a system prompt among other parts of a message")
		}
		if err != nil {
			return nil, err
		}
	}
	return blocks, nil
}

type toolResult struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	Content   any             `json:"content"`
	IsError   bool            `json:"is_error,omitempty"`
	Cache     json.RawMessage `json:"cache_control,omitempty"`
}

// Errors of the Messages rules, each wrapped with the index of the
// message at fault.
var (
	// ErrFirstNotUser: the first message is not the user's.
	ErrFirstNotUser = errors.New("first message not from the user")
	// ErrRolesNotAlternating: two assistant messages in a row (requests
	// in a row are written as one user message).
	ErrRolesNotAlternating = errors.New("user and assistant messages do not alternate")
	// ErrToolResultNotFirst: a tool_result block after other content in
	// its user message.
	ErrToolResultNotFirst = errors.New("tool_result block after other content")
	// ErrThinkingChanged: the thinking of the assistant turn in a tool
	// loop is no longer the one it sent.
	ErrThinkingChanged = errors.New("thinking of the turn in a tool loop changed")
)

// Validate checks the Messages rules: the first message (after the
// system prompt) is the user's, user and assistant messages alternate
// (requests in a row are written as one), tool_result blocks come first
// in their user message, and the thinking of the last assistant turn,
// when the history ends in its tool loop, is the one it sent.
func (messages) Validate(in, out []processor.Message) error {
	start := 0
	if len(out) > 0 && systemOnly(out[0]) {
		start = 1
	}
	for i := start; i < len(out); i++ {
		m := out[i]
		switch {
		case i == start && m.Kind != processor.Request:
			return at(i, -1, ErrFirstNotUser)
		case i > start && m.Kind == processor.Response && out[i-1].Kind == processor.Response:
			return at(i, -1, ErrRolesNotAlternating)
		}
		other := false
		for j, p := range m.Parts {
			if _, ok := p.(processor.ToolReturn); ok && other {
				return at(i, j, ErrToolResultNotFirst)
			}
			if _, ok := p.(processor.ToolReturn); !ok {
				other = true
			}
		}
	}
	return thinkingKept(in, out)
}

// thinkingKept checks that when in ends in the tool loop of its last
// response, the thinking of that response is in out unchanged.
func thinkingKept(in, out []processor.Message) error {
	last := -1
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Kind == processor.Response {
			last = i
			break
		}
	}
	if last < 0 || !in[last].HasToolCalls() {
		return nil
	}
	want := thinkingOf(in[last])
	if len(want) == 0 {
		return nil
	}
	id := in[last].ToolCalls()[0].ToolCallID
	for i := len(out) - 1; i >= 0; i-- {
		calls := out[i].ToolCalls()
		if len(calls) == 0 || calls[0].ToolCallID != id {
			continue
		}
		if !slices.Equal(thinkingOf(out[i]), want) {
			return at(i, -1, ErrThinkingChanged)
		}
		return nil
	}
	return fmt.Errorf("message %d of the history received: %w", last, ErrThinkingChanged)
}

// thinkingOf returns the thinking parts of m, redacted thinking included.
func thinkingOf(m processor.Message) []processor.Part {
	var out []processor.Part
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.Thinking:
			out = append(out, p)
		case processor.Opaque:
			if p.Type == "redacted_thinking" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Overflow reports Anthropic's answer to a prompt over the context
// window: a 400 invalid_request_error saying the prompt is too long.
func (messages) Overflow(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error.Type == "invalid_request_error" &&
		strings.Contains(strings.ToLower(e.Error.Message), "prompt is too long")
}

// Usage reads "usage" of a message, or of a stream's message_start (its
// message's) or message_delta event. Anthropic's input_tokens leaves out
// the cache's reads and writes: InputTokens is the three summed,
// CachedInputTokens the reads, CacheWriteInputTokens the writes.
func (messages) Usage(data []byte) (processor.Usage, bool) {
	u := readUsage(data)
	if u == nil {
		return processor.Usage{}, false
	}
	return processor.Usage{InputTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CachedInputTokens: u.CacheReadInputTokens, CacheWriteInputTokens: u.CacheCreationInputTokens, OutputTokens: u.OutputTokens}, true
}

// Refuse answers in Anthropic's error shape, {"type": "error", "error":
// {"type", "message"}}; the code leads the message.
func (messages) Refuse(status int, code, message string) []byte {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status >= 500:
		typ = "api_error"
	}
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	b, _ := appendJSON(nil, struct {
		Type  string `json:"type"`
		Error inner  `json:"error"`
	}{"error", inner{typ, code + ": " + message}})
	return append(b, '\n')
}

// resultValue returns the JSON value of a tool_result's "content" for r.
func resultValue(r processor.ToolReturn) []byte {
	switch {
	case len(r.JSON) > 0 && r.JSON[0] == '[':
		return r.JSON
	case r.JSON == nil && r.Contents != nil:
		texts := make([]json.RawMessage, len(r.Contents))
		for i, c := range r.Contents {
			texts[i], _ = appendJSON(nil, textPart{"text", c})
		}
		return transcript.JoinRawMessages(texts)
	}
	return appendString(nil, r.ToolReturnContent())
}

// patchResult returns a tool_result block, as it came, written for p (a
// tool return or a retry prompt answering its call): its content replaced
// and every other key (is_error, cache_control, keys abridge does not
// know) kept. When the content was text blocks and becomes one text (a
// trimmed or cleared output), the text goes in the last block, which
// keeps its keys (cache_control, citations), and the blocks before it are
// dropped; text blocks as many as before each keep theirs.
func patchResult(block []byte, p processor.Part) ([]byte, bool) {
	var value []byte
	var texts []string
	switch p := p.(type) {
	case processor.ToolReturn:
		value = resultValue(p)
		switch {
		case p.JSON != nil:
		case p.Contents != nil:
			texts = p.Contents
		default:
			texts = []string{p.Content}
		}
	case processor.RetryPrompt:
		out, err := patch(block, appendString(nil, p.Content), "content")
		if err == nil {
			out, err = patch(out, []byte("true"), "is_error")
		}
		return out, err == nil
	default:
		return nil, false
	}
	c, err := lookup(block, "content")
	if err == nil && texts != nil && block[c.start] == '[' {
		elems, err := elements(block, c)
		notText := func(e span) bool { return stringAt(block[e.start:e.end], "type") != "text" }
		if err == nil && len(elems) > 0 && !slices.ContainsFunc(elems, notText) {
			switch {
			case len(texts) == len(elems):
				vals := make([][]byte, len(elems))
				for k, e := range elems {
					if vals[k], err = patch(block[e.start:e.end], appendString(nil, texts[k]), "text"); err != nil {
						return nil, false
					}
				}
				return spliceAll(block, elems, vals), true
			case len(texts) == 1:
				last := elems[len(elems)-1]
				v, err := patch(block[last.start:last.end], appendString(nil, texts[0]), "text")
				if err != nil {
					return nil, false
				}
				return spliceAll(block, []span{{elems[0].start, last.end}}, [][]byte{v}), true
			}
		}
	}
	out, err := patch(block, value, "content")
	return out, err == nil
}

// pieces returns parts with each user prompt of several contents split in
// one per content: one piece per block of a message's content.
func pieces(parts []processor.Part) []processor.Part {
	out := make([]processor.Part, 0, len(parts))
	for _, p := range parts {
		if u, ok := p.(processor.UserPrompt); ok && u.Contents != nil {
			for _, c := range u.Contents {
				out = append(out, processor.UserPrompt{Contents: []processor.UserContent{c}, Name: u.Name})
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// rewrite writes a changed message as the client's message object (its
// role and other keys kept) whose content holds each block as it came, or
// with what changed replaced (a tool_result's content, a text), and the
// blocks of new parts (a summary marker joined to it) written anew; and a
// changed "system" as its blocks, each as it came or with its text
// replaced (cache_control kept).
func (h *msgHistory) rewrite(orig processor.Message, raw []byte, m processor.Message, lead bool) ([]byte, bool) {
	if !sameMeta(orig, m) {
		return nil, false
	}
	if lead {
		return h.rewriteContent(raw, orig, m, true)
	}
	c, err := lookup(raw, "content")
	if err != nil {
		return nil, false
	}
	v, ok := h.rewriteContent(raw[c.start:c.end], orig, m, false)
	if !ok {
		return nil, false
	}
	return splice(raw, c, v), true
}

// rewriteContent returns the content (or the system prompt) raw, read as
// orig, written for m, or false when m is not orig changed: when no block
// is kept as it was nor tied to its part by a call ID, unless anchored
// (the system prompt is always the one it was).
func (h *msgHistory) rewriteContent(raw []byte, orig, m processor.Message, anchored bool) ([]byte, bool) {
	was, now := pieces(orig.Parts), pieces(m.Parts)
	var blocks []span
	if raw[0] == '"' {
		if len(was) != 1 {
			return nil, false
		}
		blocks = []span{{0, len(raw)}} // the string: a text block
	} else {
		var err error
		if blocks, err = elements(raw, span{0, len(raw)}); err != nil || len(blocks) != len(was) {
			return nil, false
		}
	}
	type out struct {
		from int    // the block it was, or -1
		b    []byte // its bytes
	}
	outs := make([]out, 0, len(now))
	u := 0
	for pos, q := range now {
		// The next block kept as it was (those before it dropped).
		if v := slices.IndexFunc(was[u:], func(p processor.Part) bool { return samePart(p, q) }); v >= 0 {
			u += v
			outs = append(outs, out{u, raw[blocks[u].start:blocks[u].end]})
			u++
			anchored = true
			continue
		}
		// The next block changed, unless it comes later as it was.
		if u < len(was) && !slices.ContainsFunc(now[pos+1:], func(p processor.Part) bool { return samePart(p, was[u]) }) {
			if b, id, ok := patchBlock(raw[blocks[u].start:blocks[u].end], was[u], q); ok {
				outs = append(outs, out{u, b})
				u++
				anchored = anchored || id
				continue
			}
		}
		if sp, ok := q.(processor.SystemPrompt); ok {
			b, err := appendJSON(nil, textPart{"text", sp.Content})
			if err != nil {
				return nil, false
			}
			outs = append(outs, out{-1, b})
			continue
		}
		bs, err := h.blocks([]processor.Part{q})
		if err != nil || len(bs) != 1 {
			return nil, false
		}
		outs = append(outs, out{-1, bs[0]})
	}
	if !anchored {
		return nil, false
	}
	inPlace := len(outs) == len(blocks) && raw[0] == '['
	for k, o := range outs {
		inPlace = inPlace && o.from == k
	}
	if raw[0] == '"' && len(outs) == 1 && outs[0].from == 0 {
		return outs[0].b, true
	}
	vals := make([][]byte, len(outs))
	for k, o := range outs {
		vals[k] = o.b
		if raw[0] == '"' && o.from == 0 {
			// The string, among other blocks: a text block.
			vals[k] = append(append([]byte(`{"type":"text","text":`), o.b...), '}')
		}
	}
	if inPlace {
		return spliceAll(raw, blocks, vals), true
	}
	elems := make([]json.RawMessage, len(vals))
	for k, v := range vals {
		elems[k] = v
	}
	return transcript.JoinRawMessages(elems), true
}

// patchBlock returns a block, read as the piece was, written for the
// piece now with what changed replaced, whether they are tied by a call
// ID, and false when now is not was changed. A block that is the whole
// string content is the string.
func patchBlock(block []byte, was, now processor.Part) ([]byte, bool, bool) {
	text := func(s string) ([]byte, bool, bool) {
		if block[0] == '"' {
			return appendString(nil, s), false, true
		}
		if stringAt(block, "type") != "text" {
			return nil, false, false
		}
		out, err := patch(block, appendString(nil, s), "text")
		return out, false, err == nil
	}
	switch w := was.(type) {
	case processor.ToolReturn:
		id, _, ok := outputValue(now)
		if !ok || id != w.ToolCallID || block[0] != '{' {
			return nil, false, false
		}
		out, ok := patchResult(block, now)
		return out, true, ok
	case processor.ToolCall:
		c, ok := now.(processor.ToolCall)
		if !ok || c.ToolCallID != w.ToolCallID || block[0] != '{' {
			return nil, false, false
		}
		out, err := patch(block, validJSON(c.Args), "input")
		if err == nil && c.ToolName != w.ToolName {
			out, err = patch(out, appendString(nil, c.ToolName), "name")
		}
		return out, true, err == nil
	case processor.Text:
		if t, ok := now.(processor.Text); ok {
			return text(t.Content)
		}
	case processor.SystemPrompt:
		if s, ok := now.(processor.SystemPrompt); ok {
			return text(s.Content)
		}
	case processor.UserPrompt:
		n, ok := now.(processor.UserPrompt)
		if !ok || n.Name != w.Name {
			return nil, false, false
		}
		switch {
		case n.Contents == nil:
			return text(n.Content)
		case len(n.Contents) == 1 && n.Contents[0].Data == nil:
			return text(n.Contents[0].Text)
		}
	}
	return nil, false, false
}
