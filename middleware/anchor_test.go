package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// counting is an upstream in every API that reports, for each request,
// factor times the input tokens processor.EstimateTokens gives the history
// it received, and outTokens output tokens; it records how many messages
// each request held.
type counting struct {
	factor    int
	outTokens int

	mu       sync.Mutex
	messages []int
	reported []int
}

func (u *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	codec := wire.ForPath(r.URL.Path)
	if codec == nil {
		http.NotFound(w, r)
		return
	}
	b, err := codec.Parse(data, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in := u.factor * processor.EstimateTokens(b.Messages)
	u.mu.Lock()
	u.messages = append(u.messages, len(b.Messages))
	u.reported = append(u.reported, in)
	u.mu.Unlock()
	out := u.outTokens
	switch codec.API() {
	case "responses":
		openaitest.WriteResponse(w, map[string]any{
			"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-test",
			"output": []map[string]any{{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": "Looking.", "annotations": []any{}}}}},
			"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out},
		}, b.Stream)
	case "messages":
		openaitest.WriteMessage(w, map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
			"content": []map[string]any{{"type": "text", "text": "Looking."}}, "stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out},
		}, b.Stream)
	default:
		usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, in, out, in+out)
		if !b.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Looking.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":%s}`, usage)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`"choices":[{"index":0,"delta":{"role":"assistant","content":"Looking."},"logprobs":null,"finish_reason":null}]`,
			`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]`,
			`"choices":[],"usage":` + usage,
		} {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",%s}\n\n", c)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// requests returns the message counts of the requests received.
func (u *counting) requests() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]int(nil), u.messages...)
}

// sdkSend sends body, a request in api, through the real SDK client of
// that API with mw, streamed when the body says so, and reads the answer
// to its end.
func sdkSend(t *testing.T, api, url string, mw middleware.Middleware, body []byte, stream bool) {
	t.Helper()
	ctx := context.Background()
	switch api {
	case openaitest.APIChat:
		c := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(secret), option.WithMiddleware(mw), option.WithMaxRetries(0))
		raw := option.WithRequestBody("application/json", body)
		if !stream {
			if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{}, raw); err != nil {
				t.Fatal(err)
			}
			return
		}
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{}, raw)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	case openaitest.APIResponses:
		c := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey(secret), option.WithMiddleware(mw), option.WithMaxRetries(0))
		raw := option.WithRequestBody("application/json", body)
		if !stream {
			if _, err := c.Responses.New(ctx, responses.ResponseNewParams{}, raw); err != nil {
				t.Fatal(err)
			}
			return
		}
		s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{}, raw)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	case openaitest.APIMessages:
		c := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey(secret), aoption.WithMiddleware(mw), aoption.WithMaxRetries(0))
		raw := aoption.WithRequestBody("application/json", body)
		if !stream {
			if _, err := c.Messages.New(ctx, anthropic.MessageNewParams{}, raw); err != nil {
				t.Fatal(err)
			}
			return
		}
		s := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{}, raw)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// heuristic is processor.EstimateTokens of a body's history, as the
