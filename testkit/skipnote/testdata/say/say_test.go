// Package say is a suite that skips, saying so with skipnote: the tests of
// skipnote run it under go test.
package say

import (
	"os"
	"testing"

	"github.com/abridge-go/abridge/testkit/skipnote"
)

func TestSkipped(t *testing.T) {
	line := os.Getenv("SKIPNOTE_LINE")
	if line == "" {
		t.Skip("run by the tests of testkit/skipnote, which set SKIPNOTE_LINE")
	}
	skipnote.Say(line)
	t.Skip(line)
}
