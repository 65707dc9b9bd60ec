package summary

import (
	"slices"
	"strings"
	"testing"
)

// ErrorLine finds a line when, and only when, a line of the output
// reports a non-zero exit status or holds an error marker, and the line
// it gives is within 200 bytes.
func FuzzErrorLine(f *testing.F) {
	for _, s := range []string{
		"ok\nexit status 2\ndone", "Traceback (most recent call last):\n  x\nValueError: bad",
		"<returncode>1</returncode>\n<output>\nfatal: no</output>", "all good", "Exit code 0\nError: x",
		"FAIL", "xFAIL", "ok\nFAIL\n", "xxERROR", "a\r\n Exit code 3 Error: x\r\nlast\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := false
		for line := range strings.Lines(s) {
			want = want || exitStatus(strings.TrimSpace(line)) || slices.ContainsFunc(errorMarkers, func(m string) bool { return strings.Contains(line, m) })
		}
		got := ErrorLine(s)
		if (got != "") != want || len(got) > 200 {
			t.Fatalf("ErrorLine(%q) = %q; a line reads like an error: %v", s, got, want)
		}
	})
}
