package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
)

// An app on openai-go keeps its full history and sends it every time; the
// middleware compacts what leaves the app. Here the window compacts past 8
// messages into the head (through the first answer), one summary (the
// offline digest writes it) and the last 4 messages; the server stands for
// the provider and says how many messages it received.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Messages []json.RawMessage }
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"received %d messages"}}]}`, len(body.Messages))
	}))
	defer srv.Close()

	win := window.New(window.Options{MaxMessages: 8})
	chain := processor.Chain(trimtools.New(trimtools.Options{}), win)
	client := openai.NewClient(
		option.WithBaseURL(srv.URL), option.WithAPIKey("sk-example"),
		option.WithMiddleware(middleware.New(chain, middleware.Options{})),
	)

	history := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse.")}
	for i := 1; i <= 6; i++ {
		history = append(history, openai.UserMessage(fmt.Sprintf("Question %d: %s?", i, strings.Repeat("and some details ", 40))))
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4.1-mini",
			Messages: history,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("app sent %2d, %s\n", len(history), resp.Choices[0].Message.Content)
		history = append(history, resp.Choices[0].Message.ToParam())
	}
	// Output:
	// app sent  2, received 2 messages
	// app sent  4, received 4 messages
	// app sent  6, received 6 messages
	// app sent  8, received 8 messages
	// app sent 10, received 8 messages
	// app sent 12, received 8 messages
}

// A processor the request must not go without, such as redaction, is
// marked required: when it fails, the middleware refuses the request (a
// 500 in the API's error shape, code processing_failed) instead of
// sending it as the app wrote it, and the provider receives nothing.
func Example_required() {
	received := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer srv.Close()

	redact := processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		return nil, errors.New("redaction service unavailable")
	})
	chain := processor.Chain(processor.Required(redact), window.New(window.Options{}))
	client := openai.NewClient(
		option.WithBaseURL(srv.URL), option.WithAPIKey("sk-example"), option.WithMaxRetries(0),
		option.WithMiddleware(middleware.New(chain, middleware.Options{})),
	)
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4.1-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Deploy it.")},
	})
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	fmt.Println("requests the provider received:", received)
	// Output:
	// 500 processing_failed
	// requests the provider received: 0
}

// A host that decides each request's API itself, as a proxy does, calls
// the middleware's per-request Send and learns from its Report what was
// sent: the sizes before and after, and the receipts of the compactions
// made for the request.
func ExampleRewriter_Send() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":120,"completion_tokens":1}}`)
	}))
	defer srv.Close()

	rw := middleware.NewRewriter(window.New(window.Options{MaxMessages: 6}), middleware.Options{})
	msgs := []string{`{"role":"user","content":"Fix the parser."}`, `{"role":"assistant","content":"On it."}`}
	for i := range 6 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Step %d: %s"}`, i, strings.Repeat("details ", 60)),
			`{"role":"assistant","content":"Done."}`)
	}
	msgs = append(msgs, `{"role":"user","content":"And now?"}`)
	body := `{"model":"gpt-4.1-mini","messages":[` + strings.Join(msgs, ",") + `]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))

	api := middleware.APIOf(req.Method, req.URL.Path) // decided once, from the path
	var rep middleware.Report
	resp, err := rw.Send(req, api, &rep, http.DefaultClient.Do)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	fmt.Printf("%s: messages %d → %d, receipts %d, provider's input tokens %d\n",
		rep.API, rep.Client.Messages, rep.Sent.Messages, len(rep.Receipts), rep.Usage.InputTokens)
	// Output:
	// chat: messages 15 → 7, receipts 1, provider's input tokens 120
}
