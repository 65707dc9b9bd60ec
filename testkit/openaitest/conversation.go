package openaitest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/testkit/transcripts"
)

// SharedConversation returns the first n messages of the first shared
// transcript (in name order) that has at least n messages, a quarter of
// them tool results: a long tool-using agent conversation. It skips the
// test, saying where it looked, when the shared transcripts are absent or
// none is long enough.
func SharedConversation(tb testing.TB, n int) (path string, msgs []json.RawMessage) {
	tb.Helper()
	for _, p := range transcripts.Shared(tb) {
		all, err := LoadConversation(p, 1<<30)
		if err != nil {
			tb.Fatal(err)
		}
		if len(all) < n {
			continue
		}
		tools := 0
		for _, m := range all[:n] {
			var r struct {
				Role string `json:"role"`
			}
			_ = json.Unmarshal(m, &r)
			if r.Role == "tool" {
				tools++
			}
		}
		if tools >= n/4 {
			return p, all[:n]
		}
	}
	dir, _ := transcripts.SharedDir()
	tb.Skipf("no shared transcript in %s has %d messages with tool results: skipping", dir, n)
	return "", nil
}

// ToolConversation returns a made-up agent conversation of n messages (n ≥
// 3) as raw Chat Completions JSON: a system prompt naming topic, the
// user's task, then rounds of an assistant's tool call and its result
// (outputs of a few hundred characters), and a user message at the end. The
// same n and topic give the same messages; different topics give
// conversations that begin differently.
func ToolConversation(n int, topic string) []json.RawMessage {
	raw := func(v any) json.RawMessage {
		b, _ := json.Marshal(v)
		return b
	}
	msgs := []json.RawMessage{
		raw(map[string]any{"role": "system", "content": "You are a coding agent working on " + topic + "."}),
		raw(map[string]any{"role": "user", "content": "Make the test suite of " + topic + " pass."}),
	}
	for i := 0; len(msgs) < n-1; i++ {
		id := fmt.Sprintf("call_%s_%d", strings.ReplaceAll(topic, " ", "_"), i)
		msgs = append(msgs, raw(map[string]any{
			"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": id, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": fmt.Sprintf(`{"command":"go test ./pkg%d/..."}`, i)}}},
		}))
		if len(msgs) == n-1 {
			break
		}
		msgs = append(msgs, raw(map[string]any{"role": "tool", "tool_call_id": id,
			"content": strings.Repeat(fmt.Sprintf("--- FAIL: TestCase%d (0.0%ds) %s\n", i, i%10, topic), 6)}))
	}
	if len(msgs) == n-1 && strings.Contains(string(msgs[len(msgs)-1]), `"tool_calls"`) {
		// The last call must be answered before the user speaks.
		msgs = msgs[:len(msgs)-1]
		msgs = append(msgs, raw(map[string]any{"role": "assistant", "content": "Still failing; looking further."}))
	}
	return append(msgs, raw(map[string]any{"role": "user", "content": "What is the status?"}))
}
