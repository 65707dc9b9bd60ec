package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/abridge-go/abridge/processor"
)

// Responses is the codec of the OpenAI Responses API (POST …/responses).
// The history is the body's "input" (a string is one user prompt) after
// "instructions", which, when a non-empty string, is its first message, a
// system prompt. A run of items the model wrote (reasoning, assistant
// messages, calls, unmodelled items that are not outputs) is one
// response, so a reasoning item never loses the item after it; each user,
// system or developer message, each tool output and each unmodelled item
// ending in "_output" or "_response" is one request. Reasoning items
// become [processor.Thinking] holding the item whole, other unmodelled
// items [processor.Opaque] parts, written back as they came. A body with
// "previous_response_id" is [Body.Stored]: its history is on the server.
var Responses Codec = responses{}

type responses struct{}

// API returns "responses".
func (responses) API() string { return "responses" }

// Item types and roles of the Responses input.
const (
	respMessage          = "message"
	respFunctionCall     = "function_call"
	respFunctionOutput   = "function_call_output"
	respCustomCall       = "custom_tool_call"
	respCustomOutput     = "custom_tool_call_output"
	respReasoning        = "reasoning"
	apiResponses         = "responses"
	roleUser, roleSystem = "user", "system"
	roleDeveloper        = "developer"
	roleAssistant        = "assistant"
)

