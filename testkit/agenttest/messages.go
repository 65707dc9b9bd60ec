package agenttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/abridge-go/abridge/testkit/openaitest"
)

// Messages is a fake Anthropic Messages API (POST …/messages, and
// …/messages/count_tokens) playing a model through Task: each answer is a
// signed thinking block and a tool_use running the next command, then a
// text block with the final answer. Streamed requests get the event
// stream Claude Code and the Anthropic clients read (message_start,
// content_block_start/delta/stop with thinking_delta, signature_delta,
// input_json_delta and text_delta, message_delta with usage,
// message_stop). A summarizer's request gets a summary; one that declares
// no shell tool, a text answer saying so. Set Task before serving; it is
// safe for concurrent use.
type Messages struct {
	Task Task

	recorder
	// thinking maps each signature the fake sent to its thinking text.
	thinking sync.Map
}

// ToolUsePrefix is the prefix of the fake's tool_use IDs, followed by the
// round.
const ToolUsePrefix = "toolu_step_"

type messagesBody struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []tool    `json:"tools"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is the part of a content block the fake reads.
type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
}

// blocks returns a message's content blocks; a string content is one
// text block.
func (m message) blocks() []block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var out []block
	json.Unmarshal(m.Content, &out)
	return out
}

// ServeHTTP answers POST …/messages and …/messages/count_tokens.
func (u *Messages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: data}
	if err == nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens") {
		u.add(req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, len(data)/4)
		return
	}
	if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
		u.add(req)
		openaitest.WriteAnthropicError(w, http.StatusNotFound, "not_found_error", "unknown path "+r.Method+" "+r.URL.Path)
		return
	}
	var body messagesBody
	if err := json.Unmarshal(data, &body); err != nil {
		n := u.add(req)
		u.problem(n, "body is not a Messages request: %v", err)
		openaitest.WriteAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error())
		return
	}
	req.Stream = body.Stream
	req.Summary = openaitest.IsSummaryBody(data)
	n := u.add(req)
	var content []map[string]any
	stop := "end_turn"
	switch {
	case req.Summary:
		content = []map[string]any{{"type": "text", "text": summaryText(data)}}
	default:
		step, err := u.check(n, body.Messages)
		if err != nil {
			u.problem(n, "%v", err)
			openaitest.WriteAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		content = u.answer(n, step, body.Tools)
		if content[len(content)-1]["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	usage := map[string]any{"input_tokens": len(data) / 4, "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "output_tokens": 20}
	msg := map[string]any{"id": fmt.Sprintf("msg_%03d", n), "type": "message", "role": "assistant",
		"model": body.Model, "content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	openaitest.WriteMessage(w, msg, body.Stream)
}

// check validates the messages against what the fake sent and returns the
// round to answer.
func (u *Messages) check(n int, msgs []message) (int, error) {
	if len(msgs) == 0 {
		return 0, errors.New("no messages")
	}
	if msgs[0].Role != "user" {
		u.problem(n, "the first message is not the user's")
	}
	uses := map[string]bool{} // the tool_use IDs of the last assistant message
	for i, m := range msgs {
		bs := m.blocks()
		switch m.Role {
		case "assistant":
			uses = map[string]bool{}
			for _, b := range bs {
				switch b.Type {
				case "tool_use":
					uses[b.ID] = true
				case "thinking":
					if want, ok := u.thinking.Load(b.Signature); !ok {
						u.problem(n, "message %d: a thinking block with a signature the model did not give", i)
					} else if want.(string) != b.Thinking {
						u.problem(n, "message %d: the thinking signed %.20s… changed", i, b.Signature)
					}
				}
			}
		case "user":
			for _, b := range bs {
				if b.Type == "tool_result" && !uses[b.ToolUseID] {
					u.problem(n, "message %d: the tool_result of %q does not follow its tool_use", i, b.ToolUseID)
				}
			}
			if len(uses) > 0 {
				uses = map[string]bool{}
			}
		}
	}
	// Claude Code sends messages of role "system" among the others, last
	// too: the model answers the last user or assistant message.
	last := msgs[len(msgs)-1]
	for i := len(msgs) - 1; i > 0 && last.Role == "system"; i-- {
		last = msgs[i-1]
	}
	if last.Role != "user" {
		return 0, fmt.Errorf("the last message is the %s's, not the user's", last.Role)
	}
	for _, b := range last.blocks() {
		if b.Type != "tool_result" {
			continue
		}
		return u.Task.nextStep(b.ToolUseID, ToolUsePrefix, resultText(b.Content))
	}
	return 1, nil
}

// resultText is the text of a tool_result's content, a string or blocks.
func resultText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var bs []block
	json.Unmarshal(content, &bs)
	var b strings.Builder
	for _, x := range bs {
		b.WriteString(x.Text)
	}
	return b.String()
}

// answer returns the content of round step: thinking and a tool_use, or
// the final text.
func (u *Messages) answer(n, step int, tools []tool) []map[string]any {
	if step > u.Task.Parts {
		return []map[string]any{{"type": "text", "text": u.Task.Final()}}
	}
	name, args, ok := commandCall(tools, u.Task.Command(step), fmt.Sprintf("Show part %d", step))
	if !ok {
		return []map[string]any{{"type": "text", "text": "I have no tool to read the files with."}}
	}
	thinking := fmt.Sprintf("Part %d is next; I will show it with %s.", step, name)
	sig := opaque(fmt.Sprintf("signature %d", step), 180)
	u.thinking.Store(sig, thinking)
	return []map[string]any{
		{"type": "thinking", "thinking": thinking, "signature": sig},
		{"type": "tool_use", "id": fmt.Sprintf("%s%02d", ToolUsePrefix, step), "name": name, "input": json.RawMessage(args)},
	}
}
