package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/abridge-go/abridge/summarizer/llm"
)

// WriteResponse answers with resp, a Responses API response object whose
// "output" is a []map[string]any of output items: as JSON, or, when
// stream is set, as the Responses event stream (response.created,
// response.in_progress, for each item response.output_item.added, its
// content part, text or arguments deltas and .done events, and
// response.output_item.done; then response.completed with resp), each
// event with its sequence_number.
func WriteResponse(w http.ResponseWriter, resp map[string]any, stream bool) {
	if !stream {
		writeJSON(w, resp)
		return
	}
	sseHeader(w)
	output, _ := resp["output"].([]map[string]any)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		sse(w, typ, fields)
	}
	start := map[string]any{}
	for k, v := range resp {
		start[k] = v
	}
	start["status"], start["output"], start["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": start})
	event("response.in_progress", map[string]any{"response": start})
	for i, item := range output {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		switch item["type"] {
		case "message":
			added["status"], added["content"] = "in_progress", []any{}
		case "function_call":
			added["status"], added["arguments"] = "in_progress", ""
		}
		event("response.output_item.added", map[string]any{"output_index": i, "item": added})
		switch item["type"] {
		case "message":
			part := item["content"].([]any)[0].(map[string]any)
			text := part["text"].(string)
			at := map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0}
			with := func(k string, v any) map[string]any {
				m := map[string]any{k: v}
				for k, v := range at {
					m[k] = v
				}
				return m
			}
			event("response.content_part.added", with("part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}}))
			for _, p := range pieces(text, 3) {
				event("response.output_text.delta", with("delta", p))
			}
			event("response.output_text.done", with("text", text))
			event("response.content_part.done", with("part", part))
		case "function_call":
			args := item["arguments"].(string)
			for _, p := range pieces(args, 2) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": p})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": i, "arguments": args})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	event("response.completed", map[string]any{"response": resp})
}

// WriteMessage answers with msg, an Anthropic Messages message whose
// "content" is a []map[string]any of content blocks (a tool_use block's
// "input" a json.RawMessage): as JSON, or, when stream is set, as the
// Messages event stream (message_start, ping, for each block
// content_block_start, its thinking_delta and signature_delta,
// input_json_delta or text_delta events and content_block_stop; then
// message_delta with the stop reason and usage, and message_stop).
func WriteMessage(w http.ResponseWriter, msg map[string]any, stream bool) {
	if !stream {
		writeJSON(w, msg)
		return
	}
	sseHeader(w)
	content, _ := msg["content"].([]map[string]any)
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	usage := msg["usage"].(map[string]any)
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": usage["input_tokens"], "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "output_tokens": 1}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": start})
	sse(w, "ping", map[string]any{"type": "ping"})
	for i, b := range content {
		delta := func(d map[string]any) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		switch b["type"] {
		case "thinking":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, p := range pieces(b["thinking"].(string), 2) {
				delta(map[string]any{"type": "thinking_delta", "thinking": p})
			}
			delta(map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "tool_use":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			for _, p := range pieces(string(b["input"].(json.RawMessage)), 3) {
				delta(map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, p := range pieces(b["text"].(string), 3) {
				delta(map[string]any{"type": "text_delta", "text": p})
			}
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// WriteAnthropicError answers an error in Anthropic's shape.
func WriteAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// summaryMark is how a summarizer's request is told in any API: its
// instructions, as they read inside a JSON string.
var summaryMark = func() []byte {
	b, _ := json.Marshal(llm.Instructions[:60])
	return b[1 : len(b)-1]
}()

// IsSummaryBody reports whether body, a request in any API, is a
// summarizer's: it holds llm.Instructions.
func IsSummaryBody(body []byte) bool { return bytes.Contains(body, summaryMark) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	http.NewResponseController(w).Flush()
}
