package replay

import (
	"testing"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// TestNeededKeptUnprocessed replays the shipped transcripts with no
// processing at all (no trimming, no compaction trigger): every request
// sends the transcript's messages as recorded, so it keeps every needed
// token, near and far, in every host mode.
func TestNeededKeptUnprocessed(t *testing.T) {
	files := transcripts.Shipped(t)
	for _, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			rep, err := Run(t.Context(), files, Options{Mode: mode, Window: window.Options{MaxMessages: -1}, Trim: trimOff})
			if err != nil {
				t.Fatal(err)
			}
			for _, res := range append(rep.Results, rep.Total) {
				for _, p := range res.Series {
					if p.CharsAfter != p.CharsBefore {
						t.Fatalf("%s: request %d sent %d characters of %d: something was processed", res.File, p.Request, p.CharsAfter, p.CharsBefore)
					}
				}
				if res.NeededKept != 1 || res.NeededKeptFar != 1 || res.NeededKeptTokens != res.NeededTokens || res.NeededFarKeptTokens != res.NeededFarTokens {
					t.Errorf("%s: kept %d of %d needed tokens (%v), %d of %d far (%v); want all", res.File,
						res.NeededKeptTokens, res.NeededTokens, res.NeededKept, res.NeededFarKeptTokens, res.NeededFarTokens, res.NeededKeptFar)
				}
			}
			for _, res := range rep.Results {
				checkInvariants(t, res)
			}
			if rep.Total.NeededTokens == 0 || rep.Total.NeededFarTokens == 0 {
				t.Errorf("%d needed tokens, %d far: the shipped transcripts should need both", rep.Total.NeededTokens, rep.Total.NeededFarTokens)
			}
		})
	}
}

// TestNeededKeptCompacted checks that compaction shows in the figures: with
// the default settings, each summary written when its compaction is due,
// the shipped transcripts lose needed tokens, far ones more than the
// rest, and every host mode counts the same.
func TestNeededKeptCompacted(t *testing.T) {
	files := transcripts.Shipped(t)
	var first Result
	for _, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
		rep, err := Run(t.Context(), files, Options{Mode: mode, Window: window.Options{Ahead: -1}})
		if err != nil {
			t.Fatal(err)
		}
		tot := rep.Total
		if !(tot.NeededKeptFar < tot.NeededKept && tot.NeededKept < 1) {
			t.Errorf("%v: needed kept %.3f, far %.3f; want far < all < 1", mode, tot.NeededKept, tot.NeededKeptFar)
		}
		if mode == ModeProcessed {
			first = tot
			continue
		}
		if tot.NeededTokens != first.NeededTokens || tot.NeededKeptTokens != first.NeededKeptTokens ||
			tot.NeededFarTokens != first.NeededFarTokens || tot.NeededFarKeptTokens != first.NeededFarKeptTokens {
			t.Errorf("%v: needed %d kept %d far %d far kept %d; processed: %d %d %d %d", mode,
				tot.NeededTokens, tot.NeededKeptTokens, tot.NeededFarTokens, tot.NeededFarKeptTokens,
				first.NeededTokens, first.NeededKeptTokens, first.NeededFarTokens, first.NeededFarKeptTokens)
		}
	}
}