// respItem is what the codec reads of an input item.
type respItem struct {
	Type      string    `json:"type"`
	Role      string    `json:"role"`
	Content   textOrRaw `json:"content"`
	CallID    string    `json:"call_id"`
	Name      string    `json:"name"`
	Arguments string    `json:"arguments"`
	Input     string    `json:"input"`
	Output    textOrRaw `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// respContent is one part of a message item's content (a text or a
// refusal when written anew).
type respContent struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

// respHistory remembers the calls and outputs as received, by call ID (the
// last of each), to name a tool output from its call, and to write an
// unchanged one as it came and a changed one as its kind.
type respHistory struct {
	calls   map[string]respKept
	outputs map[string]respKept
}

type respKept struct {
	part   processor.Part
	raw    []byte
	custom bool
}

// Parse reads a Responses request body.
func (responses) Parse(data []byte, reserve func(tokens int) error) (*Body, error) {
	h := &respHistory{calls: map[string]respKept{}, outputs: map[string]respKept{}}
	b, f, err := parseTop(data, Responses, h, reserve, "input", "instructions", "previous_response_id")
	if err != nil {
		return nil, err
	}
	fs, items, in := f.spans, f.items, f.spans["input"]
	if v, ok := fs["previous_response_id"]; ok {
		id, _ := stringValue(data, v)
		b.Stored = id != ""
	}
	// Instructions that are a string and not empty are the system prompt.
	if v, ok := fs["instructions"]; ok {
		if s, _ := stringValue(data, v); s != "" {
			b.lead, b.leadStart, b.leadEnd = 1, v.start, v.end
			b.Messages = append(b.Messages, processor.SystemMessage(s))
		}
	}
	if s, isString := stringValue(data, in); isString {
		m := processor.UserMessage(s)
		raw, err := h.message(nil, m)
		if err != nil {
			return nil, err
		}
		b.Messages = append(b.Messages, m)
		b.raws = append(b.raws, raw)
		return b, nil
	}
	if items == nil {
		return nil, fmt.Errorf(`%w: "input" is neither a string nor an array`, ErrNoMessages)
	}
	b.Messages = slices.Grow(b.Messages, len(items))
	b.first = make([]int, 0, len(items))
	// The items of the response being read, from the runFirst-th at
	// runStart.
	var run []processor.Message
	runStart, runFirst := 0, 0
	closeRun := func(end int) {
		if len(run) == 0 {
			return
		}
		// One response: the parts and metadata of its items, in order.
		resp := processor.Message{Kind: processor.Response}
		for _, m := range run {
			resp.Parts = append(resp.Parts, m.Parts...)
			if m.Meta != nil {
				resp = resp.WithMeta(m.Info())
			}
		}
		b.Messages = append(b.Messages, resp)
		b.raws = append(b.raws, data[runStart:end])
		b.first = append(b.first, runFirst)
		run = run[:0]
	}
	prevEnd := 0
	for i, it := range items {
		raw := data[it.start:it.end]
		part, request, err := h.read(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: input item %d: %w", ErrBadMessage, i, err)
		}
		if request {
			closeRun(prevEnd)
			b.Messages = append(b.Messages, nameReturns(part, func(id string) processor.Part { return h.calls[id].part }))
			b.raws = append(b.raws, raw)
			b.first = append(b.first, i)
		} else {
			if len(run) == 0 {
				runStart, runFirst = it.start, i
			}
			run = append(run, part)
		}
		prevEnd = it.end
	}
	closeRun(prevEnd)
	return b, nil
}

// nameReturns returns m with each tool return named from its call: the
// part call returns for its ID (the last call of that ID read before m).
func nameReturns(m processor.Message, call func(id string) processor.Part) processor.Message {
	for j, p := range m.Parts {
		r, ok := p.(processor.ToolReturn)
		if !ok {
			continue
		}
		c, _ := call(r.ToolCallID).(processor.ToolCall)
		if c.ToolName != r.ToolName {
			r.ToolName = c.ToolName
			m.Parts = slices.Clone(m.Parts)
			m.Parts[j] = r
		}
	}
	return m
}

// read decodes one input item: a request message, or the parts (and
// metadata) it adds to a response, with request false.
func (h *respHistory) read(raw []byte) (m processor.Message, request bool, err error) {
	var it respItem
	if err := decodeObject(raw, &it); err != nil {
		return m, false, err
	}
	opaque := func(req bool) (processor.Message, bool, error) {
		o := processor.Opaque{API: apiResponses, Type: it.Type, Raw: string(raw)}
		if req {
			return processor.NewRequest(o), true, nil
		}
		return processor.NewResponse(o), false, nil
	}
	switch it.Type {
	case "", respMessage:
		switch it.Role {
		case roleUser, roleSystem, roleDeveloper:
			p, ok, err := requestContent(it.Role, it.Content)
			if err != nil {
				return m, false, err
			}
			if !ok {
				return opaque(true)
			}
			return processor.NewRequest(p...), true, nil
		case roleAssistant:
			resp, ok, err := assistantContent(it.Content)
			if err != nil {
				return m, false, err
			}
			if !ok {
				return opaque(false)
			}
			return resp, false, nil
		}
		return m, false, fmt.Errorf("message of role %q", it.Role)
	case respFunctionCall, respCustomCall:
		if it.CallID == "" {
			return m, false, fmt.Errorf("%s without a call_id", it.Type)
		}
		args := it.Arguments
		if it.Type == respCustomCall {
			args = it.Input
		}
		c := processor.ToolCall{ToolCallID: it.CallID, ToolName: it.Name, Args: args}
		h.calls[it.CallID] = respKept{part: c, raw: raw, custom: it.Type == respCustomCall}
		return processor.NewResponse(c), false, nil
	case respFunctionOutput, respCustomOutput:
		if it.CallID == "" {
			return m, false, fmt.Errorf("%s without a call_id", it.Type)
		}
		r := processor.ToolReturn{ToolCallID: it.CallID}
		switch it.Output.kind() {
		case 0:
		case '"':
			r.Content = it.Output.text
		default:
			r.JSON = json.RawMessage(it.Output.raw)
		}
		h.outputs[it.CallID] = respKept{part: r, raw: raw, custom: it.Type == respCustomOutput}
		return processor.NewRequest(r), true, nil
	case respReasoning:
		texts := make([]string, len(it.Summary))
		for i, s := range it.Summary {
			texts[i] = s.Text
		}
		return processor.NewResponse(processor.Thinking{Content: strings.Join(texts, "\n"), API: apiResponses, Raw: string(raw)}), false, nil
	}
	return opaque(strings.HasSuffix(it.Type, "_output") || strings.HasSuffix(it.Type, "_response"))
}

// content reads a message's content: a string (text, isText set), or an
// array of content parts (slices of its JSON), each an object; anything
// else is an error.
func content(c textOrRaw) (text string, parts []jsontext.Value, isText bool, err error) {
	v := c.raw
	switch c.kind() {
	case '"':
		if !c.isText {
			err = unmarshal(v, &c.text)
		}
		return c.text, nil, true, err
	case '[':
		_, spans, _, err := arrayElements(decoder(v, checked()), false)
		if err != nil {
			return "", nil, false, err
		}
		parts, err = objects(v, spans)
		return "", parts, false, err
	case 0:
		return "", nil, false, errors.New("no content")
	}
	return "", nil, false, fmt.Errorf("content is %s, not a string or an array", kindName(v.Kind()))
}

// objects returns the content parts at spans in v, each an object.
func objects(v []byte, spans []span) ([]jsontext.Value, error) {
	parts := make([]jsontext.Value, len(spans))
	for k, sp := range spans {
		parts[k] = v[sp.start:sp.end]
		if kind := parts[k].Kind(); kind != '{' {
			return nil, fmt.Errorf("content part %d is %s, not an object", k, kindName(kind))
		}
	}
	return parts, nil
}

// kindName names a JSON value's kind.
func kindName(k jsontext.Kind) string {
	names := map[jsontext.Kind]string{'n': "null", 'f': "a boolean", 't': "a boolean", '"': "a string", '0': "a number", '{': "an object", '[': "an array"}
	if name, ok := names[k]; ok {
		return name
	}
	return "nothing"
}

// requestContent reads the content of a user, system or developer message:
// a string, or input parts (input_text plain; any other part, or one with
// more keys, kept whole in UserContent.Data). System and developer
// messages take text alone: ok is false for others, and for no parts.
func requestContent(role string, v textOrRaw) (parts []processor.Part, ok bool, err error) {
	s, raws, isText, err := content(v)
	switch {
	case err != nil:
		return nil, false, err
	case isText && role == roleUser:
		return []processor.Part{processor.UserPrompt{Content: s}}, true, nil
	case isText:
		return []processor.Part{processor.SystemPrompt{Content: s, Developer: role == roleDeveloper}}, true, nil
	case len(raws) == 0:
		return nil, false, nil
	}
	var cs []processor.UserContent
	for _, raw := range raws {
		c, plain := plainText(raw, "input_text")
		if role != roleUser {
			if !plain {
				return nil, false, nil
			}
			parts = append(parts, processor.SystemPrompt{Content: c.Text, Developer: role == roleDeveloper})
			continue
		}
		cs = append(cs, c)
	}
	if role == roleUser {
		return []processor.Part{processor.UserPrompt{Contents: cs}}, true, nil
	}
	return parts, true, nil
}

// partFields is what the codecs read of a content part: its type, text
// and refusal, and its other members, if any.
type partFields struct {
	Type    string         `json:"type"`
	Text    *string        `json:"text"`
	Refusal *string        `json:"refusal"`
	Other   jsontext.Value `json:",embed"`
}

// plainText reads a content part, an object: a text part of type typ with
// no other key is plain, a UserContent of type "text" (as processors read
// text, whatever the API calls it); any other is kept whole in Data, with
// its type.
func plainText(raw jsontext.Value, typ string) (processor.UserContent, bool) {
	var c partFields
	if unmarshal(raw, &c) == nil && c.Type == typ && c.Text != nil && c.Refusal == nil && len(c.Other) == 0 {
		return processor.UserContent{Type: "text", Text: *c.Text}, true
	}
	return processor.UserContent{Type: c.Type, Data: json.RawMessage(raw)}, false
}

// assistantContent reads an assistant message: a string, or output_text
// and refusal parts; ok is false for other parts.
func assistantContent(v textOrRaw) (m processor.Message, ok bool, err error) {
	m = processor.Message{Kind: processor.Response}
	s, raws, isText, err := content(v)
	switch {
	case err != nil:
		return m, false, err
	case isText:
		m.Parts = []processor.Part{processor.Text{Content: s}}
		return m, true, nil
	}
	for _, raw := range raws {
		var c partFields
		switch {
		case unmarshal(raw, &c) != nil:
			return m, false, nil
		case c.Type == "output_text" && c.Text != nil:
			// Keys beyond the text (annotations, logprobs) go back with
			// the message unchanged only.
			m.Parts = append(m.Parts, processor.Text{Content: *c.Text})
		case c.Type == "refusal" && c.Refusal != nil && c.Text == nil && len(c.Other) == 0 && m.Meta == nil:
			m = m.WithMeta(processor.Meta{Refusal: *c.Refusal})
		default:
			return m, false, nil
		}
	}
	return m, len(m.Parts) > 0 || m.Meta != nil, nil
}

func (h *respHistory) encodeLead(m processor.Message) ([]byte, error) {
	texts := make([]string, len(m.Parts))
	for i, p := range m.Parts {
		texts[i] = p.(processor.SystemPrompt).Content
	}
	return appendJSON(nil, strings.Join(texts, "\n\n"))
}

func (h *respHistory) encode(out []processor.Message, fresh []int, raws [][]byte) error {
	for _, j := range fresh {
		raw, err := h.message(nil, out[j])
		if err != nil {
			return fmt.Errorf("message %d: %w", j, err)
		}
		raws[j] = raw
	}
	return nil
}

// errForeign: a part carried for another wire format.
var errForeign = errors.New("item of another wire format")

// message appends the items of m, comma-separated.
func (h *respHistory) message(dst []byte, m processor.Message) ([]byte, error) {
	n := len(dst)
	item := func(v any) error {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		var err error
		dst, err = appendJSON(dst, v)
		return err
	}
	rawItem := func(raw []byte) {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		dst = append(dst, raw...)
	}
	type content = respContent
	type msg struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	var system []content
	var role string
	flushSystem := func() error {
		if len(system) == 0 {
			return nil
		}
		var c any = system
		if len(system) == 1 {
			c = system[0].Text
		}
		system = nil
		return item(msg{respMessage, role, c})
	}
	for _, p := range m.Parts {
		if sp, ok := p.(processor.SystemPrompt); ok {
			r := roleSystem
			if sp.Developer {
				r = roleDeveloper
			}
			if r != role {
				if err := flushSystem(); err != nil {
					return dst, err
				}
			}
			role = r
			system = append(system, content{Type: "input_text", Text: sp.Content})
			continue
		}
		if err := flushSystem(); err != nil {
			return dst, err
		}
		var err error
		switch p := p.(type) {
		case processor.UserPrompt:
			var c any = p.Content
			if p.Contents != nil {
				parts := make([]json.RawMessage, len(p.Contents))
				for i, uc := range p.Contents {
					if uc.Data != nil {
						parts[i] = uc.Data
						continue
					}
					t := uc.Type
					if t == "text" || t == "" {
						t = "input_text"
					}
					if parts[i], err = appendJSON(nil, content{Type: t, Text: uc.Text}); err != nil {
						return dst, err
					}
				}
				c = parts
			}
			err = item(msg{respMessage, roleUser, c})
		case processor.ToolReturn:
			kept, ok := h.outputs[p.ToolCallID]
			if ok && samePart(kept.part, p) {
				rawItem(kept.raw)
				continue
			}
			if ok {
				// The item as it came, with its output replaced.
				_, v, _ := outputValue(p)
				if r, err := patch(kept.raw, v, "output"); err == nil {
					rawItem(r)
					continue
				}
			}
			typ := respFunctionOutput
			if ok && kept.custom || !ok && h.calls[p.ToolCallID].custom {
				typ = respCustomOutput
			}
			var output any = p.ToolReturnContent()
			if len(p.JSON) > 0 && p.JSON[0] == '[' {
				output = p.JSON
			}
			err = item(struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Output any    `json:"output"`
			}{typ, p.ToolCallID, output})
		case processor.RetryPrompt:
			if p.ToolCallID == "" {
				err = item(msg{respMessage, roleUser, p.Content})
				break
			}
			err = item(struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Output string `json:"output"`
			}{respFunctionOutput, p.ToolCallID, p.Content})
		case processor.Text:
			err = item(msg{respMessage, roleAssistant, []content{{Type: "output_text", Text: p.Content}}})
		case processor.ToolCall:
			kept, ok := h.calls[p.ToolCallID]
			switch {
			case ok && samePart(kept.part, p):
				rawItem(kept.raw)
			case ok && kept.custom:
				err = item(struct {
					Type   string `json:"type"`
					CallID string `json:"call_id"`
					Name   string `json:"name"`
					Input  string `json:"input"`
				}{respCustomCall, p.ToolCallID, p.ToolName, p.Args})
			default:
				err = item(struct {
					Type      string `json:"type"`
					CallID    string `json:"call_id"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				}{respFunctionCall, p.ToolCallID, p.ToolName, p.Args})
			}
		case processor.Thinking:
			// Reasoning goes back only as the item it came in.
			if p.API == apiResponses && p.Raw != "" {
				rawItem([]byte(p.Raw))
			}
		case processor.Opaque:
			if p.API != apiResponses {
				return dst, fmt.Errorf("%w: %s %s", errForeign, p.API, p.Type)
			}
			rawItem([]byte(p.Raw))
		}
		if err != nil {
			return dst, err
		}
	}
	if err := flushSystem(); err != nil {
		return dst, err
	}
	if r := m.Refusal(); r != "" {
		if err := item(msg{respMessage, roleAssistant, []content{{Type: "refusal", Refusal: r}}}); err != nil {
			return dst, err
		}
	}
	if len(dst) == n {
		return dst, fmt.Errorf("a %s with nothing to send", m.Kind)
	}
	return dst, nil
}

