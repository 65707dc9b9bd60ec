package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/testkit/transcripts"
)

// TestHostModesAgree replays the transcripts in the three host modes
// (processed history, full history in the same memory, full history
// decoded afresh for every request) and checks that they send the same
// requests and cost the summarizer the same: the window finds by content
// what it summarized, however the host keeps its history. Only the
// figures of time differ. It runs on the shared transcripts when they are
// present (the shipped ones under the race detector or -short, or when the
// shared set is absent).
func TestHostModesAgree(t *testing.T) {
	files := transcripts.Shipped(t)
	if !testing.Short() && !raceBuild {
		if dir, ok := transcripts.SharedDir(); ok && dir != "" {
			files = transcripts.Shared(t)
		}
	}
	for _, summ := range []string{SummarizerDigest, SummarizerRecorder} {
		t.Run(summ, func(t *testing.T) {
			var reports [3]*Report
			for i, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
				rep, err := Run(t.Context(), files, Options{Mode: mode, Summarizer: summ})
				if err != nil {
					t.Fatal(err)
				}
				checkTotal(t, rep)
				reports[i] = rep
			}
			ignore := cmp.Options{cmpopts.IgnoreUnexported(Result{}), cmpopts.IgnoreFields(Result{}, "ProcessorTime", "PerRequest", "ProcessorCPU", "PerRequestCPU",
				"SummarizerTime", "DecodeTime", "DecodeCPU", "PerRequestDecodeCPU")}
			for i, mode := range []string{"full", "fresh"} {
				for k := range reports[0].Results {
					if diff := cmp.Diff(reports[0].Results[k], reports[i+1].Results[k], ignore); diff != "" {
						t.Errorf("%s: %s mode differs from processed mode (-processed +%s):\n%s", reports[0].Results[k].File, mode, mode, diff)
					}
				}
			}
			tot := reports[0].Total
			t.Logf("%d transcripts, %d requests, %d summarizer calls, input %.3f × the transcripts in every mode; processor CPU µs a request: processed %.1f, full %.1f, fresh %.1f (decoding %.1f)",
				len(files), tot.Requests, tot.SummarizerCalls, tot.SummarizerRatio(),
				micros(tot.PerRequestCPU), micros(reports[1].Total.PerRequestCPU), micros(reports[2].Total.PerRequestCPU), micros(reports[2].Total.PerRequestDecodeCPU))
			if reports[2].Total.DecodeTime <= 0 {
				t.Error("fresh mode timed no decoding")
			}
		})
	}
}
