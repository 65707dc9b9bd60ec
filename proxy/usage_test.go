package proxy_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// TestUsageMetrics sends two requests of one conversation through the
// proxy with anthropic-sdk-go, streamed, to an upstream that reports
// cache reads and writes: the provider's tokens are counted by type,
// cache writes included, and the ratio of its input tokens to abridge's
// estimate is observed once on each basis: from characters for the
// first request, anchored on the first one's usage for the second.
func TestUsageMetrics(t *testing.T) {
	up := &sseUpstream{events: messagesStream}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	upURL, _ := url.Parse(upSrv.URL + "/v1")
	reg := prometheus.NewRegistry()
	metrics, err := proxy.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(proxy.New(proxy.Options{Upstream: upURL, Metrics: metrics}))
	defer srv.Close()
	bodies, err := openaitest.NewBodies(openaitest.APIMessages, openaitest.ToolConversation(14, "usage metrics"))
	if err != nil {
		t.Fatal(err)
	}
	client := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey(secret), aoption.WithMaxRetries(0))
	for _, n := range []int{10, 12} {
		s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{},
			aoption.WithRequestBody("application/json", bodies.Body(n, true)))
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	got := map[string]float64{}
	for _, typ := range []string{"input", "cached_input", "cache_creation_input", "output"} {
		got[typ] = counter(t, reg, "abridge_provider_tokens_total", "api", "messages", "type", typ)
	}
	for _, basis := range []string{"anchored", "heuristic"} {
		eachChild(t, reg, "abridge_token_estimate_ratio", []string{"api", "messages", "basis", basis}, func(m *dto.Metric) {
			got["ratio "+basis] += float64(m.GetHistogram().GetSampleCount())
		})
	}
	want := map[string]float64{"input": 2 * 852, "cached_input": 2 * 800, "cache_creation_input": 2 * 40, "output": 2 * 2,
		"ratio anchored": 1, "ratio heuristic": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
