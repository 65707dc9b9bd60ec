package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// theSecret is what the redactor of these tests takes out of tool outputs.
const theSecret = "sk-live-0123456789abcdef"

// redactor replaces theSecret in tool outputs, as a host's redaction
// processor does; with down set, it fails, as one calling a redaction
// service that is down does. It leaves the last request alone, as the
// processor contract asks.
func redactor(down error) processor.Processor {
	return processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if down != nil {
			return nil, down
		}
		out := make([]processor.Message, len(h))
		for i, m := range h {
			out[i] = m
			if i == len(h)-1 {
				continue
			}
			out[i], _ = processor.MapParts(m, func(p processor.Part) (processor.Part, bool) {
				r, ok := p.(processor.ToolReturn)
				if !ok || !strings.Contains(r.Content, theSecret) {
					return p, false
				}
				r.Content = strings.ReplaceAll(r.Content, theSecret, "[redacted]")
				return r, true
			})
		}
		return out, nil
	})
}

// secretBodies are requests of each wire API whose history holds theSecret
// in the output of an earlier tool call, and the path each is sent to.
var secretBodies = []struct{ api, path, body string }{
	{"chat", "/v1/chat/completions", `{"model":"m","messages":[` +
		`{"role":"user","content":"Deploy it."},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"cat .env\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"API_KEY=` + theSecret + `"},` +
		`{"role":"assistant","content":"Deployed."},` +
		`{"role":"user","content":"Go on."}]}`},
	{"responses", "/v1/responses", `{"model":"m","input":[` +
		`{"role":"user","content":"Deploy it."},` +
		`{"type":"function_call","call_id":"c1","name":"bash","arguments":"{\"command\":\"cat .env\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"API_KEY=` + theSecret + `"},` +
		`{"role":"assistant","content":"Deployed."},` +
		`{"role":"user","content":"Go on."}]}`},
	{"messages", "/v1/messages", `{"model":"m","max_tokens":100,"messages":[` +
		`{"role":"user","content":"Deploy it."},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"bash","input":{"command":"cat .env"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"API_KEY=` + theSecret + `"}]},` +
		`{"role":"assistant","content":"Deployed."},` +
		`{"role":"user","content":"Go on."}]}`},
}

// errorCode reads the code of an error answer in the shape of api.
func errorCode(t *testing.T, api string, data []byte) string {
	t.Helper()
	if api == "messages" {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(data, &e); err != nil || e.Type != "error" || e.Error.Type != "api_error" {
			t.Fatalf("answer %s is not an Anthropic api_error (%v)", data, err)
		}
		code, _, _ := strings.Cut(e.Error.Message, ":")
		return code
	}
	var e struct {
		Error struct{ Type, Code, Message string }
	}
	if err := json.Unmarshal(data, &e); err != nil || e.Error.Type == "" || !strings.HasPrefix(e.Error.Message, "abridge: ") {
		t.Fatalf("answer %s is not an OpenAI error of abridge's (%v)", data, err)
	}
	return e.Error.Code
}

// TestRequired sends a request whose history holds a secret through
// chains with a redactor: a chain holding a required processor that fails
// refuses the request in the API's error shape, and nothing reaches the
// upstream; one whose redactor is not required sends it unprocessed,
// secret included, as it does for any failing processor.
func TestRequired(t *testing.T) {
	down := errors.New("redaction service unavailable")
	failing := processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		return nil, errors.New("window failed")
	})
	trim := trimtools.New(trimtools.Options{})
	for _, tc := range []struct {
		name  string
		chain processor.Processor
		// refused: answered 500 processing_failed, nothing upstream;
		// else sent, with the secret or without it.
		refused, secretSent bool
	}{
		{name: "required redactor fails", chain: processor.Chain(processor.Required(redactor(down)), trim), refused: true},
		{name: "required redactor works, a later processor fails", chain: processor.Chain(processor.Required(redactor(nil)), failing), refused: true},
		{name: "the chain marked required, its redactor fails", chain: processor.Required(processor.Chain(redactor(down), trim)), refused: true},
		{name: "required redactor works", chain: processor.Chain(processor.Required(redactor(nil)), trim)},
		{name: "redactor not required fails: sent as written", chain: processor.Chain(redactor(down), trim), secretSent: true},
	} {
		for _, b := range secretBodies {
			t.Run(tc.name+"/"+b.api, func(t *testing.T) {
				up := &openaitest.Upstream{}
				srv := httptest.NewServer(up)
				defer srv.Close()
				ev := &events{}
				mw := middleware.New(tc.chain, middleware.Options{OnEvent: ev.onMiddleware})
				resp, data := send(t, mw, http.MethodPost, srv.URL+b.path, nil, b.body)
				reqs := up.Requests()
				if tc.refused {
					if resp.StatusCode != http.StatusInternalServerError {
						t.Fatalf("status %d (%s), want 500", resp.StatusCode, data)
					}
					if code := errorCode(t, b.api, data); code != middleware.CodeProcessingFailed {
						t.Errorf("error code %q, want %q", code, middleware.CodeProcessingFailed)
					}
					if len(reqs) != 0 {
						t.Errorf("upstream got %d requests, want none", len(reqs))
					}
					if ev.count(middleware.EventRejected) != 1 || ev.count(middleware.EventChainFailed) != 0 ||
						!errors.Is(ev.mw[0].Err, middleware.ErrRequiredFailed) || ev.mw[0].Code != middleware.CodeProcessingFailed {
						t.Errorf("events %+v, want one rejection for ErrRequiredFailed", ev.mw)
					}
					return
				}
				if len(reqs) != 1 {
					t.Fatalf("upstream got %d requests, want 1 (status %d: %s)", len(reqs), resp.StatusCode, data)
				}
				if got := bytes.Contains(reqs[0].Body, []byte(theSecret)); got != tc.secretSent {
					t.Errorf("secret sent upstream: %v, want %v:\n%s", got, tc.secretSent, reqs[0].Body)
				}
			})
		}
	}
}

// TestRequiredStored: a Responses request naming previous_response_id,
// whose history the processors cannot reach, is refused by a chain holding
// a required processor, and passes untouched otherwise.
func TestRequiredStored(t *testing.T) {
	body := `{"model":"m","previous_response_id":"resp_0","input":[{"type":"function_call_output","call_id":"c1","output":"API_KEY=` + theSecret + `"}]}`
	for _, tc := range []struct {
		name    string
		chain   processor.Processor
		refused bool
	}{
		{"required", processor.Required(redactor(nil)), true},
		{"not required", redactor(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			resp, data := send(t, middleware.New(tc.chain, middleware.Options{}), http.MethodPost, srv.URL+"/v1/responses", nil, body)
			if sent := len(up.Requests()); tc.refused != (sent == 0) {
				t.Errorf("upstream got %d requests (status %d: %s), refused: want %v", sent, resp.StatusCode, data, tc.refused)
			}
			if tc.refused && errorCode(t, "responses", data) != middleware.CodeProcessingFailed {
				t.Errorf("answer %s, want processing_failed", data)
			}
		})
	}
}

// TestRequiredThroughOpenAI shows the refusal as an openai-go app sees it:
// an *openai.Error with status 500 and the code processing_failed.
func TestRequiredThroughOpenAI(t *testing.T) {
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	mw := middleware.New(processor.Required(redactor(errors.New("down"))), middleware.Options{})
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("sk-test"),
		option.WithMiddleware(mw), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError || apiErr.Code != middleware.CodeProcessingFailed {
		t.Fatalf("error %v, want an *openai.Error 500 processing_failed", err)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}
