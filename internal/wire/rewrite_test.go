package wire

import (
	"context"
	"strconv"
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
			got, err := b.With(out)
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

// rewriteEntries counts the rewrites a cache holds.
func rewriteEntries(c *Cache) int {
	c.rw.mu.Lock()
	defer c.rw.mu.Unlock()
	n := 0
	for _, es := range c.rw.items {
		n += len(es)
	}
	return n
}

// TestRewriteCached checks that a rewrite is remembered by its input: the
// next request's same message changed the same way is written from the
// cache, as the same bytes and with fewer allocations; another new value,
// or the same value over other bytes, is written anew; and the rewrites
// stay within their share of the cache.
func TestRewriteCached(t *testing.T) {
	for _, tc := range []struct {
		codec Codec
		body  string // {{L}}: a long output; {{n}}: a number
		other string // a key of the tool output, in the body, to change
	}{
		{Chat, `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"sh","arguments":"{}"}}]},{"content":{{L}},"tool_call_id":"c1","role":"tool","name":"sh"},{"role":"user","content":"go on"}]}`, `"name":"sh"`},
		{Responses, `{"input":[{"type":"function_call","call_id":"c1","name":"sh","arguments":"{}"},{"type":"function_call_output","id":"fco_1","call_id":"c1","output":{{L}},"status":"completed"},{"role":"user","content":"go on"}]}`, `"status":"completed"`},
		{Messages, `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sh","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":{{L}},"x_trace":"a"}]},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}]}`, `"x_trace":"a"`},
	} {
		t.Run(tc.codec.API(), func(t *testing.T) {
			data := []byte(fill(tc.body))
			cache := NewCache(0)
			b1, err := tc.codec.Parse(data, cache)
			if err != nil {
				t.Fatal(err)
			}
			first, err := b1.With(trim(t, b1.Messages))
			if err != nil {
				t.Fatal(err)
			}
			n := rewriteEntries(cache)
			if n == 0 {
				t.Fatal("no rewrite remembered")
			}
			// The next request: the same bytes, trimmed the same way.
			b2, err := tc.codec.Parse(data, cache)
			if err != nil {
				t.Fatal(err)
			}
			out := trim(t, b2.Messages)
			again, err := b2.With(out)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(first), string(again)); diff != "" {
				t.Errorf("the next request (-first +again):\n%s", diff)
			}
			if got := rewriteEntries(cache); got != n {
				t.Errorf("the next request added %d rewrites to the cache", got-n)
			}
			uncached, err := tc.codec.Parse(data, nil)
			if err != nil {
				t.Fatal(err)
			}
			hit := testing.AllocsPerRun(20, func() { _, _ = b2.Buffers(out) })
			miss := testing.AllocsPerRun(20, func() { _, _ = uncached.Buffers(out) })
			if hit >= miss {
				t.Errorf("written from the cache with %v allocations, anew with %v", hit, miss)
			}
			// Another new value: written anew.
			cleared := append([]processor.Message(nil), out...)
			for i, m := range cleared {
				if len(m.Parts) == 1 {
					if r, ok := m.Parts[0].(processor.ToolReturn); ok {
						r.Content = "[cleared]"
						cleared[i] = processor.NewRequest(r)
					}
				}
			}
			got, err := b2.With(cleared)
			if err != nil {
				t.Fatal(err)
			}
			if want := fill(strings.Replace(tc.body, "{{L}}", `"[cleared]"`, 1)); string(got) != want {
				t.Errorf("cleared: got %s, want %s", got, want)
			}
			// The same new value over other bytes: written anew.
			changed := strings.Replace(tc.body, tc.other, tc.other[:len(tc.other)-1]+`x"`, 1)
			b3, err := tc.codec.Parse([]byte(fill(changed)), cache)
			if err != nil {
				t.Fatal(err)
			}
			got, err = b3.With(trim(t, b3.Messages))
			if err != nil {
				t.Fatal(err)
			}
			if want := fill(strings.Replace(changed, "{{L}}", "{{T}}", 1)); string(got) != want {
				t.Errorf("other bytes: got %s, want %s", got, want)
			}
		})
	}
	// Bounded: rewrites stay within a quarter of the cache.
	const limit = 64 << 10
	cache := NewCache(limit)
	for k := range 500 {
		body := strings.Replace(`{"input":[{"type":"function_call","call_id":"c1","name":"sh","arguments":"{}"},{"type":"function_call_output","id":"fco_{{n}}","call_id":"c1","output":{{L}}},{"role":"user","content":"go on"}]}`, "{{n}}", strconv.Itoa(k), 1)
		b, err := Responses.Parse([]byte(fill(body)), cache)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.With(trim(t, b.Messages)); err != nil {
			t.Fatal(err)
		}
		cache.rw.mu.Lock()
		size := cache.rw.bytes
		cache.rw.mu.Unlock()
		if size > limit/4 {
			t.Fatalf("after %d rewrites the cache holds %d bytes of them, over %d", k+1, size, limit/4)
		}
	}
}

