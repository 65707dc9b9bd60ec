package window

import (
	"context"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
)

// BenchmarkProcessFullHistory measures the window's own cost per request
// when the host keeps its full history (the largest transcript, replayed
// request by request, with the offline digest): the cached cut is checked
// on every request and a compaction happens every few requests.
func BenchmarkProcessFullHistory(b *testing.B) {
	msgs, err := model.LoadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	points := requestPoints(msgs)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w := New(Options{})
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
	w := New(Options{})
	b.ReportAllocs()
	for range b.N {
		if _, err := w.Process(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
}
