package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// originalMessages returns the "messages" array of a transcript file as
// generic JSON.
func originalMessages(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Messages []any `json:"messages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Messages) == 0 {
		t.Fatalf("%s has no messages", path)
	}
	return doc.Messages
}

// asJSON marshals v and decodes it back as generic JSON.
func asJSON(t *testing.T, v any) []any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkRoundTrip loads a transcript, converts it to openai-go params and
// back, and checks that the params reproduce the original JSON and the
// history comes back the same.
func checkRoundTrip(t *testing.T, path string) {
	want := originalMessages(t, path)
	history, err := transcript.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != len(want) {
		t.Fatalf("loaded %d messages, file has %d", len(history), len(want))
	}
	params, err := ToParams(history)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, asJSON(t, params)); diff != "" {
		t.Errorf("ToParams(LoadFile) differs from the file (-file +converted):\n%s", diff)
	}
	back, err := FromParams(params)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(history, back); diff != "" {
		t.Errorf("FromParams(ToParams(h)) differs from h (-h +back):\n%s", diff)
	}
}

func TestRoundTripShipped(t *testing.T) {
	for _, path := range transcripts.Shipped(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { checkRoundTrip(t, path) })
	}
}

func TestRoundTripShared(t *testing.T) {
	for _, path := range transcripts.Shared(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { checkRoundTrip(t, path) })
	}
}

func TestToParams(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	history := []processor.Message{
		processor.NewRequest(
			processor.SystemPrompt{Content: "Be brief."},
			processor.SystemPrompt{Content: "Answer in French.", Developer: true, Name: "ops"},
			processor.UserPrompt{Content: "Read a.txt", Name: "ann"},
		),
		{
			Kind: processor.Response,
			Parts: []processor.Part{
				processor.Thinking{Content: "I should read it.", Signature: "sig"},
				processor.ToolCall{ToolCallID: "c1", ToolName: "read", Args: `{"path":"a.txt"}`},
				processor.ToolCall{ToolCallID: "c2", ToolName: "stat", Args: `{"path":"a.txt"}`},
			},
			Meta: &processor.Meta{Usage: processor.Usage{InputTokens: 99}, ModelName: "m", FinishReason: "tool_calls", Time: when},
		},
		processor.NewRequest(
			processor.ToolReturn{ToolName: "read", ToolCallID: "c1", Content: "ignored", JSON: json.RawMessage(`{"text":"bonjour"}`)},
			processor.RetryPrompt{ToolName: "stat", ToolCallID: "c2", Content: "stat: unknown tool"},
			processor.RetryPrompt{Content: "Answer with one word."},
		),
		{Kind: processor.Response, Parts: []processor.Part{processor.Thinking{Content: "only thoughts"}}, Meta: &processor.Meta{Name: "bot", Refusal: "Non."}},
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
			{Type: "text", Text: "And this?"},
			{Type: "input_audio", Data: json.RawMessage(`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`)},
			{Type: "file", Data: json.RawMessage(`{"type":"file","file":{"file_id":"f1"},"x-extra":true}`)},
		}}),
	}
	want := []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "developer", "content": "Answer in French.", "name": "ops"},
		map[string]any{"role": "user", "content": "Read a.txt", "name": "ann"},
		map[string]any{"role": "assistant", "tool_calls": []any{
			map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":"a.txt"}`}},
			map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "stat", "arguments": `{"path":"a.txt"}`}},
		}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": `{"text":"bonjour"}`},
		map[string]any{"role": "tool", "tool_call_id": "c2", "content": "stat: unknown tool"},
		map[string]any{"role": "user", "content": "Answer with one word."},
		map[string]any{"role": "assistant", "name": "bot", "refusal": "Non."},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "And this?"},
			map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": "AAAA", "format": "wav"}},
			map[string]any{"type": "file", "file": map[string]any{"file_id": "f1"}, "x-extra": true},
		}},
	}
	before := processor.Clone(history)
	params, err := ToParams(history)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, asJSON(t, params)); diff != "" {
		t.Errorf("ToParams (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, history); diff != "" {
		t.Errorf("ToParams modified its input (-before +after):\n%s", diff)
	}
	// Known part types come out typed, unknown keys verbatim.
	parts := params[8].OfUser.Content.OfArrayOfContentParts
	if parts[1].OfInputAudio == nil || parts[1].OfInputAudio.InputAudio.Data != "AAAA" {
		t.Errorf("input_audio part not typed: %+v", parts[1])
	}
}

