package openaitest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestUpstreamResponses asks the Upstream's Responses API through
// openai-go, as JSON and as a stream: the text and the usage arrive, and
// both requests count as clients'.
func TestUpstreamResponses(t *testing.T) {
	up := &Upstream{Reply: "hello from the fake"}
	srv := httptest.NewServer(up)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model: "gpt-test",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello.")},
	}
	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != up.Reply || resp.Usage.InputTokens == 0 {
		t.Errorf("answer %q with %d input tokens; want %q and some", resp.OutputText(), resp.Usage.InputTokens, up.Reply)
	}
	stream := client.Responses.NewStreaming(ctx, params)
	var deltas string
	var completed responses.Response
	for stream.Next() {
		switch e := stream.Current(); e.Type {
		case "response.output_text.delta":
			deltas += e.Delta
		case "response.completed":
			completed = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != up.Reply || completed.OutputText() != up.Reply || completed.Usage.InputTokens == 0 {
		t.Errorf("stream: deltas %q, completed %q with %d input tokens; want %q twice and some tokens",
			deltas, completed.OutputText(), completed.Usage.InputTokens, up.Reply)
	}
	if chats, summaries := up.Counts(); chats != 2 || summaries != 0 {
		t.Errorf("Counts() = %d, %d; want 2, 0", chats, summaries)
	}
}

// TestUpstreamMessages asks the Upstream's Messages API, as JSON and as a
// stream, and a context overflow: each answer in Anthropic's shape.
func TestUpstreamMessages(t *testing.T) {
	up := &Upstream{Reply: "hello from the fake", MaxPromptChars: 200}
	srv := httptest.NewServer(up)
	defer srv.Close()
	post := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	const short = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"Say hello."}]`

	var msg struct {
		Type    string
		Content []struct{ Type, Text string }
		Usage   struct {
			InputTokens int `json:"input_tokens"`
		}
	}
	if err := json.NewDecoder(post(short + "}").Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != up.Reply || msg.Usage.InputTokens == 0 {
		t.Errorf("answer %+v", msg)
	}

	var events []string
	var text string
	sc := bufio.NewScanner(post(short + `,"stream":true}`).Body)
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, e)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev struct{ Delta struct{ Text string } }
			json.Unmarshal([]byte(d), &ev)
			text += ev.Delta.Text
		}
	}
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, events); diff != "" || text != up.Reply {
		t.Errorf("stream text %q; events (-want +got):\n%s", text, diff)
	}

	long := post(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"` + strings.Repeat("x", 300) + `"}]}`)
	var overflow struct {
		Type  string
		Error struct{ Type, Message string }
	}
	json.NewDecoder(long.Body).Decode(&overflow)
	if long.StatusCode != 400 || overflow.Type != "error" || !strings.HasPrefix(overflow.Error.Message, "prompt is too long") {
		t.Errorf("overflow: status %d, %+v", long.StatusCode, overflow)
	}
}