// Errors of the Responses rules, each wrapped with the index of the
// message at fault.
var (
	// ErrOrphanOutput: a tool output whose call_id no earlier call has.
	ErrOrphanOutput = errors.New("tool output without its call")
	// ErrLoneReasoning: a reasoning item with no item after it in its
	// response.
	ErrLoneReasoning = errors.New("reasoning item without the item it precedes")
)

// Validate checks the Responses rules: every tool output has its call
// (by call_id) earlier in the history, and a reasoning item is followed,
// in its response, by the item it belongs with.
func (responses) Validate(_, out []processor.Message) error {
	calls := map[string]bool{} // the IDs of the calls so far
	for i, m := range out {
		for j, p := range m.Parts {
			switch p := p.(type) {
			case processor.ToolCall:
				calls[p.ToolCallID] = true
			case processor.ToolReturn:
				if !calls[p.ToolCallID] {
					return at(i, j, fmt.Errorf("output for call %q: %w", p.ToolCallID, ErrOrphanOutput))
				}
			case processor.Thinking:
				if p.API == apiResponses && !slices.ContainsFunc(m.Parts[j+1:], notThinking) {
					return at(i, j, ErrLoneReasoning)
				}
			}
		}
	}
	return nil
}

// notThinking reports whether p is not thinking.
func notThinking(p processor.Part) bool {
	_, ok := p.(processor.Thinking)
	return !ok
}

