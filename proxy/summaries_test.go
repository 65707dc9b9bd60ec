package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/abridge-go/abridge/model"
	anthropicmodel "github.com/abridge-go/abridge/model/anthropic"
	openaimodel "github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

const (
	anthropicKey   = "sk-ant-api03-client-secret-0123456789"
	anthropicOAuth = "sk-ant-oat01-client-token-0123456789"
)

// summaryFixture is a proxy in front of two fake upstreams, an OpenAI one
// (Chat Completions and Responses) and an Anthropic one, whose window
// summarizes through the API of each client's request, as abridge serve
// builds it when it has no key of its own: the client's credential pays,
// at its own upstream.
type summaryFixture struct {
	openAI, anthropic *openaitest.Upstream
	srv               *httptest.Server
	reg               *prometheus.Registry
}

// newSummaryFixture builds the fixture; apis names the APIs that get a
// model, the others the digest.
func newSummaryFixture(t *testing.T, apis ...string) *summaryFixture {
	t.Helper()
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
	f := &summaryFixture{openAI: &openaitest.Upstream{}, anthropic: &openaitest.Upstream{}, reg: prometheus.NewRegistry()}
	openAISrv, anthropicSrv := httptest.NewServer(f.openAI), httptest.NewServer(f.anthropic)
	t.Cleanup(openAISrv.Close)
	t.Cleanup(anthropicSrv.Close)
	metrics, err := proxy.NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	openAIUp, anthropicUp := mustURL(t, openAISrv.URL+"/v1"), mustURL(t, anthropicSrv.URL+"/v1")
	// The APIs not named send their summaries to an endpoint off their
	// upstream, where no client's credential may go.
	endpoint := func(api, up string) string {
		if slices.Contains(apis, api) {
			return up
		}
		return "http://summaries.invalid/v1"
	}
	newLLM := func(m model.Model) summarizer.Summarizer {
		return llm.New(model.Observe(m, metrics.SummarizerRequest), llm.Options{})
	}
	opts := func(base string, c *http.Client) []openaimodel.Option {
		return []openaimodel.Option{openaimodel.WithBaseURL(base), openaimodel.WithoutEnvironment(), openaimodel.WithMaxRetries(0), openaimodel.WithHTTPClient(c)}
	}
	routes := []proxy.SummaryRoute{
		{API: "chat", Upstream: openAIUp, Endpoint: endpoint("chat", openAIUp.String()), New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(openaimodel.New(opts(openAIUp.String(), c)...))
		}},
		{API: "responses", Upstream: openAIUp, Endpoint: endpoint("responses", openAIUp.String()), New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(openaimodel.NewResponses(opts(openAIUp.String(), c)...))
		}},
		{API: "messages", Upstream: anthropicUp, Endpoint: endpoint("messages", anthropicSrv.URL), New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(anthropicmodel.New(anthropicmodel.WithBaseURL(anthropicSrv.URL), anthropicmodel.WithoutEnvironment(), anthropicmodel.WithMaxRetries(0), anthropicmodel.WithHTTPClient(c)))
		}},
	}
	sums, unpaid := proxy.ClientPaidSummarizers(routes, metrics.Digest(summarizer.NewDigest(summarizer.DigestOptions{})))
	var want []string
	for _, r := range routes {
		if !slices.Contains(apis, r.API) {
			want = append(want, r.API)
		}
	}
	if diff := cmp.Diff(want, unpaid); diff != "" {
		t.Fatalf("APIs given the digest (-want +got):\n%s", diff)
	}
	win := window.New(window.Options{Summarizer: metrics.Summarizer(sums), MaxMessages: 8, KeepMessages: 4, OnEvent: metrics.WindowEvent, Ahead: -1})
	f.srv = httptest.NewServer(proxy.New(proxy.Options{
		Upstream:  openAIUp,
		Upstreams: map[string]*url.URL{"messages": anthropicUp},
		Chain:     win,
		Metrics:   metrics,
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// turns is the text of a conversation long enough to be compacted.
func turns() []string {
	var out []string
	for i := range 15 {
		out = append(out, fmt.Sprintf("Step %d: run make test and read the output %s", i, strings.Repeat("word ", 40)))
	}
	return out
}

// Clients of each API, sending turns() through the proxy.
func chatClient(t *testing.T, base string) {
	var msgs []openai.ChatCompletionMessageParamUnion
	for i, s := range turns() {
		if i%2 == 0 {
			msgs = append(msgs, openai.UserMessage(s))
		} else {
			msgs = append(msgs, openai.AssistantMessage(s))
		}
	}
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
}

func responsesClient(t *testing.T, base string) {
	var items responses.ResponseInputParam
	for i, s := range turns() {
		role := responses.EasyInputMessageRoleUser
		if i%2 == 1 {
			role = responses.EasyInputMessageRoleAssistant
		}
		items = append(items, responses.ResponseInputItemParamOfMessage(s, role))
	}
	c := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
	if _, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-5-codex",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}); err != nil {
		t.Fatal(err)
	}
}

func messagesClient(opts ...aoption.RequestOption) func(t *testing.T, base string) {
	return func(t *testing.T, base string) {
		var msgs []anthropic.MessageParam
		for i, s := range turns() {
			if i%2 == 0 {
				msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(s)))
			} else {
				msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock(s)))
			}
		}
		c := anthropic.NewClient(append([]aoption.RequestOption{aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(base), aoption.WithMaxRetries(0)}, opts...)...)
		if _, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
}

