package wire

import (
	"context"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/google/go-cmp/cmp"
)

// A tool's long output, and what the trimmer makes of it.
var (
	longOutput       = strings.Repeat("a line of the tool's output\n", 12)
	trimmedOutput, _ = trimtools.Trim(longOutput, trimtools.MinMaxChars)
)

// quoted returns s as a JSON string.
func quoted(s string) string {
	b, _ := appendJSON(nil, s)
	return string(b)
}

// fill puts the long output (in {{L}}) and the trimmed one (in {{T}})
// into a body.
func fill(s string) string {
	return strings.NewReplacer("{{L}}", quoted(longOutput), "{{T}}", quoted(trimmedOutput),
		"{{Lraw}}", strings.Trim(quoted(longOutput), `"`), "{{Traw}}", strings.Trim(quoted(trimmedOutput), `"`)).Replace(s)
}

// trim runs the real trimmer, keeping the last message.
func trim(t *testing.T, msgs []processor.Message) []processor.Message {
	out, err := trimtools.New(trimtools.Options{MaxChars: trimtools.MinMaxChars, KeepLast: 1}).Process(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRewriteKeeps checks that a message the processors changed goes out
// as the client's bytes with only what changed replaced: ids, status,
// annotations, cache_control, citations, is_error, keys abridge does not
// know and the order of the keys survive.
func TestRewriteKeeps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec Codec
		body  string // {{L}}: the long output; {{T}}: it trimmed
		edit  func(t *testing.T, msgs []processor.Message) []processor.Message
		want  string
	}{
		{
			name:  "responses: a trimmed function_call_output keeps its id and status",
			codec: Responses,
			body:  `{"input":[{"type":"function_call","id":"fc_1","call_id":"c1","name":"sh","arguments":"{}","status":"completed"},{"type":"function_call_output","id":"fco_1","call_id":"c1","output":{{L}},"status":"completed"},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"input":[{"type":"function_call","id":"fc_1","call_id":"c1","name":"sh","arguments":"{}","status":"completed"},{"type":"function_call_output","id":"fco_1","call_id":"c1","output":{{T}},"status":"completed"},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "responses: unknown keys and key order of a trimmed output",
			codec: Responses,
			body:  `{"input":[{"type":"function_call","call_id":"c1","name":"sh","arguments":"{}"},{"call_id":"c1", "output" : {{L}},"type":"function_call_output","x_trace":{"span":[1,2]}},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"input":[{"type":"function_call","call_id":"c1","name":"sh","arguments":"{}"},{"call_id":"c1", "output" : {{T}},"type":"function_call_output","x_trace":{"span":[1,2]}},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "responses: a trimmed custom_tool_call_output keeps its type and id",
			codec: Responses,
			body:  `{"input":[{"type":"custom_tool_call","id":"ctc_1","call_id":"c1","name":"apply_patch","input":"x"},{"type":"custom_tool_call_output","id":"ctco_1","call_id":"c1","output":{{L}}},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"input":[{"type":"custom_tool_call","id":"ctc_1","call_id":"c1","name":"apply_patch","input":"x"},{"type":"custom_tool_call_output","id":"ctco_1","call_id":"c1","output":{{T}}},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "responses: a multi-part output_text message stays one item when a call beside it changes",
			codec: Responses,
			body:  `{"input":[{"role":"user","content":"hi"},{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"one","annotations":[],"logprobs":[]},{"type":"output_text","text":"two","annotations":[{"type":"url_citation","url":"https://x"}]}]},{"type":"function_call","id":"fc_1","call_id":"c1","name":"sh","arguments":"{\"cmd\":\"long\"}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				out := append([]processor.Message(nil), msgs...)
				parts := append([]processor.Part(nil), out[1].Parts...)
				parts[2] = processor.ToolCall{ToolCallID: "c1", ToolName: "sh", Args: `{"cmd":"short"}`}
				out[1] = processor.NewResponse(parts...)
				return out
			},
			want: `{"input":[{"role":"user","content":"hi"},{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"one","annotations":[],"logprobs":[]},{"type":"output_text","text":"two","annotations":[{"type":"url_citation","url":"https://x"}]}]},{"type":"function_call","id":"fc_1","call_id":"c1","name":"sh","arguments":"{\"cmd\":\"short\"}"},{"type":"function_call_output","call_id":"c1","output":"ok"}]}`,
		},
		{
			name:  "responses: a changed output_text keeps its annotations and its message's id",
			codec: Responses,
			body:  `{"input":[{"role":"user","content":"hi"},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"one","annotations":[]},{"type":"output_text","text":"two","annotations":[{"type":"url_citation","url":"https://x"}]}]},{"role":"user","content":"go on"}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				out := append([]processor.Message(nil), msgs...)
				out[1] = processor.NewResponse(processor.Text{Content: "one"}, processor.Text{Content: "2"})
				return out
			},
			want: `{"input":[{"role":"user","content":"hi"},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"one","annotations":[]},{"type":"output_text","text":"2","annotations":[{"type":"url_citation","url":"https://x"}]}]},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "messages: a trimmed tool_result keeps is_error, cache_control and unknown keys in order",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"x_trace":"z","content":{{L}},"cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"x_trace":"z","content":{{T}},"cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "messages: cache_control on a trimmed text block of a tool_result",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":{{L}},"cache_control":{"type":"ephemeral"}}]}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":{{T}},"cache_control":{"type":"ephemeral"}}]}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "messages: a tool_result of blocks and is_error, trimmed, keeps its keys where they were",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":{{L}}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				out := append([]processor.Message(nil), msgs...)
				out[2] = processor.NewRequest(processor.ToolReturn{ToolName: "sh", ToolCallID: "t1", Content: "[cleared]"})
				return out
			},
			want: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"[cleared]"}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "messages: cache_control on the system, one of its texts changed",
			codec: Messages,
			body:  `{"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Old rules.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"go"}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				out := append([]processor.Message(nil), msgs...)
				out[0] = processor.NewRequest(processor.SystemPrompt{Content: "You are Claude Code."}, processor.SystemPrompt{Content: "New rules."})
				return out
			},
			want: `{"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"New rules.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"go"}]}`,
		},
		{
			name:  "messages: a summary marker joined to a user message keeps its keys and blocks",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}],"x_id":"m3"}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				return []processor.Message{msgs[0], msgs[1], processor.UserMessage("summary marker"), msgs[2]}
			},
			want: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"summary marker"},{"type":"text","text":"next","cache_control":{"type":"ephemeral"}}],"x_id":"m3"}]}`,
		},
		{
			name:  "messages: citations of a text block kept when a call beside it changes",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"see","citations":[{"type":"char_location","cited_text":"x"}]},{"type":"tool_use","id":"t1","name":"sh","input":{"cmd":"long"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
			edit: func(_ *testing.T, msgs []processor.Message) []processor.Message {
				out := append([]processor.Message(nil), msgs...)
				out[1] = processor.NewResponse(out[1].Parts[0], processor.ToolCall{ToolCallID: "t1", ToolName: "sh", Args: `{"cmd":"short"}`})
				return out
			},
			want: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"see","citations":[{"type":"char_location","cited_text":"x"}]},{"type":"tool_use","id":"t1","name":"sh","input":{"cmd":"short"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
		},
		{
			name:  "messages: a signed thinking block kept when a result beside it is trimmed",
			codec: Messages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":{{L}}},{"type":"text","text":"and","x_note":1}],"x_id":"m2"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"text","text":"ok"}]},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":{{T}}},{"type":"text","text":"and","x_note":1}],"x_id":"m2"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"c2ln"},{"type":"text","text":"ok"}]},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "chat: a trimmed tool message keeps its name and its keys' order",
			codec: Chat,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"content":{{L}},"tool_call_id":"c1","role":"tool","name":"sh"},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"content":{{T}},"tool_call_id":"c1","role":"tool","name":"sh"},{"role":"user","content":"go on"}]}`,
		},
		{
			name:  "chat: a trimmed tool message of text parts keeps its other keys",
			codec: Chat,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":{{L}}}],"x_trace":"z"},{"role":"user","content":"go on"}]}`,
			edit:  trim,
			want:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":{{T}},"x_trace":"z"},{"role":"user","content":"go on"}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.codec.Parse([]byte(fill(tc.body)), nil)
			if err != nil {
				t.Fatal(err)
			}
			out := tc.edit(t, b.Messages)
			if b.same(out) {
				t.Fatal("the edit changed nothing")
			}
			got, err := with(b, out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fill(tc.want), string(got)); diff != "" {
				t.Errorf("With (-want +got):\n%s", diff)
			}
			// What goes out reads back as what the processors made.
			back, err := tc.codec.Parse(got, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := processortest.Diff(normal(b.hist.fit(out)), normal(back.Messages)); err != nil {
				t.Errorf("read back: %v", err)
			}
		})
	}
}

// normal returns msgs as the model reads them, whatever the shape a codec
// reads them in: each user prompt one per content, plain text as a text
// content; a tool return's text parts joined.
func normal(msgs []processor.Message) []processor.Message {
	out := make([]processor.Message, len(msgs))
	for i, m := range msgs {
		var parts []processor.Part
		for _, p := range pieces(m.Parts) {
			switch q := p.(type) {
			case processor.UserPrompt:
				if q.Contents == nil {
					q.Contents = []processor.UserContent{{Type: "text", Text: q.Content}}
					q.Content = ""
				}
				p = q
			case processor.ToolReturn:
				if q.JSON == nil && q.Contents != nil {
					q.Content, q.Contents = q.ToolReturnContent(), nil
				}
				p = q
			}
			parts = append(parts, p)
		}
		out[i] = m
		out[i].Parts = parts
	}
	return out
}