// Overflow reports a 400 whose error code is one of a context overflow.
func (responses) Overflow(status int, body []byte) bool { return openAIOverflow(status, body) }

// Usage reads "usage" (input_tokens, input_tokens_details.cached_tokens,
// output_tokens) of a response, or of the response a stream's
// response.completed event carries.
func (responses) Usage(data []byte) (processor.Usage, bool) {
	u := readUsage(data)
	if u == nil {
		return processor.Usage{}, false
	}
	return processor.Usage{InputTokens: u.InputTokens, CachedInputTokens: u.InputTokensDetails.CachedTokens, OutputTokens: u.OutputTokens}, true
}

// Refuse answers in OpenAI's error shape, naming "input" as the field at
// fault when the error is about the history.
func (responses) Refuse(status int, code, message string) []byte {
	return openAIError(status, code, message, "input")
}

// fit returns out: every history the processors make is one the API takes.
func (*respHistory) fit(out []processor.Message) []processor.Message { return out }

// position names message i as the item of "input" its part j was read
// from (its first item when j is -1), or "instructions", or "input" when
// that is a string.
func (*respHistory) position(b *Body, i, j int) string {
	switch {
	case i < b.lead:
		return `"instructions"`
	case b.first == nil:
		return `"input"`
	}
	item := b.first[i-b.lead]
	if j >= 0 && b.Messages[i].Kind == processor.Response {
		// A response of several items: count the parts each gives.
		_, parts, _ := runParts(b.raws[i-b.lead])
		for k := 0; k < len(parts) && j >= len(parts[k]); k++ {
			j -= len(parts[k])
			item++
		}
	}
	return fmt.Sprintf("input item %d", item)
}

