package replay

import (
	"testing"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// Targets over all shared transcripts.
const (
	// maxSummarizerRatio bounds the summarizer's input over the
	// transcripts' own size, in both modes.
	maxSummarizerRatio = 0.6
	// targetCacheReuseDefault is the prompt-cache reuse wanted with the
	// default settings. It is NOT met: with MaxMessages 40 the window
	// compacts every few tool rounds, and each compaction re-sends the
	// whole tail after a new marker (measured 0.856 on the shared set; see
	// docs/known-gaps.md). The test reports the shortfall and guards the
	// measured level with floorCacheReuseDefault instead.
	targetCacheReuseDefault = 0.90
	// floorCacheReuseDefault is the measured level a change must not
	// regress below with the default settings.
	floorCacheReuseDefault = 0.85
	// minCacheReuseTokens is the prompt-cache reuse wanted with a token
	// trigger at 70% of a 128k-token window.
	minCacheReuseTokens = 0.97
)

// reuseLoss splits what prompt-cache reuse misses over rep, as shares of
// all request bytes: what the requests that send a new summary do not
// reuse, and what the other requests do not.
func reuseLoss(rep *Report) (compacting, rest float64) {
	var lostCompacting, lostRest, total int64
	for _, res := range rep.Results {
		for _, p := range res.Series {
			lost := int64(p.JSONChars - p.ReusedChars)
			total += int64(p.JSONChars)
			if p.Compaction {
				lostCompacting += lost
			} else {
				lostRest += lost
			}
		}
	}
	if total == 0 {
		return 0, 0
	}
	return float64(lostCompacting) / float64(total), float64(lostRest) / float64(total)
}

// tokenTrigger is the window configuration of the token-trigger target:
// compaction at 70% of a 128k-token window, the message count trigger off.
var tokenTrigger = window.Options{MaxMessages: -1, ContextWindow: 128_000, TriggerPercent: 70}

func TestSharedTargets(t *testing.T) {
	files := transcripts.Shared(t)
	type config struct {
		name     string
		opts     Options
		minReuse float64
		target   float64 // the wanted reuse, when above minReuse
		short    bool    // run in -short mode too
	}
	var configs []config
	for _, mode := range []Mode{ModeProcessed, ModeFull} {
		configs = append(configs,
			config{name: mode.String() + "/digest/default", opts: Options{Mode: mode}, minReuse: floorCacheReuseDefault, target: targetCacheReuseDefault, short: mode == ModeProcessed},
			config{name: mode.String() + "/recorder/default", opts: Options{Mode: mode, Summarizer: SummarizerRecorder}, minReuse: floorCacheReuseDefault, target: targetCacheReuseDefault},
			config{name: mode.String() + "/digest/tokens", opts: Options{Mode: mode, Window: tokenTrigger}, minReuse: minCacheReuseTokens},
		)
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && !c.short {
				t.Skip("skipped in -short mode")
			}
			t.Parallel()
			rep, err := Run(t.Context(), files, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range rep.Results {
				checkInvariants(t, res)
				if c.opts.Window.MaxMessages == 0 && res.Messages >= 2*window.DefaultMaxMessages && res.Compactions == 0 {
					t.Errorf("%s: %d messages and no compaction", res.File, res.Messages)
				}
			}
			checkTotal(t, rep)
			tot := rep.Total
			t.Logf("%d transcripts, %d requests (%d assistant messages skipped), %d compactions, %d summarizer calls (%d fallback); summarizer input %.3f × transcripts (naive %.1f ×); "+
				"cache reuse %.4f (ceiling %.4f); fidelity %.3f (written %.3f); needed kept %.3f (far %.3f); max tokens %d -> %d, mean %.0f -> %.0f; %.1f µs/request (CPU %.1f)",
				len(rep.Results), tot.Requests, tot.Skipped, tot.Compactions, tot.SummarizerCalls, tot.FallbackCalls, tot.SummarizerRatio(), tot.NaiveRatio(),
				tot.CacheReuse, tot.CacheReuseCeiling, tot.Fidelity, tot.WrittenFidelity, tot.NeededKept, tot.NeededKeptFar, tot.MaxTokensBefore, tot.MaxTokensAfter, tot.MeanTokensBefore, tot.MeanTokensAfter, micros(tot.PerRequest), micros(tot.PerRequestCPU))
			if tot.InvalidRequests != 0 {
				t.Errorf("%d invalid requests, first: %s", tot.InvalidRequests, tot.FirstError)
			}
			if tot.Unsummarized != 0 {
				t.Errorf("%d of %d compacted messages never reached a summarizer", tot.Unsummarized, tot.CompactedMessages)
			}
			if c.opts.Window.ContextWindow == 0 {
				if r := tot.SummarizerRatio(); r > maxSummarizerRatio {
					t.Errorf("summarizer input %d chars = %.3f × the transcripts' %d, want at most %.2f ×",
						tot.SummarizerInputChars, r, tot.TranscriptChars, maxSummarizerRatio)
				}
				if tot.NaiveSummarizerChars <= tot.SummarizerInputChars {
					t.Errorf("naive baseline %d chars not above the summarizer's input %d", tot.NaiveSummarizerChars, tot.SummarizerInputChars)
				}
			}
			if tot.CacheReuse < c.minReuse {
				t.Errorf("prompt-cache reuse %.4f, want at least %.2f", tot.CacheReuse, c.minReuse)
			}
			if c.target > 0 && tot.CacheReuse < c.target {
				compacting, rest := reuseLoss(rep)
				t.Logf("TARGET NOT MET: prompt-cache reuse %.4f with the default settings, target %.2f (known gap, see docs/known-gaps.md): "+
					"the requests that send a new summary lose %.4f of all request bytes (they share only the head with the request before), the others %.4f (their new messages); "+
					"the ceiling these compaction points allow, whatever the trimmer and the summaries do, is %.4f",
					tot.CacheReuse, c.target, compacting, rest, tot.CacheReuseCeiling)
			}
		})
	}
}
