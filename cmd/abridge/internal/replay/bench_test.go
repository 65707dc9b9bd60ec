package replay

import (
	"strconv"
	"testing"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// BenchmarkReplay replays every shared transcript (the shipped ones when
// the shared set is absent) with the digest summarizer, in each host mode
// (processed history, full history in the same memory, full history
// decoded afresh for every request) and window setting, and reports the
// replay's figures as metrics: proc-µs/req is the trimmer's and the
// window's wall time per request without the summarizer's own time,
// proc-cpu-µs/req the same in CPU time of the replaying thread (Linux; not
// inflated by other load), cache-reuse the prompt-cache reuse, summ-in/size
// the summarizer's input over the transcripts' size, summ-calls its calls
// (equal in every mode), naive/size the naive re-summarizing baseline over
// the same, reuse-ceiling the most reuse the window's compaction points
// allow, and needed-kept and needed-kept-far the shares of needed tokens
// kept (see Result.NeededKept; counted outside the processors' timed
// section). In the fresh mode, decode-cpu-µs/req is the CPU time of
// decoding each request's JSON with transcript.Load, and proc/decode the
// processors' CPU time over it.
func BenchmarkReplay(b *testing.B) {
	files := benchFiles(b)
	for _, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
		for _, w := range []struct {
			name string
			opts window.Options
			trim trimtools.Options
		}{{"default", window.Options{}, trimtools.Options{}}, {"tokens", tokenTrigger, trimtools.Options{}},
			{"economy", strategy.Economy().Window, strategy.Economy().Trim}} {
			b.Run(mode.String()+"/"+w.name, func(b *testing.B) {
				t := benchTotal(b, files, Options{Mode: mode, Window: w.opts, Trim: w.trim})
				b.ReportMetric(micros(t.PerRequest), "proc-µs/req")
				if t.ProcessorCPU > 0 {
					b.ReportMetric(micros(t.PerRequestCPU), "proc-cpu-µs/req")
				}
				if mode == ModeFresh {
					b.ReportMetric(micros(t.PerRequestDecodeCPU), "decode-cpu-µs/req")
					b.ReportMetric(t.DecodeRatio(), "proc/decode")
				}
				b.ReportMetric(t.CacheReuse, "cache-reuse")
				b.ReportMetric(t.CacheReuseCeiling, "reuse-ceiling")
				b.ReportMetric(t.SummarizerRatio(), "summ-in/size")
				b.ReportMetric(float64(t.SummarizerCalls), "summ-calls")
				b.ReportMetric(t.NaiveRatio(), "naive/size")
				b.ReportMetric(t.BilledAt10, "billed@10%/req")
				b.ReportMetric(t.BilledAt25, "billed@25%/req")
				b.ReportMetric(t.NeededKept, "needed-kept")
				b.ReportMetric(t.NeededKeptFar, "needed-kept-far")
				b.ReportMetric(float64(t.Requests), "requests")
			})
		}
	}
}

// BenchmarkMaxMessages weighs the count trigger's setting by what a
// request costs, replaying every shared transcript (the shipped ones when
// the shared set is absent) with the LLM summarizer over the recording
// model. Per MaxMessages it reports the prompt-cache reuse and its ceiling,
// the mean estimated prompt tokens, and the input tokens billed per
// request when cached input costs 25% (GPT-4.1 family) or 10% (GPT-5
// family) of the full price: the prompt, with its reused share taken to be
// cached, plus what the summarizer sent to its model (at full price,
// spread over all requests).
func BenchmarkMaxMessages(b *testing.B) {
	files := benchFiles(b)
	for _, n := range []int{40, 50, 64, 80, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			t := benchTotal(b, files, Options{Summarizer: SummarizerRecorder, Window: window.Options{MaxMessages: n}})
			b.ReportMetric(t.CacheReuse, "cache-reuse")
			b.ReportMetric(t.CacheReuseCeiling, "reuse-ceiling")
			b.ReportMetric(t.MeanTokensAfter, "tokens/req")
			b.ReportMetric(t.BilledAt25, "billed@25%/req")
			b.ReportMetric(t.BilledAt10, "billed@10%/req")
		})
	}
}

// benchTotal replays files with opts once per benchmark iteration and
// returns the last replay's totals, failing on an invalid request or when
// nothing was replayed.
func benchTotal(b *testing.B, files []string, opts Options) Result {
	b.Helper()
	var rep *Report
	for b.Loop() {
		var err error
		if rep, err = Run(b.Context(), files, opts); err != nil {
			b.Fatal(err)
		}
	}
	t := rep.Total
	if t.InvalidRequests != 0 || t.Requests == 0 {
		b.Fatalf("%d requests, %d invalid, first: %s", t.Requests, t.InvalidRequests, t.FirstError)
	}
	return t
}

func benchFiles(b *testing.B) []string {
	if dir, ok := transcripts.SharedDir(); ok && dir != "" {
		return transcripts.Shared(b)
	}
	return transcripts.Shipped(b)
}
