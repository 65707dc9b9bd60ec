package window

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// TestStoredHashes pins the digests and keys of messages of every part
// kind: they are saved in users' stores (SQLite, PostgreSQL), so a change
// in what the hasher feeds would make every saved span unusable. The
// values were computed by the window that saved the first spans.
func TestStoredHashes(t *testing.T) {
	long := ""
	for i := range 50 {
		long += fmt.Sprintf("line %d of a long output\n", i)
	}
	ms := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.NewRequest(processor.SystemPrompt{Content: "dev", Developer: true, Name: "ops"}, processor.UserPrompt{Content: "Fix the test.", Name: "ann"}),
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "look"}, {Type: "image_url", Data: json.RawMessage(`{"url":"http://x/y.png"}`)}}}),
		processor.NewResponse(processor.Thinking{Content: "hmm", Signature: "sig"}, processor.Text{Content: "I'll look."}, processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long}),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c2", ToolName: "read", Args: `{"path":"a.go"}`}, processor.Thinking{API: "responses", Raw: `{"type":"reasoning"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c2", JSON: json.RawMessage(`{"ok":true}`)}, processor.RetryPrompt{ToolCallID: "c9", ToolName: "x", Content: "bad"}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c3", Contents: []string{"a", "b"}}, processor.Opaque{API: "messages", Type: "weird", Raw: `{"x":1}`}),
		processor.TextMessage("done").WithMeta(processor.Meta{Name: "bot", Refusal: "no"}),
	}
	for _, tc := range []struct{ name, got, want string }{
		{"digest", digestOf(ms).String(), "98c6291ca466def6f78f325f451179c41d14dd0d4b7f003cd6517cacb3b55911"},
		{"key of a head in a conversation", keyOf("conv-7", ms[:3]).String(), "dec1fdc9869f5c460c53f83997bc3dab"},
		{"key of a long message", keyOf("", ms[4:5]).String(), "7e540cf151db465204ae2c421d2c869c"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, tc.got, tc.want)
		}
	}
	if got := lasts(ms, 3); len(got) != len(ms)-4 || got[1] != keyOf("", ms[4:5]) {
		t.Errorf("lasts from 3: %v", got)
	}
}
