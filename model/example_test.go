package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// A history converts to openai-go message params (one OpenAI message per
// request part) and back.
func ExampleToOpenAI() {
	history := []processor.Message{
		processor.NewRequest(
			processor.SystemPrompt{Content: "You are terse."},
			processor.UserPrompt{Content: "List the files."},
		),
		processor.NewResponse(processor.ToolCall{ToolCallID: "call_1", ToolName: "bash", Args: `{"command":"ls"}`}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "call_1", Content: "a.go"}),
	}
	params, err := model.ToOpenAI(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range params {
		b, _ := json.Marshal(p)
		fmt.Println(string(b))
	}
	back, err := model.FromOpenAI(params)
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

// A Recorder answers from a script and records what each request sent.
func ExampleRecorder() {
	rec := model.NewRecorder(
		model.Respond(processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "clock", Args: `{}`})),
		model.RespondText("It is noon."),
	)
	history := []processor.Message{processor.UserMessage("What time is it?")}
	ctx := context.Background()
	for {
		resp, err := rec.Request(ctx, history, model.Settings{Tools: []model.Tool{{Name: "clock"}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		history = append(history, resp)
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			break
		}
		history = append(history, processor.NewRequest(processor.ToolReturn{ToolName: "clock", ToolCallID: calls[0].ToolCallID, Content: "12:00"}))
	}
	fmt.Println("answer:", history[len(history)-1].Text())
	for i, c := range rec.Calls() {
		fmt.Printf("call %d sent %d messages, tools %d\n", i, len(c.Messages), len(c.Settings.Tools))
	}
	// Output:
	// answer: It is noon.
	// call 0 sent 1 messages, tools 1
	// call 1 sent 3 messages, tools 1
}

// NewOpenAI talks to any Chat Completions endpoint; here a local fake. A
// prompt too long for the model's window is matched with
// ErrContextOverflow.
func ExampleNewOpenAI() {
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

	m := model.NewOpenAI(model.WithBaseURL(srv.URL), model.WithAPIKey("test"), model.WithModel("fake-1"), model.WithMaxRetries(0))
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
func ExampleOpenAI_reasoning() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"deepseek-reasoner","choices":[{"message":{"role":"assistant","content":"4",
			"reasoning_content":"Two and two make four."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()

	m := model.NewOpenAI(model.WithBaseURL(srv.URL), model.WithAPIKey("test"), model.WithModel("deepseek-reasoner"), model.WithMaxRetries(0))
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
	params, err := model.ToOpenAI([]processor.Message{resp})
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

// An Anthropic model calls the Messages API: the system prompt goes to
// "system", max_tokens is always sent, and the usage sums the cache's reads
// and writes into the input tokens, as Anthropic's input_tokens leaves them
// out. NewResponses is the same for the OpenAI Responses API.
func ExampleNewAnthropic() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			System    []struct{ Text string }
			MaxTokens int `json:"max_tokens"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		fmt.Println(r.URL.Path, r.Header.Get("X-Api-Key"), body.System[0].Text, body.MaxTokens)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Two files."}],
			"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":900,"cache_creation_input_tokens":90,"output_tokens":4}}`)
	}))
	defer srv.Close()

	m := model.NewAnthropic(model.WithBaseURL(srv.URL), model.WithAPIKey("sk-ant-example"))
	resp, err := m.Request(context.Background(), []processor.Message{
		processor.SystemMessage("You are terse."),
		processor.UserMessage("How many files?"),
	}, model.Settings{})
	if err != nil {
		fmt.Println(err)
		return
	}
	u := resp.Usage()
	fmt.Println(resp.Text(), resp.Info().FinishReason, u.InputTokens, u.CachedInputTokens, u.OutputTokens)
	// Output:
	// /v1/messages sk-ant-example You are terse. 8192
	// Two files. end_turn 1000 900 4
}
