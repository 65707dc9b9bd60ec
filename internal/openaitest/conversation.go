package openaitest

import (
	"encoding/json"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
)

// SharedConversation returns the first n messages of the first shared
// transcript (in name order) that has at least n messages, a quarter of
// them tool results: a long tool-using agent conversation. It skips the
// test, saying where it looked, when the shared transcripts are absent or
// none is long enough.
func SharedConversation(tb testing.TB, n int) (path string, msgs []json.RawMessage) {
	tb.Helper()
	for _, p := range transcripts.Shared(tb) {
		all, err := LoadConversation(p, 1<<30)
		if err != nil {
			tb.Fatal(err)
		}
		if len(all) < n {
			continue
		}
		tools := 0
		for _, m := range all[:n] {
			var r struct {
				Role string `json:"role"`
			}
			_ = json.Unmarshal(m, &r)
			if r.Role == "tool" {
				tools++
			}
		}
		if tools >= n/4 {
			return p, all[:n]
		}
	}
	dir, _ := transcripts.SharedDir()
	tb.Skipf("no shared transcript in %s has %d messages with tool results: skipping", dir, n)
	return "", nil
}
