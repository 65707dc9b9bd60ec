package strategy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
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
