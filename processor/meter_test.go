package processor_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

func TestUsageMeter(t *testing.T) {
	processor.AddUsage(context.Background(), processor.Usage{InputTokens: 1}) // no meter: nothing happens
	ctx, m := processor.WithUsageMeter(context.Background())
	processor.AddUsage(ctx, processor.Usage{InputTokens: 100, CachedInputTokens: 20, OutputTokens: 5, PromptMessages: 3})
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	processor.AddUsage(child, processor.Usage{InputTokens: 50, OutputTokens: 7, PromptMessages: 2})
	got, calls := m.Usage()
	want := processor.Usage{InputTokens: 150, CachedInputTokens: 20, OutputTokens: 12}
	if diff := cmp.Diff(want, got); diff != "" || calls != 2 {
		t.Errorf("Usage() = _, %d calls, want 2 (-want +got):\n%s", calls, diff)
	}
}
