package window

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestMemoryStoreSpans saves spans under one key, a few and more than
// linearSpans, and checks that Spans returns exactly those whose Last is
// among the ends asked for, the most recently saved first, either way it
// looks them up.
func TestMemoryStoreSpans(t *testing.T) {
	tests := []struct {
		name  string
		saved int
		ends  []int // the Lasts asked for, by the index of the span saved
	}{
		{"none asked", 3, nil},
		{"one of a few", 3, []int{1}},
		{"all of a few", 3, []int{0, 1, 2}},
		{"some of many", 17, []int{0, 5, 11, 16}},
		{"none of many", 17, []int{-1}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := NewMemoryStore(0)
			k := Key{9}
			span := func(i int) Span {
				return Span{Digest: Digest{byte(i), 1}, Last: Key{byte(i), 2}, Count: i + 1, Summary: "s"}
			}
			for i := range tt.saved {
				if err := store.Save(ctx, k, span(i)); err != nil {
					t.Fatal(err)
				}
			}
			var ends []Key
			for _, i := range tt.ends {
				ends = append(ends, span(i).Last)
			}
			ends = append(ends, Key{0xff}) // an end no span has
			got, err := store.Spans(ctx, k, func() []Key { return ends })
			if err != nil {
				t.Fatal(err)
			}
			var want []Span
			for i := tt.saved - 1; i >= 0; i-- { // the most recent first
				for _, j := range tt.ends {
					if i == j {
						want = append(want, span(i))
					}
				}
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Spans (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemoryStoreReplaces checks which span a digest saved again keeps: a
// fallback never replaces a summarizer's summary, a prepared span never
// replaces one in use, and otherwise the last saved wins.
func TestMemoryStoreReplaces(t *testing.T) {
	span := func(summary string, fallback, prepared bool) Span {
		return Span{Digest: Digest{1}, Last: Key{2}, Count: 3, Summary: summary, Fallback: fallback, Prepared: prepared}
	}
	tests := []struct {
		name  string
		saves []Span
		want  Span
	}{
		{"again", []Span{span("a", false, false), span("b", false, false)}, span("b", false, false)},
		{"fallback after summary", []Span{span("a", false, false), span("d", true, false)}, span("a", false, false)},
		{"summary after fallback", []Span{span("d", true, false), span("a", false, false)}, span("a", false, false)},
		{"used after prepared", []Span{span("p", false, true), span("a", false, false)}, span("a", false, false)},
		{"prepared after used", []Span{span("a", false, false), span("p", false, true)}, span("a", false, false)},
		{"prepared again", []Span{span("p", false, true), span("q", false, true)}, span("q", false, true)},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := NewMemoryStore(0)
			for _, sp := range tt.saves {
				if err := store.Save(ctx, Key{9}, sp); err != nil {
					t.Fatal(err)
				}
			}
			got, err := store.Spans(ctx, Key{9}, func() []Key { return []Key{{2}} })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Span{tt.want}, got); diff != "" {
				t.Errorf("Spans (-want +got):\n%s", diff)
			}
		})
	}
}