// outputValue returns the call ID a tool output answers and the JSON value
// of its "output", for a tool return or a retry prompt answering a call.
func outputValue(p processor.Part) (string, []byte, bool) {
	switch p := p.(type) {
	case processor.ToolReturn:
		if len(p.JSON) > 0 && p.JSON[0] == '[' {
			return p.ToolCallID, p.JSON, true
		}
		return p.ToolCallID, appendString(nil, p.ToolReturnContent()), true
	case processor.RetryPrompt:
		return p.ToolCallID, appendString(nil, p.Content), p.ToolCallID != ""
	}
	return "", nil, false
}

// rewrite writes a changed tool output as its item with "output" replaced,
// and a changed response as its items, each as it came or with the texts,
// arguments or name that changed replaced (ids, status, annotations and
// unknown keys kept). The instructions are a string: nothing of theirs is
// lost writing them anew.
func (h *respHistory) rewrite(orig processor.Message, raw []byte, m processor.Message, lead bool) ([]byte, bool) {
	if lead || !sameMeta(orig, m) {
		return nil, false
	}
	if m.Kind == processor.Request {
		if len(orig.Parts) != 1 || len(m.Parts) != 1 {
			return nil, false
		}
		o, isReturn := orig.Parts[0].(processor.ToolReturn)
		id, v, ok := outputValue(m.Parts[0])
		if !isReturn || !ok || id != o.ToolCallID {
			return nil, false
		}
		out, err := patch(raw, v, "output")
		return out, err == nil
	}
	items, parts, err := runParts(raw)
	if err != nil {
		return nil, false
	}
	vals := make([][]byte, 0, len(items))
	kept := make([]span, 0, len(items))
	anchored, pos := false, 0
	for k, it := range items {
		was := parts[k]
		if pos+len(was) > len(m.Parts) {
			continue // dropped
		}
		now := m.Parts[pos : pos+len(was)]
		v, ok := patchItem(raw[it.start:it.end], was, now, &anchored)
		if !ok {
			continue // dropped
		}
		kept, vals = append(kept, it), append(vals, v)
		pos += len(was)
	}
	if pos != len(m.Parts) || !anchored {
		return nil, false
	}
	if len(kept) == len(items) {
		return spliceAll(raw, kept, vals), true
	}
	return bytes.Join(vals, []byte(",")), true
}

