package trimtools_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// BenchmarkFullHistory replays the largest transcript request by request
// as a host that keeps its full history does: one backing array, the
// trimmer run on a longer prefix of it before every request. One op is
// the whole replay with a new Trimmer; ns/request is the cost of one
// request.
//
//   - tracked: the default options; the Trimmer remembers the
//     conversation and extends its previous result when it can;
//   - untracked: Conversations -1; every request trims and copies the
//     whole history.
func BenchmarkFullHistory(b *testing.B) {
	path := transcripts.Largest(b)
	msgs, err := model.LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	points := requestPoints(msgs)
	if len(points) == 0 {
		b.Fatalf("%s: no request point", filepath.Base(path))
	}
	b.Logf("%s: %d messages, %d requests", filepath.Base(path), len(msgs), len(points))
	for _, bc := range []struct {
		name string
		opts trimtools.Options
	}{
		{"tracked", trimtools.Options{}},
		{"untracked", trimtools.Options{Conversations: -1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				tr := trimtools.New(bc.opts)
				for _, k := range points {
					if _, err := tr.Process(ctx, msgs[:k]); err != nil {
						b.Fatal(err)
					}
				}
			}
			requests := float64(b.N * len(points))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/requests, "ns/request")
			// On a shared, loaded machine wall time overstates the cost;
			// the process's CPU time (GC included) does not.
			b.ReportMetric(float64(cpuTime()-cpu0)/requests, "cpu-ns/request")
		})
	}
}