// summaryCall is what a test sees of a summary request: where it went and
// the credential it carried.
type summaryCall struct {
	Upstream, Path                       string
	Authorization, APIKey, Version, Beta string
}

func (f *summaryFixture) summaryCalls() []summaryCall {
	var out []summaryCall
	for name, up := range map[string]*openaitest.Upstream{"openai": f.openAI, "anthropic": f.anthropic} {
		for _, r := range up.Requests() {
			if !r.Summary {
				continue
			}
			out = append(out, summaryCall{Upstream: name, Path: r.Path, Authorization: r.Header.Get("Authorization"),
				APIKey: r.Header.Get("X-Api-Key"), Version: r.Header.Get("Anthropic-Version"), Beta: r.Header.Get("Anthropic-Beta")})
		}
	}
	return out
}

// TestSummariesThroughClientAPI checks that each client's conversation is
// summarized through its own API, at its own upstream, paid with its own
// credential, and that the credential of one API never reaches the other
// upstream.
func TestSummariesThroughClientAPI(t *testing.T) {
	tests := []struct {
		name   string
		client func(t *testing.T, base string)
		api    string
		want   summaryCall
	}{
		{"chat", chatClient, "chat",
			summaryCall{Upstream: "openai", Path: "/v1/chat/completions", Authorization: "Bearer " + secret}},
		{"responses", responsesClient, "responses",
			summaryCall{Upstream: "openai", Path: "/v1/responses", Authorization: "Bearer " + secret}},
		{"messages with an API key", messagesClient(aoption.WithAPIKey(anthropicKey)), "messages",
			summaryCall{Upstream: "anthropic", Path: "/v1/messages", APIKey: anthropicKey, Version: "2023-06-01"}},
		// Claude Code's OAuth token is refused without its beta flag;
		// its other flags stay out of the summary.
		{"messages with an OAuth token", messagesClient(aoption.WithAuthToken(anthropicOAuth),
			aoption.WithHeader("anthropic-beta", "oauth-2025-04-20,claude-code-20250219,interleaved-thinking-2025-05-14")), "messages",
			summaryCall{Upstream: "anthropic", Path: "/v1/messages", Authorization: "Bearer " + anthropicOAuth, Version: "2023-06-01", Beta: "oauth-2025-04-20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSummaryFixture(t, "chat", "responses", "messages")
			tt.client(t, f.srv.URL)
			if diff := cmp.Diff([]summaryCall{tt.want}, f.summaryCalls()); diff != "" {
				t.Errorf("summary requests (-want +got):\n%s", diff)
			}
			if n := counter(t, f.reg, "abridge_summarizer_tokens_total", "api", tt.api, "type", "input"); n == 0 {
				t.Errorf("abridge_summarizer_tokens_total{api=%q,type=input} = 0, want the summary's tokens", tt.api)
			}
			if n := counter(t, f.reg, "abridge_digest_compactions_total"); n != 0 {
				t.Errorf("abridge_digest_compactions_total = %v, want 0", n)
			}
		})
	}
}

