package session

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	chatjson "github.com/abridge-go/abridge/transcript"
)

// everyField returns messages that together set every field of the message
// model, with the nil/empty distinctions processor.Equal makes.
func everyField() []processor.Message {
	at := time.Date(2026, 11, 22, 4, 30, 0, 123456789, time.FixedZone("X", 3600))
	return []processor.Message{
		{
			Kind: processor.Request,
			Parts: []processor.Part{
				processor.SystemPrompt{Content: "be brief", Name: "ops"},
				processor.SystemPrompt{Content: "dev rules", Developer: true},
				processor.UserPrompt{Content: "plain <b>&amp;</b> \u0000 é", Name: "ann"},
				processor.UserPrompt{Contents: []processor.UserContent{
					{Type: "text", Text: "look"},
					{Type: "image_url", Data: json.RawMessage(`{ "url" : "data:image/png;base64,AAA=",  "detail":"low" }`)},
					{Type: "file", Data: json.RawMessage{}},
				}},
				processor.UserPrompt{Contents: []processor.UserContent{}},
			},
			Meta: &processor.Meta{Time: at},
		},
		{
			Kind: processor.Response,
			Parts: []processor.Part{
				processor.Thinking{Content: "hmm", Signature: "sig=="},
				processor.Thinking{Content: "kept whole", Signature: "s2", API: "messages", Raw: `{"type":"thinking","thinking":"kept whole","signature":"s2"}`},
				processor.Opaque{API: "messages", Type: "redacted_thinking", Raw: `{"type":"redacted_thinking","data":"x"}`},
				processor.Text{Content: "calling"},
				processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: `{"dir": "."}`},
				processor.ToolCall{ToolCallID: "c2", ToolName: "cat", Args: `not json {`},
				processor.ToolCall{ToolCallID: "c3", ToolName: "now"},
			},
			Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 1200, CachedInputTokens: 1024, CacheWriteInputTokens: 64, OutputTokens: 55, PromptMessages: 1}, ModelName: "gpt-test", FinishReason: "tool_calls", Name: "helper", Refusal: "no", Time: at.Add(time.Second)},
		},
		{Kind: processor.Request, Parts: []processor.Part{
			processor.ToolReturn{ToolName: "ls", ToolCallID: "c1", Content: "a.go\nb.go"},
			processor.ToolReturn{ToolName: "cat", ToolCallID: "c2", JSON: json.RawMessage(`{"b": 1,  "a": [1, 2]}`), Content: "ignored"},
			processor.ToolReturn{ToolCallID: "c3", JSON: json.RawMessage{}},
			processor.ToolReturn{ToolCallID: "c4", Contents: []string{"one", "", "three"}},
			processor.ToolReturn{ToolCallID: "c5", Contents: []string{}},
			processor.RetryPrompt{ToolName: "x", ToolCallID: "c6", Content: "bad args"},
			processor.RetryPrompt{Content: "answer in JSON"},
		}},
		{Kind: processor.Response},
		processor.UserMessage(""),
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for i, m := range everyField() {
		b, err := MarshalMessage(m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		got, err := UnmarshalMessage(b)
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, b)
		}
		if !processor.Equal(m, got) {
			t.Errorf("message %d: round trip differs:\n%s", i, cmp.Diff(m, got, cmp.Comparer(processor.Equal)))
		}
		// Encoding is deterministic: the decoded message encodes the same.
		again, err := MarshalMessage(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(b), string(again)); diff != "" {
			t.Errorf("message %d: second encoding differs (-first +second):\n%s", i, diff)
		}
	}
}

// TestCodecKeepsDistinctions checks the distinctions processor.Equal makes
// between nil and empty survive, and that raw JSON keeps its bytes.
func TestCodecKeepsDistinctions(t *testing.T) {
	tests := []struct {
		name  string
		part  processor.ToolReturn
		check func(processor.ToolReturn) bool
	}{
		{"nil JSON", processor.ToolReturn{ToolCallID: "a"}, func(r processor.ToolReturn) bool { return r.JSON == nil }},
		{"empty JSON", processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage{}}, func(r processor.ToolReturn) bool { return r.JSON != nil && len(r.JSON) == 0 }},
		{"spaced JSON", processor.ToolReturn{ToolCallID: "a", JSON: json.RawMessage(" {\"x\" :1} ")}, func(r processor.ToolReturn) bool { return string(r.JSON) == " {\"x\" :1} " }},
		{"nil contents", processor.ToolReturn{ToolCallID: "a"}, func(r processor.ToolReturn) bool { return r.Contents == nil }},
		{"empty contents", processor.ToolReturn{ToolCallID: "a", Contents: []string{}}, func(r processor.ToolReturn) bool { return r.Contents != nil && len(r.Contents) == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := MarshalMessage(processor.NewRequest(tt.part))
			if err != nil {
				t.Fatal(err)
			}
			m, err := UnmarshalMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Parts[0].(processor.ToolReturn); !tt.check(got) {
				t.Errorf("decoded %#v from %s", got, b)
			}
		})
	}
}

func TestCodecFormat(t *testing.T) {
	b, err := MarshalMessage(processor.NewRequest(processor.ToolReturn{ToolName: "ls", ToolCallID: "c1", Content: "a.go"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"request","parts":[{"kind":"tool-return","content":"a.go","tool_name":"ls","tool_call_id":"c1"}]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("encoding (-want +got):\n%s", diff)
	}
}

func TestCodecErrors(t *testing.T) {
	tests := []struct {
		name string
		msg  processor.Message
		data string
	}{
		{name: "kind zero", msg: processor.Message{Parts: []processor.Part{processor.Text{Content: "x"}}}},
		{name: "nil part", msg: processor.Message{Kind: processor.Request, Parts: []processor.Part{nil}}},
		{name: "unknown message kind", data: `{"kind":"aside","parts":[]}`},
		{name: "unknown part kind", data: `{"kind":"request","parts":[{"kind":"image"}]}`},
		{name: "not JSON", data: `{"kind":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.data == "" {
				_, err = MarshalMessage(tt.msg)
			} else {
				_, err = UnmarshalMessage([]byte(tt.data))
			}
			if !errors.Is(err, ErrCodec) {
				t.Errorf("got error %v, want one matching ErrCodec", err)
			}
		})
	}
}

// TestCodecTranscripts round-trips every message of the shipped (and, when
// present, the shared) transcripts.
func TestCodecTranscripts(t *testing.T) {
	files := transcripts.Shipped(t)
	if dir, ok := transcripts.SharedDir(); ok {
		files = append(files, listJSON(t, dir)...)
	}
	for _, f := range files {
		h, err := chatjson.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range h {
			b, err := MarshalMessage(m)
			if err != nil {
				t.Fatalf("%s: message %d: %v", f, i, err)
			}
			got, err := UnmarshalMessage(b)
			if err != nil {
				t.Fatalf("%s: message %d: %v", f, i, err)
			}
			if !processor.Equal(m, got) {
				t.Fatalf("%s: message %d differs after a round trip:\n%s", f, i, cmp.Diff(m, got, cmp.Comparer(processor.Equal)))
			}
		}
	}
}
