package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

func TestLoadBadInput(t *testing.T) {
	const user = `{"role":"user","content":"hi"}`
	const call = `{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{}"}}]}`
	tests := []struct {
		name  string
		input string
		want  string
		// index is the message the error must name, or -1 for errors
		// about the document as a whole.
		index int
	}{
		{"empty input", ``, "empty input", -1},
		{"not a list", `"hello"`, "want a JSON array of messages", -1},
		{"object without messages", `{"source":"x"}`, `no "messages" array`, -1},
		{"messages not an array", `{"messages":{"role":"user"}}`, `"messages" is not an array`, -1},
		{"truncated document", `[` + user, "malformed JSON", -1},
		{"trailing data", `[` + user + `] []`, "unexpected data after the messages", -1},
		{"malformed message", `[` + user + `,{"role":"user","content":"x",}]`, "message 1: malformed JSON", 1},
		{"message not an object", `[` + user + `,"user: hi"]`, "message 1: not a JSON object", 1},
		{"missing role", `[` + user + `,{"content":"x"}]`, "message 1: message without role", 1},
		{"empty role", `[{"role":"","content":"x"}]`, "message 0: message without role", 0},
		{"unknown role", `[` + user + `,` + user + `,{"role":"robot","content":"x"}]`, `message 2: unknown role "robot"`, 2},
		{"role not a string", `[{"role":7,"content":"x"}]`, "message 0: role is a JSON number, want a string", 0},
		{"deprecated function role", `[{"role":"function","name":"f","content":"x"}]`, "message 0: deprecated function message is not supported", 0},
		{"tool without tool_call_id", `[` + user + `,` + call + `,{"role":"tool","content":"ok"}]`, "message 2: tool message without tool_call_id", 2},
		{"tool with empty tool_call_id", `[` + call + `,{"role":"tool","tool_call_id":"","content":"ok"}]`, "message 1: tool message without tool_call_id", 1},
		{"tool without content", `[` + call + `,{"role":"tool","tool_call_id":"call_1"}]`, "message 1: tool message without content", 1},
		{"tool content a number", `[` + call + `,{"role":"tool","tool_call_id":"call_1","content":5}]`, "message 1: tool content is not a string or an array", 1},
		{"tool call without id", `[` + user + `,{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"bash","arguments":"{}"}}]}]`, "message 1: assistant tool call 0 without id", 1},
		{"second tool call without id", `[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f"}},{"id":"","type":"function","function":{"name":"f"}}]}]`, "message 0: assistant tool call 1 without id", 0},
		{"tool call of another type", `[{"role":"assistant","tool_calls":[{"id":"a","type":"custom","custom":{"name":"f","input":"x"}}]}]`, `message 0: assistant tool call 0 has unsupported type "custom"`, 0},
		{"tool call without function", `[{"role":"assistant","tool_calls":[{"id":"a","type":"function"}]}]`, "message 0: assistant tool call 0 without function name", 0},
		{"tool calls not an array", `[{"role":"assistant","tool_calls":{"id":"a"}}]`, "message 0: tool_calls is a JSON object, want an array", 0},
		{"tool call arguments an object", `[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"x":1}}}]}]`, "message 0: assistant tool call 0: function.arguments is a JSON object, want a string", 0},
		{"user without content", `[{"role":"user"}]`, "message 0: user message without content", 0},
		{"user content null", `[{"role":"user","content":null}]`, "message 0: user message without content", 0},
		{"user content a number", `[{"role":"user","content":42}]`, "message 0: user content is not a string or an array", 0},
		{"user part without type", `[{"role":"user","content":[{"text":"x"}]}]`, "message 0: user content 0 without type", 0},
		{"user text part without text", `[{"role":"user","content":[{"type":"text"}]}]`, "message 0: user content 0: text part without text", 0},
		{"user part not an object", `[{"role":"user","content":["x"]}]`, "message 0: user content 0 is not a JSON object", 0},
		{"system content array of images", `[{"role":"system","content":[{"type":"image_url","image_url":{"url":"x"}}]}]`, "message 0: system content 0 is not a text part", 0},
		{"developer without content", `[{"role":"developer"}]`, "message 0: developer message without content", 0},
		{"assistant content a number", `[{"role":"assistant","content":1}]`, "message 0: assistant content is not a string, an array or null", 0},
		{"assistant content part of unknown type", `[{"role":"assistant","content":[{"type":"image_url"}]}]`, "message 0: assistant content 0 is not a text or refusal part", 0},
		{"name a number", `[{"role":"user","content":"x","name":1}]`, "message 0: name is a JSON number, want a string", 0},
		// Names match exactly, as the API matches them: a member named in
		// another case is an unknown one, and the one it is not stays
		// missing.
		{"user content in another case", `[{"role":"user","Content":[{"type":"0000","tYpE":"0"}]}]`,
			"message 0: user message without content", 0},
		{"role in another case", `[{"ROLE":"user","content":"hi"}]`, "message 0: message without role", 0},
		{"part type in another case", `[{"role":"user","content":[{"Type":"text","text":"a"}]}]`, "message 0: user content 0 without type", 0},
		// A member named twice is ambiguous: which one counts is up to
		// the reader.
		{"role twice", `[{"role":"user","role":"system","content":"a"}]`, `message 0: ambiguous keys (a member named twice): jsontext: duplicate object member name "role"`, 0},
		{"user part type twice", `[{"role":"user","content":[{"type":"0000","type":"0"}]}]`,
			`message 0: ambiguous keys (a member named twice): jsontext: duplicate object member name "type" within "/content/0"`, 0},
		{"system part text twice", `[{"role":"system","content":[{"type":"text","text":"a","text":"b"}]}]`,
			`duplicate object member name "text" within "/content/0"`, 0},
		{"assistant part type twice", `[{"role":"assistant","content":[{"type":"text","type":"refusal","text":"a"}]}]`,
			`duplicate object member name "type" within "/content/0"`, 0},
		{"tool call id twice", `[{"role":"assistant","tool_calls":[{"id":"a","id":"b","type":"function","function":{"name":"f"}}]}]`,
			`duplicate object member name "id" within "/tool_calls/0"`, 0},
		{"function name twice", `[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","name":"g"}}]}]`,
			`duplicate object member name "name" within "/tool_calls/0/function"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("Load succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			var me *MessageError
			switch {
			case tt.index < 0 && errors.As(err, &me):
				t.Errorf("error %q names message %d, want a document error", err, me.Index)
			case tt.index >= 0 && !errors.As(err, &me):
				t.Errorf("error %q is not a *MessageError", err)
			case tt.index >= 0 && me.Index != tt.index:
				t.Errorf("error names message %d, want %d", me.Index, tt.index)
			case tt.index >= 0 && !errors.Is(err, processor.ErrMalformed):
				t.Errorf("error %q does not match processor.ErrMalformed", err)
			}
		})
	}
}

func TestLoadForms(t *testing.T) {
	want := []processor.Message{
		processor.NewRequest(processor.SystemPrompt{Content: "Be brief.", Developer: true, Name: "ops"}),
		processor.NewRequest(processor.UserPrompt{Name: "ann", Contents: []processor.UserContent{
			{Type: "text", Text: "What is this?"},
			{Type: "image_url", Data: json.RawMessage(`{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"},"note":"kept"}`)},
		}}),
		{
			Kind: processor.Response,
			Parts: []processor.Part{
				processor.Text{Content: "First."}, processor.Text{Content: "Second."},
				processor.ToolCall{ToolCallID: "c1", ToolName: "look", Args: ""},
			},
			Meta: &processor.Meta{Name: "helper", Refusal: "No."},
		},
		processor.NewRequest(processor.ToolReturn{ToolName: "look", ToolCallID: "c1", Contents: []string{"line 1", "line 2"}}),
		processor.NewResponse(),
	}
	const body = `[
		{"role":"developer","content":"Be brief.","name":"ops"},
		{"role":"user","name":"ann","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"},"note":"kept"}]},
		{"role":"assistant","name":"helper","refusal":"No.","content":[{"type":"text","text":"First."},{"type":"text","text":"Second."}],
			"tool_calls":[{"id":"c1","type":"function","function":{"name":"look"}}],"unknown":"ignored"},
		{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}]},
		{"role":"assistant","content":null}
	]`
	tests := []struct {
		name  string
		input string
	}{
		{"bare array", body},
		{"object with messages and other keys", `{"source":"test","messages":` + body + `,"extra":[1,2]}`},
		{"object with messages first", `{"messages":` + body + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}

	// Saving and loading again keeps the history; the non-text user part
	// goes out verbatim, unknown key included.
	var buf bytes.Buffer
	if err := Save(&buf, want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"note": "kept"`) {
		t.Errorf("saved JSON lost the unknown key of the image part:\n%s", buf.String())
	}
	again, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("Load(Save(h)) (-want +got):\n%s", diff)
	}
}

// jsonEqual compares raw JSON by value.
func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
}

// reasoningHistory is a history whose responses hold Thinking parts.
func reasoningHistory() []processor.Message {
	return []processor.Message{
		processor.UserMessage("List the files."),
		processor.NewResponse(
			processor.Thinking{Content: "I should list.", Signature: "sig"},
			processor.Text{Content: "Listing."},
			processor.Thinking{Content: ""},
			processor.Thinking{Content: "With ls."},
			processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"ls"}`},
		),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c1", Content: "a.go"}),
		processor.NewResponse(processor.Thinking{}, processor.Text{Content: "One file."}),
	}
}