// TestSummariesDigestWithoutModel checks that a client whose API has no
// summary model is compacted by the digest, with no call anywhere, and
// counted.
func TestSummariesDigestWithoutModel(t *testing.T) {
	f := newSummaryFixture(t, "chat")
	messagesClient(aoption.WithAPIKey(anthropicKey))(t, f.srv.URL)
	responsesClient(t, f.srv.URL)
	if calls := f.summaryCalls(); len(calls) != 0 {
		t.Errorf("summary requests %v, want none", calls)
	}
	got := map[string]float64{}
	for _, api := range []string{"chat", "responses", "messages"} {
		got[api] = counter(t, f.reg, "abridge_digest_compactions_total", "api", api)
	}
	if diff := cmp.Diff(map[string]float64{"chat": 0, "responses": 1, "messages": 1}, got); diff != "" {
		t.Errorf("abridge_digest_compactions_total by api (-want +got):\n%s", diff)
	}
	if n := counter(t, f.reg, "abridge_compactions_total", "result", "summarized"); n != 2 {
		t.Errorf("abridge_compactions_total{result=summarized} = %v, want 2", n)
	}
}

// namedSummarizer is a summarizer.Summarizer that writes its name.
type namedSummarizer string

func (n namedSummarizer) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	return string(n), nil
}

// TestClientPaidSummarizers checks which routes a client pays for: those
// whose summaries go to the origin (scheme, host and port) of their
// upstream.
func TestClientPaidSummarizers(t *testing.T) {
	up, _ := url.Parse("https://api.example.com/v1")
	tests := []struct {
		name, endpoint string
		upstream       *url.URL
		want           string // who writes the API's summaries
	}{
		{"endpoint is the upstream", "https://api.example.com/v1", up, "paid"},
		{"another path on the upstream", "https://API.example.com/other", up, "paid"},
		{"another host", "https://summaries.example.com/v1", up, "unpaid"},
		{"another scheme", "http://api.example.com/v1", up, "unpaid"},
		{"another port", "https://api.example.com:8443/v1", up, "unpaid"},
		{"endpoint not a URL", "https://api.example.com/%zz", up, "unpaid"},
		{"no upstream", "https://api.example.com/v1", nil, "unpaid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clients int
			s, unpaidAPIs := proxy.ClientPaidSummarizers([]proxy.SummaryRoute{{
				API: "chat", Upstream: tt.upstream, Endpoint: tt.endpoint,
				New: func(c *http.Client) summarizer.Summarizer {
					if c == nil || c.Transport == nil {
						t.Error("the paid summarizer got no HTTP client that adds the credential")
					}
					clients++
					return namedSummarizer("paid")
				},
			}}, namedSummarizer("unpaid"))
			got, _ := s.ByAPI["chat"].Summarize(context.Background(), nil, "", "")
			other, _ := s.Summarize(context.Background(), nil, "", "") // no API: Default
			type result struct {
				Writer, Default string
				Unpaid          []string
				Clients         int
			}
			want := result{Writer: tt.want, Default: "unpaid"}
			if tt.want == "paid" {
				want.Clients = 1
			} else {
				want.Unpaid = []string{"chat"}
			}
			if diff := cmp.Diff(want, result{got, other, unpaidAPIs, clients}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
