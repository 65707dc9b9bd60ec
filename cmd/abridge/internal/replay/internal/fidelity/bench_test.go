package fidelity

import (
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// BenchmarkCounter counts every request of the largest transcript (shared,
// or shipped when the shared set is absent) with a new Counter, as a replay
// does, the requests sending the whole history (raw) or its first 2 and last
// 10 messages; µs/req is the time a request's counting takes, token sets
// cached across requests as in a replay.
func BenchmarkCounter(b *testing.B) {
	h, err := transcript.LoadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	requests := 0
	for _, m := range h {
		if m.Kind == processor.Response {
			requests++
		}
	}
	for _, rule := range []string{"raw", "head2tail10"} {
		b.Run(rule, func(b *testing.B) {
			for b.Loop() {
				replayRule(h, rule, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*requests), "µs/req")
		})
	}
}
