package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// A history converts to openai-go message params (one OpenAI message per
// request part) and back.
func ExampleToParams() {
	history := []processor.Message{
		processor.NewRequest(
			processor.SystemPrompt{Content: "You are terse."},
			processor.UserPrompt{Content: "List the files."},
		),
		processor.NewResponse(processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "call_1", Content: "a.go"}),
	}
	params, err := openai.ToParams(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range params {
		b, _ := json.Marshal(p)
		fmt.Println(string(b))
	}
	back, err := openai.FromParams(params)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range back {
		fmt.Print(m.Kind, ":")
		for _, p := range m.Parts {
			fmt.Print(" ", p.PartKind())
		}
		fmt.Println()
	}
	fmt.Println("tool name restored:", back[len(back)-1].Parts[0].(processor.ToolReturn).ToolName)
	// Output:
	// {"content":"You are terse.","role":"system"}
	// {"content":"List the files.","role":"user"}
	// {"tool_calls":[{"id":"call_1","function":{"arguments":"{\"command\":\"ls\"}","name":"bash"},"type":"function"}],"role":"assistant"}
	// {"content":"a.go","tool_call_id":"call_1","role":"tool"}
	// request: system-prompt
	// request: user-prompt
	// response: tool-call
	// request: tool-return
	// tool name restored: bash
}

// New talks to any Chat Completions endpoint; here a local fake. A
// prompt too long for the model's window is matched with
// ErrContextOverflow.
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		if len(body.Messages) > 2 {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"maximum context length exceeded","type":"invalid_request_error","code":"context_length_exceeded"}}`)
			return
		}
		io.WriteString(w, `{"model":"fake-1","choices":[{"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
	}))
	defer srv.Close()

	m := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"), openai.WithModel("fake-1"), openai.WithMaxRetries(0))
	ctx := context.Background()
	resp, err := m.Request(ctx, []processor.Message{processor.UserMessage("Hi")}, model.Settings{Temperature: model.Float(0)})
	if err != nil {
		fmt.Println(err)
		return
	}
	meta := resp.Info()
	fmt.Printf("%s said %q (%s), %d input tokens\n", meta.ModelName, resp.Text(), meta.FinishReason, meta.Usage.InputTokens)

	long := []processor.Message{processor.UserMessage("a"), processor.TextMessage("b"), processor.UserMessage("c")}
	_, err = m.Request(ctx, long, model.Settings{})
	fmt.Println(errors.Is(err, model.ErrContextOverflow), err)
	// Output:
	// fake-1 said "Hello!" (stop), 9 input tokens
	// true model provider status 400 (context_length_exceeded): maximum context length exceeded
}

// The reasoning an OpenAI-compatible server (DeepSeek, vLLM, SGLang, Qwen,
// OpenRouter, Ollama) returns beside the answer is kept as a Thinking part,
// which is never sent back.
func ExampleChat_reasoning() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"deepseek-reasoner","choices":[{"message":{"role":"assistant","content":"4",
			"reasoning_content":"Two and two make four."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()

	m := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"), openai.WithModel("deepseek-reasoner"), openai.WithMaxRetries(0))
	resp, err := m.Request(context.Background(), []processor.Message{processor.UserMessage("2 + 2?")}, model.Settings{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range resp.Parts {
		switch p := p.(type) {
		case processor.Thinking:
			fmt.Println("thinking:", p.Content)
		case processor.Text:
			fmt.Println("text:", p.Content)
		}
	}
	params, err := openai.ToParams([]processor.Message{resp})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(params[0])
	fmt.Println("sent back:", string(b))
	// Output:
	// thinking: Two and two make four.
	// text: 4
	// sent back: {"content":"4","role":"assistant"}
}

// Compacting an openai-go history directly, then continuing the
// conversation by appending the next user message. The offline digest
// stands in for the LLM summarizer.
func ExampleCompact() {
	history := []sdk.ChatCompletionMessageParamUnion{
		sdk.UserMessage("Rename Foo to Bar everywhere."),
		sdk.AssistantMessage("Renamed in 12 files: " + strings.Repeat("pkg/x/file.go, ", 120) + "and their tests."),
		sdk.UserMessage("Now update the docs."),
		sdk.AssistantMessage("Docs updated: " + strings.Repeat("docs/guide.md section 3, ", 100) + "done."),
	}
	digest := summarizer.NewDigest(summarizer.DigestOptions{})
	out, rep, err := openai.Compact(context.Background(), digest, history, "the docs")
	if err != nil {
		fmt.Println(err)
		return
	}
	out = append(out, sdk.UserMessage("What is left?"))
	fmt.Println(rep.MessagesBefore, "->", rep.MessagesAfter, "messages;", len(out), "with the next prompt")
	// Output:
	// 4 -> 2 messages; 3 with the next prompt
}

// A Responses model calls the OpenAI Responses API, statelessly: store is
// false and the whole history goes as input items each time.
func ExampleNewResponses() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Store bool              `json:"store"`
			Input []json.RawMessage `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		fmt.Println(r.URL.Path, "store:", body.Store, "items:", len(body.Input))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-test",
			"output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Two files.","annotations":[]}]}],
			"usage":{"input_tokens":12,"output_tokens":3,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`)
	}))
	defer srv.Close()

	m := openai.NewResponses(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"), openai.WithMaxRetries(0))
	resp, err := m.Request(context.Background(), []processor.Message{
		processor.SystemMessage("You are terse."),
		processor.UserMessage("How many files?"),
	}, model.Settings{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text(), resp.Info().FinishReason, resp.Usage().InputTokens)
	// Output:
	// /responses store: false items: 2
	// Two files. completed 12
}
