package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// Build builds the model under test on the fake server s, with [Key], no
// retries and the model name "test-model".
type Build func(s *Server) model.Model

// ErrorTest is a failure a model must report as Want says.
type ErrorTest struct {
	Name     string
	Handler  http.HandlerFunc
	Settings model.Settings
	Want     ErrorCase
}

// RunErrors sends [History] with each test's settings to a model built on
// a server answering with its handler, and checks the error (see
// [CheckError]).
func RunErrors(t *testing.T, build Build, tests []ErrorTest) {
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			f := NewServer(t, tt.Handler)
			_, err := build(f).Request(context.Background(), History(), tt.Settings)
			CheckError(t, err, tt.Want)
		})
	}
}

// StreamTest is a stream of named events and what a model must make of it.
type StreamTest struct {
	Name string
	// Events are the stream's, as [ReplyEvents] takes them.
	Events []string
	// Want is the response, WantDelta what OnText received.
	Want      processor.Message
	WantDelta []string
}

// RunStreaming sends [History] with Settings.OnText to a model built on a
// server answering with each test's events, and checks the response, the
// deltas OnText received and that the body asked for a stream.
func RunStreaming(t *testing.T, build Build, tests []StreamTest) {
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			f := NewServer(t, ReplyEvents(tt.Events...))
			var deltas []string
			got, err := build(f).Request(context.Background(), History(), model.Settings{OnText: func(d string) { deltas = append(deltas, d) }})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.Want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.WantDelta, deltas); diff != "" {
				t.Errorf("OnText deltas (-want +got):\n%s", diff)
			}
			if s := f.Only(t).Body["stream"]; s != true {
				t.Errorf("body's stream = %v, want true", s)
			}
		})
	}
}

// The keys [RunWithoutEnvironment] puts in the environment.
const (
	EnvOpenAIKey    = "sk-env-openai-0123456789" // OPENAI_API_KEY
	EnvAnthropicKey = "sk-ant-env-0123456789"    // ANTHROPIC_API_KEY
)

// EnvTest is a model and how it sends the environment's key.
type EnvTest struct {
	Name string
	// Build builds the model on base, without retries, and WithoutEnvironment
	// when noEnv is set.
	Build func(base string, noEnv bool) model.Model
	// Reply is the server's answer, a JSON body.
	Reply string
	// Header is the header that carries the key, EnvKey its value.
	Header, EnvKey string
}

// RunWithoutEnvironment checks that a model built WithoutEnvironment sends
// no key of the environment's, and that without it the environment's key
// is sent. It sets OPENAI_API_KEY to [EnvOpenAIKey], ANTHROPIC_API_KEY to
// [EnvAnthropicKey] and ANTHROPIC_AUTH_TOKEN to "" for the test.
func RunWithoutEnvironment(t *testing.T, tests []EnvTest) {
	t.Setenv("OPENAI_API_KEY", EnvOpenAIKey)
	t.Setenv("ANTHROPIC_API_KEY", EnvAnthropicKey)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	for _, tt := range tests {
		for _, noEnv := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/without=%v", tt.Name, noEnv), func(t *testing.T) {
				f := NewServer(t, ReplyJSON(200, tt.Reply))
				if _, err := tt.Build(f.URL, noEnv).Request(context.Background(), History(), model.Settings{}); err != nil {
					t.Fatal(err)
				}
				h := f.Only(t).Header
				want := tt.EnvKey
				if noEnv {
					want = ""
				}
				if got := h.Get(tt.Header); got != want {
					t.Errorf("%s = %q, want %q", tt.Header, got, want)
				}
				if noEnv && (h.Get("Authorization") != "" || h.Get("X-Api-Key") != "") {
					t.Errorf("a credential was sent: %v", h)
				}
			})
		}
	}
}

// RunInvalidRequests checks that what the Responses and Messages models
// cannot send is refused before any call, with an error naming it.
func RunInvalidRequests(t *testing.T, build Build) {
	foreign := []processor.Message{processor.UserMessage("hi"),
		processor.NewResponse(processor.Opaque{API: "chat", Type: "audio", Raw: `{"id":"a1"}`})}
	image := []processor.Message{processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
		{Type: "text", Text: "look"}, {Type: "image_url", Data: json.RawMessage(`{"type":"image_url","image_url":{"url":"https://x/y.png"}}`)}}})}
	tests := []struct {
		name     string
		history  []processor.Message
		settings model.Settings
		want     string
	}{
		{"required with no tools", History(), model.Settings{ToolChoice: "required"}, `tool choice "required" with no tools offered`},
		{"a choice of no offered tool", History(), model.Settings{ToolChoice: "grep", Tools: []model.Tool{BashTool()}}, `tool choice "grep" names no offered tool`},
		{"negative max tokens", History(), model.Settings{MaxTokens: -1}, "negative max tokens -1"},
		{"bad schema", History(), model.Settings{Tools: []model.Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, `tool "x": parameters must be a JSON object schema`},
		{"an item of another API", foreign, model.Settings{}, `message 1 part 0: chat item of type "audio" cannot be sent`},
		{"an image", image, model.Settings{}, `message 0 part 0: user content part 1 has type "image_url": only text is sent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewServer(t, ReplyJSON(200, "{}"))
			_, err := build(f).Request(context.Background(), tt.history, tt.settings)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if n := len(f.Requests()); n != 0 {
				t.Errorf("%d requests were sent, want none", n)
			}
		})
	}
}
