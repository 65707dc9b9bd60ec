package config

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap/zaptest"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
)

func TestUpstreamAndSummaryKey(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		upstream string
		keySet   bool
	}{
		{"nothing set", nil, DefaultUpstream, false},
		{"base URL", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, "http://127.0.0.1:11434/v1", false},
		{"primary key", map[string]string{"OPENAI_API_KEY": "sk-1"}, DefaultUpstream, true},
		{"summary key", map[string]string{"ABRIDGE_SUMMARY_API_KEY": "sk-2"}, DefaultUpstream, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.env)
			got := []any{c.Upstream(), c.SummaryKeySet()}
			if diff := cmp.Diff([]any{tt.upstream, tt.keySet}, got); diff != "" {
				t.Errorf("Upstream, SummaryKeySet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummaryModelOptions checks that a model built from the options calls
// the summarizer's endpoint with its model name and key.
func TestSummaryModelOptions(t *testing.T) {
	srv := newFakeOpenAI(t)
	c := mustLoad(t, map[string]string{"ABRIDGE_SUMMARY_BASE_URL": srv.URL, "ABRIDGE_SUMMARY_API_KEY": "sk-sum",
		"ABRIDGE_SUMMARY_MODEL": "small"})
	m := openai.New(c.SummaryModelOptions(nil)...)
	if _, err := m.Request(context.Background(), []processor.Message{processor.UserMessage("hi")}, model.Settings{}); err != nil {
		t.Fatal(err)
	}
	want := []seen{{Model: "small", Authorization: "Bearer sk-sum", Messages: 1}}
	if diff := cmp.Diff(want, srv.seen()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestBuildOnSummaryRequest checks that the host sees every request of the
// LLM summarizer, with the usage the provider reported.
func TestBuildOnSummaryRequest(t *testing.T) {
	srv := newFakeOpenAI(t)
	c := mustLoad(t, map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "k", "ABRIDGE_MAX_MESSAGES": "8"})
	var mu sync.Mutex
	var got []processor.Usage
	comp, err := c.Build(BuildOptions{Logger: zaptest.NewLogger(t), OnSummaryRequest: func(_ context.Context, o model.Observation) {
		mu.Lock()
		defer mu.Unlock()
		if o.Err != nil {
			t.Errorf("summary request failed: %v", o.Err)
		}
		got = append(got, processor.Usage{InputTokens: o.Usage.InputTokens, OutputTokens: o.Usage.OutputTokens})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := comp.Chain.Process(context.Background(), conversation(20)); err != nil {
		t.Fatal(err)
	}
	want := []processor.Usage{{InputTokens: 50, OutputTokens: 10}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary requests seen (-want +got):\n%s", diff)
	}
}
