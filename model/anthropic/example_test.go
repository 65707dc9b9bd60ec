package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/anthropic"
	"github.com/abridge-go/abridge/processor"
)

// A Messages model calls the Anthropic Messages API: the system prompt goes to
// "system", max_tokens is always sent, and the usage sums the cache's reads
// and writes into the input tokens, as Anthropic's input_tokens leaves them
// out. openai.NewResponses is the same for the OpenAI Responses API.
func ExampleNew() {
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

	m := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("sk-ant-example"))
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
