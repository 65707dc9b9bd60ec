package strategy_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/summary"
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
			Window: window.Options{MaxMessages: 24, KeepMessages: 6, TailOutputs: 1}}, false},
		{"cheap", strategy.Settings{}, true},
	} {
		got, err := strategy.ByName(tc.name)
		if (err != nil) != tc.wantErr {
			t.Errorf("ByName(%q) error %v, want error %v", tc.name, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b window.Options) bool {
			return a.MaxMessages == b.MaxMessages && a.KeepMessages == b.KeepMessages && a.TailOutputs == b.TailOutputs
		})); diff != "" {
			t.Errorf("ByName(%q) (-want +got):\n%s", tc.name, diff)
		}
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
	for _, st := range []strategy.Settings{strategy.Default(), strategy.Economy()} {
		t.Run(st.Name, func(t *testing.T) {
			compactions, stable := 0, 0
			for _, f := range files {
				h, err := model.LoadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				chain, _ := st.Build()
				var stored, prev []processor.Message
				next := 0
				for _, k := range processortest.RequestPoints(h) {
					stored = append(stored, h[next:k]...)
					next = k
					out, err := chain.Process(context.Background(), stored)
					if err != nil {
						t.Fatal(err)
					}
					if prev != nil {
						if markerOf(out) != markerOf(prev) {
							compactions++
						} else {
							n := len(prev) - 2
							if len(out) < n {
								t.Fatalf("%s: no new marker, yet %d messages sent after %d", filepath.Base(f), len(out), len(prev))
							}
							for i := range n {
								if !processor.Equal(out[i], prev[i]) {
									t.Fatalf("%s, request at %d messages: message %d changed between compactions", filepath.Base(f), k, i)
								}
							}
							stable++
						}
					}
					prev = out
					stored = out
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