// TestWrittenAnewCached checks that a message the processors made (a
// summary in place of the history's start) is written from the cache on
// the next request that sends it: the same bytes as written anew, with
// fewer allocations; and that another summary is written as itself.
func TestWrittenAnewCached(t *testing.T) {
	summary := processor.UserMessage("Summary of the conversation so far: " + longOutput)
	other := processor.UserMessage("Another summary: " + longOutput)
	for _, tc := range []struct {
		codec Codec
		body  string
		keep  int // the messages kept after the summary
		want  string
	}{
		{Chat, `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"}],"stream":true}`, 1,
			`{"model":"m","messages":[{"role":"user","content":{{S}}},{"role":"user","content":"go on"}],"stream":true}`},
		{Responses, `{"model":"m","input":[{"role":"user","content":"go"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},{"role":"user","content":"go on"}],"stream":true}`, 1,
			`{"model":"m","input":[{"type":"message","role":"user","content":{{S}}},{"role":"user","content":"go on"}],"stream":true}`},
		{Messages, `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok"},{"role":"user","content":"go on"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}],"stream":true}`, 2,
			`{"model":"m","messages":[{"role":"user","content":{{S}}},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}],"stream":true}`},
	} {
		t.Run(tc.codec.API(), func(t *testing.T) {
			cache := NewCache(0)
			summarized := func(b *Body, s processor.Message) []processor.Message {
				return append([]processor.Message{s}, b.Messages[len(b.Messages)-tc.keep:]...)
			}
			var got []string
			var bodies []*Body
			for range 2 {
				b, err := tc.codec.Parse([]byte(tc.body), cache)
				if err != nil {
					t.Fatal(err)
				}
				sent, err := b.With(summarized(b, summary))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(sent))
				bodies = append(bodies, b)
			}
			if got[0] != got[1] {
				t.Errorf("the next request differs:\n%s\n%s", got[0], got[1])
			}
			again, err := tc.codec.Parse([]byte(tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			uncached, err := again.With(summarized(again, summary))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(uncached), got[1]); diff != "" {
				t.Errorf("from the cache (-anew +cached):\n%s", diff)
			}
			b := bodies[1]
			out := summarized(b, summary)
			hit := testing.AllocsPerRun(20, func() { _, _ = b.Buffers(out) })
			miss := testing.AllocsPerRun(20, func() { _, _ = again.Buffers(out) })
			if hit >= miss {
				t.Errorf("written from the cache with %v allocations, anew with %v", hit, miss)
			}
			sent, err := b.With(summarized(b, other))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(sent), "Another summary") || strings.Contains(string(sent), "so far") {
				t.Errorf("another summary: %s", sent)
			}
			want := strings.Replace(tc.want, "{{S}}", quoted(summary.Parts[0].(processor.UserPrompt).Content), 1)
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
		})
	}
}
