package window

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"

	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// BenchmarkProcessFullHistory measures the window's own cost per request
// when the host keeps its full history (the largest transcript, replayed
// request by request, with the offline digest): the cached cut is checked
// on every request and a compaction happens every few requests.
func BenchmarkProcessFullHistory(b *testing.B) {
	msgs, err := transcript.LoadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	points := requestPoints(msgs)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := New(Options{Ahead: -1})
		for _, i := range points {
			if _, err := w.Process(context.Background(), msgs[:i+1]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(points)), "ns/request")
}

// BenchmarkProcessBelowTrigger measures a request that needs no compaction.
func BenchmarkProcessBelowTrigger(b *testing.B) {
	h := conversation(15, 500)
	w := New(Options{Ahead: -1})
	b.ReportAllocs()
	for range b.N {
		if _, err := w.Process(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
}

// constSummary is a summarizer that costs nothing, so that a benchmark
// measures the window alone.
type constSummary struct{}

func (constSummary) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	return "Summary of the work so far.", nil
}

// BenchmarkSharedFullHistory replays every shared transcript with the
// trimmer and the window, the host keeping its full history, with a
// summarizer that costs nothing: ns/request is the processors' own cost.
func BenchmarkSharedFullHistory(b *testing.B) {
	dir, ok := transcripts.SharedDir()
	if !ok {
		b.Skipf("shared transcripts not found at %s", dir)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var convs [][]processor.Message
	var points [][]int
	requests := 0
	for _, f := range files {
		msgs, err := transcript.LoadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		convs = append(convs, msgs)
		points = append(points, requestPoints(msgs))
		requests += len(points[len(points)-1])
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		trim, w := trimtools.New(trimtools.Options{}), New(Options{Ahead: -1, Summarizer: constSummary{}})
		for k, msgs := range convs {
			for _, i := range points[k] {
				h, err := trim.Process(ctx, msgs[:i+1])
				if err == nil {
					_, err = w.Process(ctx, h)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*requests), "ns/request")
}