func TestSaveFormat(t *testing.T) {
	tests := []struct {
		name string
		h    []processor.Message
		want string
	}{
		{
			name: "no HTML escaping",
			h:    []processor.Message{processor.UserMessage("Is a < b && b > c?"), processor.TextMessage("Yes.")},
			want: `{
  "messages": [
    {
      "role": "user",
      "content": "Is a < b && b > c?"
    },
    {
      "role": "assistant",
      "content": "Yes."
    }
  ]
}
`,
		},
		{
			name: "thinking parts joined in reasoning_content",
			h:    reasoningHistory(),
			want: `{
  "messages": [
    {
      "role": "user",
      "content": "List the files."
    },
    {
      "role": "assistant",
      "reasoning_content": "I should list.\nWith ls.",
      "content": "Listing.",
      "tool_calls": [
        {
          "function": {
            "arguments": "{\"command\":\"ls\"}",
            "name": "bash"
          },
          "id": "c1",
          "type": "function"
        }
      ]
    },
    {
      "role": "tool",
      "content": "a.go",
      "tool_call_id": "c1"
    },
    {
      "role": "assistant",
      "content": "One file."
    }
  ]
}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Save(&buf, tt.h); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, buf.String()); diff != "" {
				t.Errorf("Save output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadSaveFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.json")
	h := []processor.Message{
		processor.SystemMessage("You are terse."),
		processor.UserMessage("List the files."),
		processor.NewResponse(processor.Text{Content: ""}, processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "call_1", Content: "a.go\nb.go"}),
	}
	if err := SaveFile(path, h); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("LoadFile(SaveFile(h)) (-want +got):\n%s", diff)
	}

	// A failed save leaves the existing file alone.
	if err := SaveFile(path, []processor.Message{{Kind: 0}}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("SaveFile of a bad history: error %v, want one naming %s", err, path)
	}
	if again, err := LoadFile(path); err != nil || len(again) != len(h) {
		t.Errorf("after a failed save, LoadFile = %d messages, %v; want the old %d", len(again), err, len(h))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed save, want 1 (no temporary left)", len(entries))
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"role":"user","content":"x"},{"role":"tool","content":"y"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "absent.json"), "absent.json"},
		{"bad message", bad, bad + ": message 1: tool message without tool_call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFile(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadFile error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		`[]`, `{"messages":[]}`, `[{"role":"user","content":"hi"}]`,
		`[{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"x"}]`,
		`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}]`,
		`[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}],"refusal":null}]`,
		`[{"role":"assistant","reasoning_content":"r","content":null},{"role":"assistant","reasoning_content":7,"content":"a"}]`,
		`{"source":1,"messages":[{"role":"system","content":[{"type":"text","text":"s"}]}]}`,
		`[{"role":"tool","tool_call_id":"x","content":[{"type":"text","text":"a"}]}]`,
		// Names differing in case only: found by the fuzzer; unknown
		// members.
		`[{"role":"user","Content":[{"type":"0000","tYpE":"0"}]}]`,
		`[{"ROLE":"user","Content":[{"Type":"text","TEXT":"a"},{"TYPE":"image_url","image_url":{"url":"u"}}]}]`,
	} {
		f.Add([]byte(seed))
	}
	for _, path := range transcripts.Shipped(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever loads saves, and what is saved loads back the same.
		var buf bytes.Buffer
		if err := Save(&buf, h); err != nil {
			t.Fatalf("Save of a loaded history: %v", err)
		}
		again, err := Load(&buf)
		if err != nil {
			t.Fatalf("Load of a saved history: %v\n%s", err, buf.String())
		}
		if diff := cmp.Diff(h, again, cmp.Comparer(jsonEqual)); diff != "" {
			t.Fatalf("Load(Save(h)) differs (-h +again):\n%s", diff)
		}
	})
}

// TestLoadKeyCase loads messages whose member names differ in case from
// the API's: each is an unknown member, not the one it resembles, as the
// API reads it, and the history saves and loads back the same.
func TestLoadKeyCase(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []processor.Message
	}{
		{"message keys", `[{"role":"user","content":"hi","Name":"ann","CONTENT":"no"}]`,
			[]processor.Message{processor.NewRequest(processor.UserPrompt{Content: "hi"})}},
		{"part keys", `[{"role":"user","content":[{"type":"text","text":"a","TEXT":"b","Type":"image_url"}]}]`,
			[]processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "a"}}})}},
		{"tool call keys", `[{"role":"assistant","Tool_Calls":[{"Id":"c1","TYPE":"function","Function":{"NAME":"ls","Arguments":"{}"}}]}]`,
			[]processor.Message{processor.NewResponse()}},
		{"two cases of one name", `[{"role":"user","content":"a","Content":"b"},{"role":"assistant","tool_calls":[{"id":"a","ID":"b","type":"function","function":{"name":"f","Name":"g"}}]}]`,
			[]processor.Message{processor.UserMessage("a"), processor.NewResponse(processor.ToolCall{ToolCallID: "a", ToolName: "f"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
			var buf bytes.Buffer
			if err := Save(&buf, got); err != nil {
				t.Fatal(err)
			}
			again, err := Load(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, again, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("Load(Save(h)) (-h +again):\n%s", diff)
			}
		})
	}
}

func TestLoadReasoning(t *testing.T) {
	const call = `"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]`
	tests := []struct {
		name  string
		input string
		want  processor.Message
	}{
		{
			name:  "reasoning_content becomes the first part",
			input: `{"role":"assistant","content":"Listing.","reasoning_content":"I should list.",` + call + `}`,
			want: processor.NewResponse(processor.Thinking{Content: "I should list."}, processor.Text{Content: "Listing."},
				processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: "{}"}),
		},
		{
			name:  "without content",
			input: `{"reasoning_content":"Hmm.","role":"assistant","content":null}`,
			want:  processor.NewResponse(processor.Thinking{Content: "Hmm."}),
		},
		{
			name:  "empty string ignored",
			input: `{"role":"assistant","content":"ok","reasoning_content":""}`,
			want:  processor.TextMessage("ok"),
		},
		{
			name:  "null ignored",
			input: `{"role":"assistant","content":"ok","reasoning_content":null}`,
			want:  processor.TextMessage("ok"),
		},
		{
			name:  "number ignored",
			input: `{"role":"assistant","content":"ok","reasoning_content":3}`,
			want:  processor.TextMessage("ok"),
		},
		{
			name:  "reasoning is not read",
			input: `{"role":"assistant","content":"ok","reasoning":"elsewhere"}`,
			want:  processor.TextMessage("ok"),
		},
		{
			name:  "ignored on a user message",
			input: `{"role":"user","content":"hi","reasoning_content":"not a response"}`,
			want:  processor.UserMessage("hi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(strings.NewReader("[" + tt.input + "]"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]processor.Message{tt.want}, got); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

// Saved reasoning comes back as one Thinking part, first.
func TestSaveLoadReasoning(t *testing.T) {
	h := reasoningHistory()
	var buf bytes.Buffer
	if err := Save(&buf, h); err != nil {
		t.Fatal(err)
	}
	got, err := Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := []processor.Message{
		h[0],
		processor.NewResponse(
			processor.Thinking{Content: "I should list.\nWith ls."},
			processor.Text{Content: "Listing."},
			processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"ls"}`},
		),
		h[2],
		processor.TextMessage("One file."),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(Save(h)) (-want +got):\n%s", diff)
	}
}

// TestRoundTrip loads every transcript, saves it, and checks that the saved
// messages are the file's and that loading them again gives the same
// history.
func TestRoundTrip(t *testing.T) {
	for _, path := range transcripts.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := messagesOf(t, data)
			h, err := LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != len(want) {
				t.Fatalf("loaded %d messages, the file has %d", len(h), len(want))
			}
			var buf bytes.Buffer
			if err := Save(&buf, h); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, messagesOf(t, buf.Bytes())); diff != "" {
				t.Errorf("Save differs from the file (-file +saved):\n%s", diff)
			}
			again, err := Load(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(h, again); diff != "" {
				t.Errorf("Load(Save(h)) differs from h (-h +again):\n%s", diff)
			}
		})
	}
}

// messagesOf returns the "messages" of a saved history as generic JSON.
func messagesOf(t *testing.T, data []byte) []any {
	t.Helper()
	var doc struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Messages
}

// TestFromRawMessages checks that the messages of a request body, one raw
// object each, convert as Load reads them, and that a bad one is an error
// naming it.
func TestFromRawMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		raws []string
		want string // the error's text; empty: no error
	}{
		{"a tool loop", []string{`{"role":"user","content":"hi"}`,
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
			`{"role":"tool","tool_call_id":"c1","content":"a.go"}`}, ""},
		{"not an object", []string{`[1]`}, "message 0: not a JSON object"},
		{"no role", []string{`{"content":"hi"}`}, "message 0: message without role"},
		{"tool without id", []string{`{"role":"user","content":"hi"}`, `{"role":"tool","content":"x"}`}, "message 1: tool message without tool_call_id"},
		{"broken JSON", []string{`{"role":"user","content":"hi"}`, `{"role":`}, "message 1: malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raws := make([]json.RawMessage, len(tc.raws))
			for i, r := range tc.raws {
				raws[i] = json.RawMessage(r)
			}
			got, err := FromRawMessages(raws)
			loaded, lerr := Load(strings.NewReader("[" + strings.Join(tc.raws, ",") + "]"))
			if tc.want == "" {
				if err != nil || lerr != nil {
					t.Fatalf("FromRawMessages: %v; Load: %v", err, lerr)
				}
				if diff := cmp.Diff(loaded, got); diff != "" {
					t.Errorf("FromRawMessages differs from Load (-Load +FromRawMessages):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromRawMessages error %v, want one containing %q", err, tc.want)
			}
			if lerr == nil {
				t.Errorf("Load of the same messages succeeded")
			}
		})
	}
}

// TestWriteErrors checks that a history ToRawMessages cannot write is an
// error naming the message, and that Save refuses it the same way,
// writing nothing.
func TestWriteErrors(t *testing.T) {
	data := func(d string) []processor.Message {
		return []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(d)}}})}
	}
	tests := []struct {
		name    string
		history []processor.Message
		want    string
	}{
		{"unknown kind", []processor.Message{processor.UserMessage("a"), {Kind: 7, Parts: []processor.Part{processor.Text{}}}}, "message 1: unknown message kind kind(7)"},
		{"zero kind", []processor.Message{{}}, "message 0: unknown message kind kind(0)"},
		{"request without parts", []processor.Message{processor.NewRequest()}, "message 0: request without parts"},
		{"response part in a request", []processor.Message{processor.NewRequest(processor.UserPrompt{Content: "a"}, processor.Text{Content: "b"})}, "message 0: part 1: text part in a request"},
		{"request part in a response", []processor.Message{processor.UserMessage("a"), processor.NewResponse(processor.UserPrompt{Content: "b"})}, "message 1: part 0: user-prompt part in a response"},
		{"nil part in a request", []processor.Message{processor.NewRequest(nil)}, "message 0: part 0 is nil"},
		{"nil part in a response", []processor.Message{processor.UserMessage("a"), processor.NewResponse(nil)}, "message 1: part 0 is nil"},
		{"tool call without id", []processor.Message{processor.UserMessage("a"), processor.NewResponse(processor.ToolCall{ToolName: "f"})}, `message 1: part 0: tool call "f" without id`},
		{"tool return without id", []processor.Message{processor.NewRequest(processor.ToolReturn{ToolName: "f", Content: "x"})}, "message 0: part 0: tool return without tool call id"},
		{"user part without data", data(``), `message 0: part 0: user content 0 ("image_url"): no data`},
		{"user part with bad data", data(`{"type":`), `message 0: part 0: user content 0 ("image_url"): data: unexpected EOF`},
		{"user part not an object", data(`["image_url"]`), "data is not a JSON object"},
		{"user part with two values", data(`{"type":"image_url"} {}`), "data: more than one JSON value"},
		{"user part with a stray brace", data(`{"type":"image_url"}}`), "data: more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ToRawMessages(tt.history)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ToRawMessages error = %v, want one containing %q", err, tt.want)
			}
			if !errors.Is(err, processor.ErrMalformed) {
				t.Errorf("error %q does not match processor.ErrMalformed", err)
			}
			var buf bytes.Buffer
			if err := Save(&buf, tt.history); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Save error = %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Save wrote %q before failing", buf.String())
			}
		})
	}
}

// TestRawRoundTrip converts every transcript to raw JSON and back, message
// by message (ToRawMessages, FromRawMessages) and as a request's
// "messages" (JoinRawMessages, Load): the history comes back equal.
func TestRawRoundTrip(t *testing.T) {
	for _, path := range transcripts.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, err := LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			raws, err := ToRawMessages(h)
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromRawMessages(raws)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(h, back); diff != "" {
				t.Errorf("FromRawMessages(ToRawMessages(h)) (-h +back):\n%s", diff)
			}
			back, err = Load(bytes.NewReader(JoinRawMessages(raws)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(h, back); diff != "" {
				t.Errorf("Load(JoinRawMessages(ToRawMessages(h))) (-h +back):\n%s", diff)
			}
		})
	}
}