// TestToParamsErrors checks that ToParams refuses what
// transcript.ToRawMessages refuses (its TestWriteErrors has every case),
// with the same errors.
func TestToParamsErrors(t *testing.T) {
	tests := []struct {
		name    string
		history []processor.Message
		want    string
	}{
		{"unknown kind", []processor.Message{processor.UserMessage("a"), {Kind: 7, Parts: []processor.Part{processor.Text{}}}}, "message 1: unknown message kind kind(7)"},
		{"tool call without id", []processor.Message{processor.UserMessage("a"), processor.NewResponse(processor.ToolCall{ToolName: "f"})}, `message 1: part 0: tool call "f" without id`},
		{"user part with bad data", []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Data: json.RawMessage(`{"type":`)}}})}, `message 0: part 0: user content 0 ("image_url")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ToParams(tt.history)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, processor.ErrMalformed) {
				t.Fatalf("error = %v, want a processor.ErrMalformed containing %q", err, tt.want)
			}
			if _, cerr := transcript.ToRawMessages(tt.history); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("transcript.ToRawMessages error = %v, want the same as ToParams's", cerr)
			}
		})
	}
}

// checkMatchesSave checks that the params a request sends for the
// transcript at path are the messages transcript.Save writes, but for the
// reasoning_content of answers without tool calls, which a request leaves
// out.
func checkMatchesSave(t *testing.T, path string) {
	history, err := transcript.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := transcript.Save(&buf, history); err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(buf.Bytes(), &saved); err != nil {
		t.Fatal(err)
	}
	want := make([]any, len(saved.Messages))
	for i, m := range saved.Messages {
		if m["tool_calls"] == nil {
			delete(m, "reasoning_content")
		}
		want[i] = m
	}
	params, err := toOpenAI(history, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, asJSON(t, params)); diff != "" {
		t.Errorf("request params differ from the saved messages (-saved +params):\n%s", diff)
	}
}

// TestMatchesSave runs checkMatchesSave on a history with every kind of
// part, the shipped transcripts and the shared ones (skipped, saying
// where they were looked for, when absent).
func TestMatchesSave(t *testing.T) {
	t.Run("every part", func(t *testing.T) {
		h := []processor.Message{
			processor.NewRequest(
				processor.SystemPrompt{Content: "Be brief.", Name: "ops"},
				processor.SystemPrompt{Content: "", Developer: true},
				processor.UserPrompt{Contents: []processor.UserContent{
					{Type: "text", Text: "And this?"},
					{Type: "image_url", Data: json.RawMessage(`{"type":"image_url","image_url":{"url":"https://x/a.png"}}`)},
					{Type: "file", Data: json.RawMessage(`{"type":"file","file":{"file_id":"f1"},"n":1.50}`)},
				}},
			),
			{Kind: processor.Response, Parts: []processor.Part{
				processor.Thinking{Content: "Look."}, processor.Thinking{}, processor.Thinking{Content: "Then read."},
				processor.Text{Content: "a"}, processor.Text{Content: "b"},
				processor.ToolCall{ToolCallID: "c1", ToolName: "read", Args: `{}`},
			}, Meta: &processor.Meta{Name: "bot"}},
			processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", Contents: []string{"x", "y"}}),
			{Kind: processor.Response, Parts: []processor.Part{processor.Thinking{Content: "Done."}, processor.Text{}}, Meta: &processor.Meta{Refusal: "No."}},
			processor.NewRequest(processor.ToolReturn{ToolCallID: "c2", JSON: json.RawMessage(`{"ok":true}`)}, processor.RetryPrompt{ToolCallID: "c3", Content: "again"}, processor.RetryPrompt{Content: "Try again."}),
			processor.NewResponse(),
		}
		path := filepath.Join(t.TempDir(), "h.json")
		if err := transcript.SaveFile(path, h); err != nil {
			t.Fatal(err)
		}
		checkMatchesSave(t, path)
	})
	for set, list := range map[string]func(testing.TB) []string{"shipped": transcripts.Shipped, "shared": transcripts.Shared} {
		t.Run(set, func(t *testing.T) {
			for _, path := range list(t) {
				t.Run(filepath.Base(path), func(t *testing.T) { checkMatchesSave(t, path) })
			}
		})
	}
}

func TestFromParams(t *testing.T) {
	assistant := openai.ChatCompletionMessage{
		Content: "Let me look.",
		ToolCalls: []openai.ChatCompletionMessageToolCallUnion{{
			ID: "c1", Type: "function",
			Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: "read", Arguments: `{"path":"a"}`},
		}},
	}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.DeveloperMessage("dev"),
		openai.UserMessage("hi"),
		assistant.ToParam(),
		openai.ToolMessage("contents of a", "c1"),
		openai.ToolMessage("late answer", "c-unknown"),
		openai.AssistantMessage("done"),
	}
	want := []processor.Message{
		processor.SystemMessage("sys"),
		processor.NewRequest(processor.SystemPrompt{Content: "dev", Developer: true}),
		processor.UserMessage("hi"),
		processor.NewResponse(processor.Text{Content: "Let me look."}, processor.ToolCall{ToolCallID: "c1", ToolName: "read", Args: `{"path":"a"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "read", ToolCallID: "c1", Content: "contents of a"}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c-unknown", Content: "late answer"}),
		processor.TextMessage("done"),
	}
	got, err := FromParams(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromParams (-want +got):\n%s", diff)
	}
}

