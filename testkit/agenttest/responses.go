package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/abridge-go/abridge/testkit/openaitest"
)

// Responses is a fake OpenAI Responses API (POST …/responses) playing a
// model through Task: each answer is a reasoning item with encrypted
// content and a function call running the next command, then a message
// with the final answer. Streamed requests get the event stream Codex and
// the openai clients read (response.created, response.in_progress,
// response.output_item.added and .done, the text and arguments deltas,
// response.completed with usage). A summarizer's request gets a summary;
// one that declares no shell tool, a text answer saying so. Chat
// Completions requests (a summarizer's) go to Chat. Set Task before
// serving; it is safe for concurrent use.
type Responses struct {
	Task Task
	// Chat answers …/chat/completions.
	Chat openaitest.Upstream

	recorder
	// reasoning maps each reasoning item's ID to the encrypted content
	// the fake sent with it.
	reasoning sync.Map
}

// CallPrefix is the prefix of the fake's call IDs, followed by the round.
const CallPrefix = "call_step_"

type responsesBody struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
	Tools  []tool          `json:"tools"`
}

// inputItem is the part of a Responses input item the fake reads.
type inputItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent *string         `json:"encrypted_content"`
}

// ServeHTTP answers POST …/responses, and …/chat/completions through Chat.
func (u *Responses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		u.Chat.ServeHTTP(w, r)
		return
	}
	data, err := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: data}
	if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		u.add(req)
		openaitest.WriteError(w, http.StatusNotFound, "invalid_request_error", "unknown path "+r.Method+" "+r.URL.Path, "unknown_url")
		return
	}
	var body responsesBody
	if err := json.Unmarshal(data, &body); err != nil {
		n := u.add(req)
		u.problem(n, "body is not a Responses request: %v", err)
		openaitest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON: "+err.Error(), "")
		return
	}
	req.Stream = body.Stream
	req.Summary = openaitest.IsSummaryBody(data)
	n := u.add(req)
	var items []inputItem
	if len(body.Input) > 0 && body.Input[0] == '[' {
		if err := json.Unmarshal(body.Input, &items); err != nil {
			u.problem(n, "input is not a list of items: %v", err)
			openaitest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "input: "+err.Error(), "")
			return
		}
	}
	var output []map[string]any
	switch {
	case req.Summary:
		output = []map[string]any{textItem("msg_summary", summaryText(data))}
	default:
		step, err := u.check(n, items)
		if err != nil {
			u.problem(n, "%v", err)
			openaitest.WriteError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
			return
		}
		output = u.answer(n, step, body.Tools)
	}
	resp := map[string]any{
		"id": fmt.Sprintf("resp_%03d", n), "object": "response", "created_at": 1700000000 + n,
		"status": "completed", "model": body.Model, "output": output,
		"error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{},
		"parallel_tool_calls": true, "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": []any{},
		"store": false, "truncation": "disabled", "text": map[string]any{"format": map[string]any{"type": "text"}},
		"reasoning": map[string]any{"effort": nil, "summary": nil},
		"usage": map[string]any{
			"input_tokens": len(body.Input) / 4, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 10},
			"total_tokens": len(body.Input)/4 + 20,
		},
	}
	openaitest.WriteResponse(w, resp, body.Stream)
}

// check validates the input items against what the fake sent and returns
// the round to answer.
func (u *Responses) check(n int, items []inputItem) (int, error) {
	calls := map[string]bool{}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				u.problem(n, "item %d: output of %q follows no call of that ID", i, it.CallID)
			}
		case "reasoning":
			if want, ok := u.reasoning.Load(it.ID); ok && (it.EncryptedContent == nil || *it.EncryptedContent != want.(string)) {
				u.problem(n, "item %d: the encrypted content of reasoning %s changed", i, it.ID)
			}
			if i == len(items)-1 {
				u.problem(n, "item %d: reasoning %s precedes nothing", i, it.ID)
			}
		}
	}
	if len(items) == 0 || items[len(items)-1].Type != "function_call_output" {
		return 1, nil
	}
	last := items[len(items)-1]
	var text string
	if json.Unmarshal(last.Output, &text) != nil {
		text = string(last.Output) // a list of content parts
	}
	return u.Task.nextStep(last.CallID, CallPrefix, text)
}

// answer returns the output items of round step: reasoning and a call, or
// the final message.
func (u *Responses) answer(n, step int, tools []tool) []map[string]any {
	if step > u.Task.Parts {
		return []map[string]any{textItem(fmt.Sprintf("msg_%03d", n), u.Task.Final())}
	}
	name, args, ok := commandCall(tools, u.Task.Command(step), fmt.Sprintf("Show part %d", step))
	if !ok {
		return []map[string]any{textItem(fmt.Sprintf("msg_%03d", n), "I have no tool to read the files with.")}
	}
	id := fmt.Sprintf("rs_step_%02d", step)
	enc := opaque(fmt.Sprintf("reasoning %d", step), 240)
	u.reasoning.Store(id, enc)
	return []map[string]any{
		{"type": "reasoning", "id": id, "summary": []any{}, "encrypted_content": enc},
		{"type": "function_call", "id": fmt.Sprintf("fc_step_%02d", step), "call_id": fmt.Sprintf("%s%02d", CallPrefix, step),
			"name": name, "arguments": string(args), "status": "completed"},
	}
}

func textItem(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}
