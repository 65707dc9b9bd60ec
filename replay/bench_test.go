package replay

import (
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/processors/window"
)

// BenchmarkReplay replays every shared transcript (the shipped ones when
// the shared set is absent) with the digest summarizer, per mode and
// window setting, and reports the replay's figures as metrics:
// proc-µs/req is the trimmer's and the window's wall time per request
// without the summarizer's own time, proc-cpu-µs/req the same in CPU time
// of the replaying thread (Linux; not inflated by other load), cache-reuse the prompt-cache reuse,
// summ-in/size the summarizer's input over the transcripts' size and
// naive/size the naive re-summarizing baseline over the same.
func BenchmarkReplay(b *testing.B) {
	files := benchFiles(b)
	for _, mode := range []Mode{ModeProcessed, ModeFull} {
		for _, w := range []struct {
			name string
			opts window.Options
		}{{"default", window.Options{}}, {"tokens", tokenTrigger}} {
			b.Run(mode.String()+"/"+w.name, func(b *testing.B) {
				opts := Options{Mode: mode, Window: w.opts}
				var rep *Report
				for b.Loop() {
					var err error
					rep, err = Run(b.Context(), files, opts)
					if err != nil {
						b.Fatal(err)
					}
				}
				t := rep.Total
				if t.InvalidRequests != 0 {
					b.Fatalf("%d invalid requests, first: %s", t.InvalidRequests, t.FirstError)
				}
				b.ReportMetric(micros(t.PerRequest), "proc-µs/req")
				if t.ProcessorCPU > 0 {
					b.ReportMetric(micros(t.PerRequestCPU), "proc-cpu-µs/req")
				}
				b.ReportMetric(t.CacheReuse, "cache-reuse")
				b.ReportMetric(t.SummarizerRatio(), "summ-in/size")
				b.ReportMetric(t.NaiveRatio(), "naive/size")
				b.ReportMetric(float64(t.Requests), "requests")
			})
		}
	}
}

func benchFiles(b *testing.B) []string {
	if dir, ok := transcripts.SharedDir(); ok && dir != "" {
		return transcripts.Shared(b)
	}
	return transcripts.Shipped(b)
}
