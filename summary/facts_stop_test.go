package summary_test

import (
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/summary"
)

// The section read from the newest message back, stopping once each kind
// is full, is the section a whole reading makes, on every shipped
// transcript cut in middles as a window cuts them, each section merged into
// the next.
func TestFactsEarlyStop(t *testing.T) {
	for _, file := range transcripts.Shipped(t) {
		h, err := model.LoadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, max := range []int{300, 800, summary.DefaultFactsChars, 6000} {
			f := summary.NewFacts(summary.FactsOptions{MaxChars: max})
			var prevFast, prevWhole string
			for from := 0; from < len(h); from += 17 {
				msgs := h[from:min(len(h), from+17)]
				fast, whole := f.Section(msgs, prevFast, 0), f.SectionWhole(msgs, prevWhole, 0)
				if fast != whole {
					t.Fatalf("%s, max %d, messages from %d:\nearly stop:\n%s\nwhole:\n%s", filepath.Base(file), max, from, fast, whole)
				}
				_, prevFast = summary.SplitFacts(fast)
				_, prevWhole = summary.SplitFacts(whole)
			}
		}
	}
}
