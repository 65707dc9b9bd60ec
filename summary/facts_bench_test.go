package summary_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/summary"
)

// BenchmarkFacts measures the facts section of the first 40 messages of
// each shipped transcript, their old tool outputs trimmed as the window
// gets them in the default chain.
func BenchmarkFacts(b *testing.B) {
	f := summary.NewFacts(summary.FactsOptions{})
	for _, file := range transcripts.Shipped(b) {
		h, err := model.LoadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		// What the window sees: old outputs trimmed.
		h, err = trimtools.New(trimtools.Options{}).Process(context.Background(), h[:min(len(h), 40)])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(file), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = f.Section(h, "", 0)
			}
		})
	}
}