// codec of api reads it.
func heuristic(t *testing.T, api string, body []byte) int {
	t.Helper()
	b, err := wire.ForPath("/v1"+openaitest.APIPath(api)).Parse(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return processor.EstimateTokens(b.Messages)
}

// TestTokenTriggerAnchored: for each API, streamed and not, through its
// real SDK client, an upstream that reports 3 times the tokens the
// characters suggest makes the window compact the conversation's second
// request, whose characters alone are under the window's token trigger
// but whose estimate anchored on the first request's reported usage is
// over it. With anchoring off, the second request is not compacted.
func TestTokenTriggerAnchored(t *testing.T) {
	msgs := openaitest.ToolConversation(14, "anchored estimates")
	const first, second = 10, 12 // each ends with a tool's output; the second adds a call and its output
	for _, api := range []string{openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages} {
		bodies, err := openaitest.NewBodies(api, msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{false, true} {
			for _, tc := range []struct {
				name      string
				anchors   int
				compacted bool
			}{
				{"anchored", 0, true},
				{"heuristic", -1, false},
			} {
				t.Run(fmt.Sprintf("%s/stream=%t/%s", api, stream, tc.name), func(t *testing.T) {
					one, two := bodies.Body(first, stream), bodies.Body(second, stream)
					h1, h2 := heuristic(t, api, one), heuristic(t, api, two)
					budget := (h2 + 3*h1) / 2
					if !(h1 < h2 && h2 < budget && budget < 3*h1) {
						t.Fatalf("estimates %d and %d, budget %d: the test needs h1 < h2 < budget < 3·h1", h1, h2, budget)
					}
					up := &counting{factor: 3, outTokens: 5}
					srv := httptest.NewServer(up)
					defer srv.Close()
					win := window.New(window.Options{MaxMessages: -1, TriggerTokens: budget, KeepMessages: 4})
					ev := &events{}
					mw := middleware.New(win, middleware.Options{Anchors: tc.anchors, OnEvent: ev.onMiddleware})
					sdkSend(t, api, srv.URL, mw, one, stream)
					sdkSend(t, api, srv.URL, mw, two, stream)

					got := up.requests()
					if len(got) != 2 {
						t.Fatalf("upstream got %d requests, want 2", len(got))
					}
					want := []int{len(parse(t, api, one)), len(parse(t, api, two))}
					if got[0] != want[0] {
						t.Errorf("first request: %d messages forwarded, the client sent %d", got[0], want[0])
					}
					if compacted := got[1] < want[1]; compacted != tc.compacted {
						t.Errorf("second request: %d messages forwarded of %d (compacted %t), want compacted %t",
							got[1], want[1], compacted, tc.compacted)
					}
					if n := ev.count(middleware.EventUsage); n != 2 {
						t.Errorf("%d usage events, want 2", n)
					}
				})
			}
		}
	}
}

// parse returns the messages of a body in api.
func parse(t *testing.T, api string, body []byte) []processor.Message {
	t.Helper()
	b, err := wire.ForPath("/v1"+openaitest.APIPath(api)).Parse(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Messages
}

// TestAnchorBasis: the second request of a conversation is estimated from
// the input tokens the provider reported for the first plus the
// characters of what the client added, when its history begins with the
// first one's and the anchor is still remembered, and after a compaction
// of the first while the client keeps its full history (the window's view
// of the second begins with what the first forwarded); otherwise from its
// characters alone. The usage event of each request carries the estimate
// it was sent with and its basis.
func TestAnchorBasis(t *testing.T) {
	msgs := openaitest.ToolConversation(14, "anchor basis")
	bodies, err := openaitest.NewBodies(openaitest.APIChat, msgs)
	if err != nil {
		t.Fatal(err)
	}
	one, two := bodies.Body(10, false), bodies.Body(12, false)
	other, err := openaitest.NewBodies(openaitest.APIChat, openaitest.ToolConversation(14, "another conversation"))
	if err != nil {
		t.Fatal(err)
	}
	edited := []byte(strings.Replace(string(two), "Make the test suite", "Make the whole test suite", 1))
	otherModel := []byte(strings.Replace(string(two), `"model":"gpt-test"`, `"model":"gpt-other"`, 1))
	const outTokens = 5
	// What follows the first request's answer in the second.
	added := processor.ContentTokens(parse(t, openaitest.APIChat, two)[11:])
	compacting := func() processor.Processor {
		return window.New(window.Options{MaxMessages: 9, KeepMessages: 4})
	}

	type sent struct {
		body []byte
		id   string
	}
	tests := []struct {
		name    string
		anchors int
		chain   func() processor.Processor
		sends   []sent
		// on is the request whose reported usage anchors the last one's
		// estimate, -1 for none: the estimate is then the last
		// history's characters.
		on int
	}{
		{"extends the first", 0, nil, []sent{{one, ""}, {two, ""}}, 0},
		{"same conversation id", 0, nil, []sent{{one, "a"}, {two, "a"}}, 0},
		{"another conversation id", 0, nil, []sent{{one, "a"}, {two, "b"}}, -1},
		{"client changed its history", 0, nil, []sent{{one, ""}, {edited, ""}}, -1},
		{"another model", 0, nil, []sent{{one, ""}, {otherModel, ""}}, -1},
		{"forgotten", 1, nil, []sent{{one, ""}, {other.Body(10, false), ""}, {two, ""}}, -1},
		{"remembered", 2, nil, []sent{{one, ""}, {other.Body(10, false), ""}, {two, ""}}, 0},
		{"anchoring off", -1, nil, []sent{{one, ""}, {two, ""}}, -1},
		{"full history after a compaction", 0, compacting, []sent{{one, ""}, {two, ""}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &counting{factor: 3, outTokens: outTokens}
			srv := httptest.NewServer(up)
			defer srv.Close()
			ev := &events{}
			var chain processor.Processor
			if tt.chain != nil {
				chain = tt.chain()
			}
			mw := middleware.New(chain, middleware.Options{Anchors: tt.anchors, OnEvent: ev.onMiddleware})
			for _, s := range tt.sends {
				h := http.Header{"Content-Type": {"application/json"}}
				if s.id != "" {
					h.Set(middleware.ConversationHeader, s.id)
				}
				if resp, data := send(t, mw, http.MethodPost, srv.URL+"/v1/chat/completions", h, string(s.body)); resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, data)
				}
			}
			ev.mu.Lock()
			defer ev.mu.Unlock()
			var usages []middleware.Event
			for _, e := range ev.mw {
				if e.Type == middleware.EventUsage {
					usages = append(usages, e)
				}
			}
			up.mu.Lock()
			defer up.mu.Unlock()
			if len(usages) != len(tt.sends) || len(up.reported) != len(tt.sends) {
				t.Fatalf("%d usage events, %d requests upstream; want %d", len(usages), len(up.reported), len(tt.sends))
			}
			last := usages[len(usages)-1]
			// From characters, the tokens before and after compare; the
			// estimate is anchored on the usage reported for request on.
			chars := up.reported[len(up.reported)-1] / 3
			want := middleware.Event{TokensAfter: chars, Estimate: chars}
			if tt.on >= 0 {
				want = middleware.Event{TokensAfter: chars, Anchored: true, Estimate: up.reported[tt.on] + outTokens + added}
			}
			got := middleware.Event{Anchored: last.Anchored, TokensAfter: last.TokensAfter, Estimate: last.Estimate}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("last usage event's estimate (-want +got):\n%s", diff)
			}
			if reported := up.reported[len(up.reported)-1]; last.Usage.InputTokens != int64(reported) {
				t.Errorf("usage event reports %d input tokens, the upstream %d", last.Usage.InputTokens, reported)
			}
			if tt.chain != nil && !(up.messages[0] < 10 && up.messages[1] < 12) {
				t.Errorf("upstream got %v messages: want both requests compacted", up.messages)
			}
		})
	}
}

// TestAnchorsConcurrent: many conversations at once, each of several
// requests, over a middleware that remembers fewer of them than there
// are: every request is answered, and (under -race) nothing races.
func TestAnchorsConcurrent(t *testing.T) {
	up := &counting{factor: 3, outTokens: 5}
	srv := httptest.NewServer(up)
	defer srv.Close()
	win := window.New(window.Options{MaxMessages: -1, TriggerTokens: 2000, KeepMessages: 4})
	mw := middleware.New(win, middleware.Options{Anchors: 4})
	var wg sync.WaitGroup
	for c := range 8 {
		bodies, err := openaitest.NewBodies(openaitest.APIChat, openaitest.ToolConversation(20, fmt.Sprintf("topic %d", c)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 4; n <= 18; n += 2 {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(string(bodies.Body(n, false))))
				resp, err := mw(req, http.DefaultClient.Do)
				if err != nil {
					t.Error(err)
					return
				}
				var v map[string]json.RawMessage
				if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
					t.Errorf("status %d, %v", resp.StatusCode, err)
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := len(up.requests()); n != 8*8 {
		t.Errorf("upstream got %d requests, want %d", n, 8*8)
	}
}