func TestFromParamsErrors(t *testing.T) {
	user := openai.UserMessage("hi")
	tests := []struct {
		name string
		msgs []openai.ChatCompletionMessageParamUnion
		want string
	}{
		{"no role", []openai.ChatCompletionMessageParamUnion{user, {}}, "message 1: message without role"},
		{"tool without tool_call_id", []openai.ChatCompletionMessageParamUnion{user, openai.ToolMessage("x", "")}, "message 1: tool message without tool_call_id"},
		{"tool without content", []openai.ChatCompletionMessageParamUnion{{OfTool: &openai.ChatCompletionToolMessageParam{ToolCallID: "a"}}}, "message 0: tool message without content"},
		{"user without content", []openai.ChatCompletionMessageParamUnion{{OfUser: &openai.ChatCompletionUserMessageParam{}}}, "message 0: user message without content"},
		{"system without content", []openai.ChatCompletionMessageParamUnion{{OfSystem: &openai.ChatCompletionSystemMessageParam{}}}, "message 0: system message without content"},
		//lint:ignore SA1019 checks that the deprecated message type is rejected
		{"function message", []openai.ChatCompletionMessageParamUnion{{OfFunction: &openai.ChatCompletionFunctionMessageParam{Name: "f"}}}, "message 0: deprecated function message is not supported"},
		{"tool call without id", []openai.ChatCompletionMessageParamUnion{user, {OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{}}},
		}}}, "message 1: assistant tool call 0 without id"},
		{"custom tool call", []openai.ChatCompletionMessageParamUnion{{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{ID: "x"}}},
		}}}, `message 0: assistant tool call 0 has unsupported type "custom"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromParams(tt.msgs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			var me *transcript.MessageError
			if !errors.As(err, &me) {
				t.Errorf("error %q is not a *MessageError", err)
			}
		})
	}
}

// TestOneNameRule reads the same bodies, whose members are named in other
// cases than the API's, with the transcript loader, the proxy's Chat
// codec and the openai-go conversion (openai-go's params decoded from the
// body, then FromParams): all three read a member by its exact name only,
// a name in another case being an unknown member, so they read the same
// history or all refuse the body.
func TestOneNameRule(t *testing.T) {
	call := func(id, name string) processor.ToolCall {
		return processor.ToolCall{ToolCallID: id, ToolName: name, Args: "{}"}
	}
	tests := []struct {
		name     string
		messages string
		want     []processor.Message // nil: refused
	}{
		{"name in another case", `[{"role":"user","content":"hi","Name":"ann"}]`,
			[]processor.Message{processor.UserMessage("hi")}},
		{"content in two cases", `[{"role":"user","content":"a","Content":"b"}]`,
			[]processor.Message{processor.UserMessage("a")}},
		{"text of a part in two cases", `[{"role":"user","content":[{"type":"text","text":"a","TEXT":"b"}]}]`,
			[]processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "a"}}})}},
		{"tool calls in another case", `[{"role":"user","content":"go"},{"role":"assistant","content":"ok","Tool_Calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}]`,
			[]processor.Message{processor.UserMessage("go"), processor.TextMessage("ok")}},
		{"id and function name in two cases", `[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","ID":"c2","type":"function","function":{"name":"ls","Name":"rm","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"a.go"}]`,
			[]processor.Message{processor.UserMessage("go"), processor.NewResponse(call("c1", "ls")),
				processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a.go"})}},
		{"refusal in another case", `[{"role":"user","content":"go"},{"role":"assistant","content":null,"Refusal":"no"}]`,
			[]processor.Message{processor.UserMessage("go"), processor.NewResponse()}},
		{"reasoning_content in another case", `[{"role":"user","content":"go"},{"role":"assistant","content":"ok","Reasoning_Content":"hmm"}]`,
			[]processor.Message{processor.UserMessage("go"), processor.TextMessage("ok")}},
		{"role in another case", `[{"Role":"user","content":"hi"}]`, nil},
		{"tool_call_id in another case", `[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]},{"role":"tool","Tool_Call_Id":"c1","content":"a.go"}]`, nil},
		{"type of a part in another case", `[{"role":"user","content":[{"Type":"text","text":"a"}]}]`, nil},
	}
	readers := []struct {
		name string
		read func(body []byte) ([]processor.Message, error)
	}{
		{"transcript.Load", func(body []byte) ([]processor.Message, error) { return transcript.Load(bytes.NewReader(body)) }},
		{"wire.Chat.Parse", func(body []byte) ([]processor.Message, error) {
			b, err := wire.Chat.Parse(body, nil)
			if err != nil {
				return nil, err
			}
			return b.Messages, nil
		}},
		{"FromParams", func(body []byte) ([]processor.Message, error) {
			var req struct {
				Messages []openai.ChatCompletionMessageParamUnion `json:"messages"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				return nil, err
			}
			return FromParams(req.Messages)
		}},
	}
	for _, tt := range tests {
		for _, r := range readers {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				got, err := r.read([]byte(`{"model":"m","messages":` + tt.messages + `}`))
				switch {
				case tt.want == nil && err == nil:
					t.Fatalf("read %v, want the body refused", got)
				case tt.want != nil && err != nil:
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got, cmp.Comparer(processor.Equal)); tt.want != nil && diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}
