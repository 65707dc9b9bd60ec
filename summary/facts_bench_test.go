package summary_test

import (
	"context"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// factsFilesB returns the shipped transcripts and, when present, the
// shared ones.
func factsFilesB(tb testing.TB) []string {
	files := transcripts.Shipped(tb)
	if dir, ok := transcripts.SharedDir(); ok && dir != "" {
		files = append(files, transcripts.Shared(tb)...)
	}
	return files
}

// trimmedHistory loads a transcript as the window gets it in the default
// chain: its old tool outputs trimmed.
func trimmedHistory(tb testing.TB, file string) []processor.Message {
	h, err := transcript.LoadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	h, err = trimtools.New(trimtools.Options{}).Process(context.Background(), h)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// factsSpan is about the mean number of messages the window's compactions
// summarize in the replay of the shared transcripts (3,733 in 201).
const factsSpan = 19

// BenchmarkFacts measures the facts section of every shipped and shared
// transcript (the shared ones when present) cut in spans of the window's
// mean length, their old tool outputs trimmed as the window gets them in
// the default chain, each section merged into the next; ns/op is one
// section.
func BenchmarkFacts(b *testing.B) {
	f := summary.NewFacts(summary.FactsOptions{})
	var spans [][]processor.Message
	for _, file := range factsFilesB(b) {
		h := trimmedHistory(b, file)
		for from := 0; from < len(h); from += factsSpan {
			spans = append(spans, h[from:min(len(h), from+factsSpan)])
		}
	}
	b.ReportAllocs()
	prev, k := "", 0
	for b.Loop() {
		if k == len(spans) {
			k, prev = 0, ""
		}
		_, prev = summary.SplitFacts(f.Section(spans[k], prev, 0))
		k++
	}
}
