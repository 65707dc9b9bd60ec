package openaitest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBodies converts one tool round in Chat messages to each API's body.
func TestBodies(t *testing.T) {
	msgs := []json.RawMessage{
		json.RawMessage(`{"role":"system","content":"Be brief."}`),
		json.RawMessage(`{"role":"user","content":"List the files."}`),
		json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`),
		json.RawMessage(`{"role":"tool","tool_call_id":"call_1","content":"a.txt"}`),
		json.RawMessage(`{"role":"user","content":[{"type":"text","text":"And now?"}]}`),
	}
	tests := []struct {
		api    string
		stream bool
		want   string
	}{
		{APIChat, false, `{"model":"gpt-test","messages":[` + string(msgs[0]) + `,` + string(msgs[1]) + `,` + string(msgs[2]) + `,` + string(msgs[3]) + `,` + string(msgs[4]) + `],` +
			`"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}],"tool_choice":"auto","temperature":0}`},
		{APIResponses, true, `{"model":"gpt-test","input":[{"content":"Be brief.","role":"system"},{"content":"List the files.","role":"user"},` +
			`{"arguments":"{\"command\":\"ls\"}","call_id":"call_1","name":"bash","type":"function_call"},` +
			`{"call_id":"call_1","output":"a.txt","type":"function_call_output"},{"content":"And now?","role":"user"}],` +
			`"tools":[{"type":"function","name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}],"tool_choice":"auto","temperature":0,"store":false,"stream":true}`},
		{APIMessages, false, `{"model":"claude-test","max_tokens":4096,"system":"Be brief.","messages":[` +
			`{"role":"user","content":[{"text":"List the files.","type":"text"}]},` +
			`{"role":"assistant","content":[{"id":"call_1","input":{"command":"ls"},"name":"bash","type":"tool_use"}]},` +
			`{"role":"user","content":[{"content":"a.txt","tool_use_id":"call_1","type":"tool_result"},{"text":"And now?","type":"text"}]}],` +
			`"tools":[{"name":"bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`},
	}
	for _, tc := range tests {
		b, err := NewBodies(tc.api, msgs)
		if err != nil {
			t.Fatalf("%s: %v", tc.api, err)
		}
		if diff := cmp.Diff(tc.want, string(b.Body(len(msgs), tc.stream))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.api, diff)
		}
	}
	if _, err := NewBodies("completions", msgs); err == nil {
		t.Error("an unknown API gave no error")
	}
}
