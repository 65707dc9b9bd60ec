package openai

import (
	"context"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/providertest"
)

// Tests of what OpenAI-compatible servers do differently from OpenAI:
// reasoning in reasoning_content or reasoning, tool calls without an id.

func TestOpenAIReasoning(t *testing.T) {
	const bash = `{"id":"call_r","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}`
	call := processor.ToolCall{ToolCallID: "call_r", ToolName: "bash", Args: `{"command":"ls"}`}
	tests := []struct {
		name string
		// message is the JSON response's message; events, when set, are
		// streamed instead.
		message   string
		events    []string
		want      []processor.Part
		wantDelta []string
	}{
		{
			name:    "reasoning_content before the text",
			message: `{"role":"assistant","content":"Two files.","reasoning_content":"The user wants a count."}`,
			want:    []processor.Part{processor.Thinking{Content: "The user wants a count."}, processor.Text{Content: "Two files."}},
		},
		{
			name:    "reasoning",
			message: `{"role":"assistant","content":"Two files.","reasoning":"Count them."}`,
			want:    []processor.Part{processor.Thinking{Content: "Count them."}, processor.Text{Content: "Two files."}},
		},
		{
			name:    "reasoning_content wins over reasoning",
			message: `{"content":"ok","reasoning_content":"first","reasoning":"second"}`,
			want:    []processor.Part{processor.Thinking{Content: "first"}, processor.Text{Content: "ok"}},
		},
		{
			name:    "empty reasoning_content falls back to reasoning",
			message: `{"content":"ok","reasoning_content":"","reasoning":"second"}`,
			want:    []processor.Part{processor.Thinking{Content: "second"}, processor.Text{Content: "ok"}},
		},
		{
			name:    "null ignored",
			message: `{"content":"ok","reasoning_content":null,"reasoning":null}`,
			want:    []processor.Part{processor.Text{Content: "ok"}},
		},
		{
			name:    "number and object ignored",
			message: `{"content":"ok","reasoning_content":42,"reasoning":{"effort":"high"}}`,
			want:    []processor.Part{processor.Text{Content: "ok"}},
		},
		{
			name:    "reasoning only",
			message: `{"content":"","reasoning_content":"Hmm."}`,
			want:    []processor.Part{processor.Thinking{Content: "Hmm."}},
		},
		{
			name:    "reasoning with tool calls",
			message: `{"content":null,"reasoning_content":"List first.","tool_calls":[` + bash + `]}`,
			want:    []processor.Part{processor.Thinking{Content: "List first."}, call},
		},
		{
			name: "stream: reasoning_content deltas concatenated",
			events: []string{
				chunk(`{"role":"assistant","content":null,"reasoning_content":"The user "}`, ""),
				chunk(`{"reasoning_content":"wants "}`, ""),
				chunk(`{"reasoning_content":"a count."}`, ""),
				chunk(`{"content":"Two","reasoning_content":null}`, ""),
				chunk(`{"content":" files."}`, ""),
				chunk(`{}`, "stop"),
				"[DONE]",
			},
			want:      []processor.Part{processor.Thinking{Content: "The user wants a count."}, processor.Text{Content: "Two files."}},
			wantDelta: []string{"Two", " files."},
		},
		{
			name: "stream: reasoning deltas",
			events: []string{
				chunk(`{"role":"assistant","content":"","reasoning":"Count "}`, ""),
				chunk(`{"content":"","reasoning":"them."}`, ""),
				chunk(`{"content":"Two."}`, "stop"),
				"[DONE]",
			},
			want:      []processor.Part{processor.Thinking{Content: "Count them."}, processor.Text{Content: "Two."}},
			wantDelta: []string{"Two."},
		},
		{
			name: "stream: both fields in a delta taken once",
			events: []string{
				chunk(`{"role":"assistant","reasoning_content":"a","reasoning":"a"}`, ""),
				chunk(`{"reasoning_content":"b","reasoning":"b"}`, ""),
				chunk(`{"content":"ok"}`, "stop"),
				"[DONE]",
			},
			want:      []processor.Part{processor.Thinking{Content: "ab"}, processor.Text{Content: "ok"}},
			wantDelta: []string{"ok"},
		},
		{
			name: "stream: null, number and other choices ignored",
			events: []string{
				chunk(`{"role":"assistant","reasoning_content":null}`, ""),
				chunk(`{"reasoning_content":"a"}`, ""),
				chunk(`{"reasoning_content":7}`, ""),
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"test-model-2025","choices":[{"index":1,"delta":{"reasoning_content":"other choice"},"finish_reason":null}]}`,
				chunk(`{"reasoning_content":"b"}`, ""),
				chunk(`{"content":"ok"}`, "stop"),
				"[DONE]",
			},
			want:      []processor.Part{processor.Thinking{Content: "ab"}, processor.Text{Content: "ok"}},
			wantDelta: []string{"ok"},
		},
		{
			name: "stream: reasoning with a tool call",
			events: []string{
				chunk(`{"role":"assistant","content":null,"reasoning_content":"List "}`, ""),
				chunk(`{"reasoning_content":"first."}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"call_r","type":"function","function":{"name":"bash","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				"[DONE]",
			},
			want: []processor.Part{processor.Thinking{Content: "List first."}, call},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := providertest.ReplyJSON(200, completion(tt.message, ""))
			var settings model.Settings
			var deltas []string
			if tt.events != nil {
				handler = providertest.ReplySSE(tt.events...)
				settings.OnText = func(d string) { deltas = append(deltas, d) }
			}
			got, err := chatModel(providertest.NewServer(t, handler)).Request(context.Background(), providertest.History(), settings)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Parts); diff != "" {
				t.Errorf("response parts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDelta, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// generatedID matches the ids given to tool calls that came without one.
var generatedID = regexp.MustCompile(`^call_[0-9a-f]{24}$`)

func TestOpenAIToolCallIDs(t *testing.T) {
	// gen stands for a generated id in want.
	const gen = "<generated>"
	call := func(id, args string) processor.ToolCall {
		return processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: args}
	}
	tests := []struct {
		name string
		// message is the JSON response's message; events, when set, are
		// streamed instead.
		message string
		events  []string
		want    []processor.Part
	}{
		{
			name: "missing and empty ids",
			message: `{"content":null,"tool_calls":[
				{"type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},
				{"id":"","type":"function","function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}},
				{"id":null,"function":{"name":"bash","arguments":"{}"}}]}`,
			want: []processor.Part{call(gen, `{"command":"ls"}`), call(gen, `{"command":"pwd"}`), call(gen, `{}`)},
		},
		{
			name: "ids kept when present",
			message: `{"content":"Looking.","tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"bash","arguments":"{}"}},
				{"type":"function","function":{"name":"bash","arguments":"{\"x\":1}"}}]}`,
			want: []processor.Part{processor.Text{Content: "Looking."}, call("call_a", `{}`), call(gen, `{"x":1}`)},
		},
		{
			name: "stream: an id that never arrives",
			events: []string{
				chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"type":"function","function":{"name":"bash","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"ls\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				"[DONE]",
			},
			want: []processor.Part{call(gen, `{"command":"ls"}`)},
		},
		{
			name: "stream: two calls, one with an id",
			events: []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"","function":{"name":"bash","arguments":"{}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"id":"call_s","type":"function","function":{"name":"bash","arguments":"{\"x\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"1}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":2,"function":{"name":"bash","arguments":"{\"y\":2}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				"[DONE]",
			},
			want: []processor.Part{call(gen, `{}`), call("call_s", `{"x":1}`), call(gen, `{"y":2}`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handler := providertest.ReplyJSON(200, completion(tt.message, ""))
			var settings model.Settings
			if tt.events != nil {
				handler = providertest.ReplySSE(tt.events...)
				settings.OnText = func(string) {}
			}
			core, logs := observer.New(zapcore.DebugLevel)
			m := chatModel(providertest.NewServer(t, handler), WithLogger(zap.New(core)))
			got, err := m.Request(context.Background(), providertest.History(), settings)
			if err != nil {
				t.Fatal(err)
			}
			var generated []string
			seen := map[string]bool{}
			for k, p := range got.Parts {
				c, ok := p.(processor.ToolCall)
				if !ok {
					continue
				}
				if seen[c.ToolCallID] {
					t.Errorf("tool call id %q given twice", c.ToolCallID)
				}
				seen[c.ToolCallID] = true
				if generatedID.MatchString(c.ToolCallID) {
					generated = append(generated, c.ToolCallID)
					c.ToolCallID = gen
					got.Parts[k] = c
				}
			}
			if diff := cmp.Diff(tt.want, got.Parts); diff != "" {
				t.Errorf("response parts, generated ids as %q (-want +got):\n%s", gen, diff)
			}
			var logged []string
			for _, e := range logs.FilterMessage("response tool call without id: generated one").All() {
				logged = append(logged, e.ContextMap()["id"].(string))
			}
			if diff := cmp.Diff(generated, logged); diff != "" {
				t.Errorf("generated ids logged at debug level (-generated +logged):\n%s", diff)
			}
		})
	}
}

// A response with reasoning and a tool call without id goes into the
// history; the next requests pair the tool's answer with the generated id
// and send that response's reasoning back as reasoning_content (DeepSeek's
// thinking mode requires it in a tool loop), but not the reasoning of a
// response without tool calls.
func TestOpenAIReasoningSentBack(t *testing.T) {
	const args = `{"command":"ls"}`
	tests := []struct {
		name   string
		first  http.HandlerFunc
		stream bool
	}{
		{
			name: "JSON",
			first: providertest.ReplyJSON(200, completion(`{"role":"assistant","content":"Listing.","reasoning_content":"I should list.","reasoning":"I should list.",
				"tool_calls":[{"type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`, "")),
		},
		{
			name: "stream",
			first: providertest.ReplySSE(
				chunk(`{"role":"assistant","content":"Listing.","reasoning_content":"I should list."}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`, "tool_calls"),
				"[DONE]",
			),
			stream: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			f := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				if requests.Add(1) == 1 {
					tt.first(w, r)
					return
				}
				providertest.ReplyJSON(200, completion(`{"content":"a.go","reasoning_content":"One file."}`, ""))(w, r)
			})
			m := chatModel(f)
			var settings model.Settings
			if tt.stream {
				settings.OnText = func(string) {}
			}
			history := []processor.Message{processor.UserMessage("List the files.")}
			resp, err := m.Request(context.Background(), history, settings)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.ToolCalls()
			if len(calls) != 1 || !generatedID.MatchString(calls[0].ToolCallID) {
				t.Fatalf("tool calls %+v, want one with a generated id", calls)
			}
			if _, ok := resp.Parts[0].(processor.Thinking); !ok {
				t.Fatalf("first part %#v, want the reasoning", resp.Parts[0])
			}
			id := calls[0].ToolCallID
			history = append(history, resp, processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: id, Content: "a.go"}))
			if err := processor.Validate(history); err != nil {
				t.Fatalf("history with the generated id: %v", err)
			}
			answer, err := m.Request(context.Background(), history, model.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			history = append(history, answer, processor.UserMessage("Thanks."))
			if _, err := m.Request(context.Background(), history, model.Settings{}); err != nil {
				t.Fatal(err)
			}

			reqs := f.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server received %d requests, want 3", len(reqs))
			}
			want := []any{
				map[string]any{"role": "user", "content": "List the files."},
				map[string]any{"role": "assistant", "content": "Listing.", "reasoning_content": "I should list.", "tool_calls": []any{
					map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "bash", "arguments": args}},
				}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": "a.go"},
			}
			if diff := cmp.Diff(want, reqs[1].Body["messages"]); diff != "" {
				t.Errorf("messages of the second request (-want +got):\n%s", diff)
			}
			want = append(want,
				map[string]any{"role": "assistant", "content": "a.go"},
				map[string]any{"role": "user", "content": "Thanks."})
			if diff := cmp.Diff(want, reqs[2].Body["messages"]); diff != "" {
				t.Errorf("messages of the third request (-want +got):\n%s", diff)
			}
		})
	}
}