// runParts returns the items of a response of several, raw, as Parse kept
// it, and the parts each was read as.
func runParts(raw []byte) ([]span, [][]processor.Part, error) {
	items, err := valuesOf(raw)
	if err != nil {
		return nil, nil, err
	}
	scratch := &respHistory{calls: map[string]respKept{}, outputs: map[string]respKept{}}
	parts := make([][]processor.Part, len(items))
	for k, it := range items {
		m, request, err := scratch.read(raw[it.start:it.end])
		if err != nil || request {
			return nil, nil, fmt.Errorf("%w: item %d is not of a response", errPatch, k)
		}
		parts[k] = m.Parts
	}
	return items, parts, nil
}

// patchItem returns an item of a response, read as the parts was, written
// as the parts now (as many): as it came when they are the same, else
// with what changed replaced; false when now is not was changed. anchored
// is set when a part is the same or a call of the same ID.
func patchItem(raw []byte, was, now []processor.Part, anchored *bool) ([]byte, bool) {
	same := true
	for k := range was {
		if samePart(was[k], now[k]) {
			*anchored = true
		} else {
			same = false
		}
	}
	if same {
		return raw, true
	}
	switch w := was[0].(type) {
	case processor.ToolCall:
		c, ok := now[0].(processor.ToolCall)
		if !ok || c.ToolCallID != w.ToolCallID {
			return nil, false
		}
		*anchored = true
		out := raw
		var err error
		if c.ToolName != w.ToolName {
			if out, err = patch(out, appendString(nil, c.ToolName), "name"); err != nil {
				return nil, false
			}
		}
		if c.Args != w.Args {
			key := "arguments"
			if stringAt(raw, "type") == respCustomCall {
				key = "input"
			}
			if out, err = patch(out, appendString(nil, c.Args), key); err != nil {
				return nil, false
			}
		}
		return out, true
	case processor.Text:
		// An assistant message: its content a string, or parts whose
		// output_text ones are the texts, in order.
		c, err := lookup(raw, "content")
		if err != nil {
			return nil, false
		}
		if raw[c.start] == '"' {
			t, ok := now[0].(processor.Text)
			if !ok {
				return nil, false
			}
			return splice(raw, c, appendString(nil, t.Content)), true
		}
		elems, err := elements(raw, c)
		if err != nil {
			return nil, false
		}
		var spans []span
		var vals [][]byte
		k := 0
		for _, e := range elems {
			if stringAt(raw[e.start:e.end], "type") != "output_text" {
				continue
			}
			if k >= len(now) {
				return nil, false
			}
			t, ok := now[k].(processor.Text)
			if !ok {
				return nil, false
			}
			if t != was[k] {
				v, err := patch(raw[e.start:e.end], appendString(nil, t.Content), "text")
				if err != nil {
					return nil, false
				}
				spans, vals = append(spans, e), append(vals, v)
			}
			k++
		}
		if k != len(now) {
			return nil, false
		}
		return spliceAll(raw, spans, vals), true
	}
	return nil, false
}
