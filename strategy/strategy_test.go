package strategy_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

func TestByName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		want    strategy.Settings
		wantErr bool
	}{
		{"", strategy.Default(), false},
		{"default", strategy.Settings{Name: "default"}, false},
		{" Economy ", strategy.Settings{Name: "economy", Trim: trimtools.Options{MaxChars: 1000},
			Window: window.Options{MaxMessages: 24, KeepMessages: 6, TailOutputs: 1, FactsChars: 2000, SummaryClip: 300}}, false},
		{"budget", strategy.Settings{Name: "budget", Trim: trimtools.Options{MaxChars: 2000},
			Window: window.Options{MaxMessages: -1, TriggerTokens: 30000, FactsChars: 2000, SummaryClip: 300}}, false},
		{"Budget-12k", strategy.Settings{Name: "budget-12k", Trim: trimtools.Options{MaxChars: 2000},
			Window: window.Options{MaxMessages: -1, TriggerTokens: 12000, FactsChars: 2000, SummaryClip: 300}}, false},
		{"budget-100000", strategy.Settings{Name: "budget-100k", Trim: trimtools.Options{MaxChars: 4000},
			Window: window.Options{MaxMessages: -1, TriggerTokens: 100000, FactsChars: 2000, SummaryClip: 300}}, false},
		{"budget-12500", strategy.Settings{Name: "budget-12500", Trim: trimtools.Options{MaxChars: 2000},
			Window: window.Options{MaxMessages: -1, TriggerTokens: 12500, FactsChars: 2000, SummaryClip: 300}}, false},
		{"budget-1", strategy.Budget(strategy.MinBudget), false},
		{"budget-", strategy.Settings{}, true},
		{"budget-0k", strategy.Settings{}, true},
		{"budget--5k", strategy.Settings{}, true},
		{"budget-99999999k", strategy.Settings{}, true},
		{"cheap", strategy.Settings{}, true},
	} {
		got, err := strategy.ByName(tc.name)
		if (err != nil) != tc.wantErr {
			t.Errorf("ByName(%q) error %v, want error %v", tc.name, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b window.Options) bool {
			return a.MaxMessages == b.MaxMessages && a.KeepMessages == b.KeepMessages && a.TailOutputs == b.TailOutputs &&
				a.TriggerTokens == b.TriggerTokens && a.FactsChars == b.FactsChars && a.SummaryClip == b.SummaryClip
		})); diff != "" {
			t.Errorf("ByName(%q) (-want +got):\n%s", tc.name, diff)
		}
	}
}

// Every strategy docs/figures.md reports is one ByName knows, under its own
// name.
func TestFrontierNames(t *testing.T) {
	for _, n := range strategy.Frontier() {
		st, err := strategy.ByName(n)
		if err != nil {
			t.Errorf("ByName(%q): %v", n, err)
			continue
		}
		if st.Name != n {
			t.Errorf("ByName(%q).Name = %q", n, st.Name)
		}
	}
}

// Each strategy's chain keeps the processor contract.
func TestConformance(t *testing.T) {
	for _, st := range []strategy.Settings{strategy.Default(), strategy.Economy(), strategy.Budget(strategy.MinBudget), strategy.Budget(100000)} {
		t.Run(st.Name, func(t *testing.T) {
			processortest.Run(t, func(t *testing.T) processor.Processor {
				chain, _ := st.Build()
				return chain
			}, processortest.RequireCancel())
		})
	}
}

// TestStrategyPrefixStable replays transcripts through each strategy as an
// agent does (the processed history stored and appended to) and checks
// the cache-aware timing: between two compactions every message sent
// before, but the last two (the trimmer's, leaving the current turn), is
// sent again byte for byte, so the provider's cached prefix holds; a new
// summary marker is the only other place a request may change what was
// sent before.
func TestStrategyPrefixStable(t *testing.T) {
	files := transcripts.Shipped(t)
	if dir, ok := transcripts.SharedDir(); ok && dir != "" && !testing.Short() {
		files = transcripts.Shared(t)
	}
	for _, st := range []strategy.Settings{strategy.Default(), strategy.Economy(), strategy.Budget(12000)} {
		t.Run(st.Name, func(t *testing.T) {
			compactions, stable := 0, 0
			for _, f := range files {
				h, err := transcript.LoadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				chain, _ := st.Build()
				var prev []processor.Message
				if err := processortest.Replay(context.Background(), chain, h, func(k int, out []processor.Message) error {
					if prev != nil {
						if markerOf(out) != markerOf(prev) {
							compactions++
						} else {
							n := len(prev) - 2
							if len(out) < n {
								return fmt.Errorf("%s: no new marker, yet %d messages sent after %d", filepath.Base(f), len(out), len(prev))
							}
							for i := range n {
								if !processor.Equal(out[i], prev[i]) {
									return fmt.Errorf("%s, request at %d messages: message %d changed between compactions", filepath.Base(f), k, i)
								}
							}
							stable++
						}
					}
					prev = out
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d requests kept their prefix, %d made a new summary", stable, compactions)
			if compactions == 0 || stable == 0 {
				t.Errorf("%d compactions, %d stable requests: want both", compactions, stable)
			}
		})
	}
}

// markerOf returns the summary of the marker of h, or "".
func markerOf(h []processor.Message) string {
	for _, m := range h {
		if s, _, ok := summary.ParseMarker(m); ok {
			return s
		}
	}
	return ""
}
