package summary

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pathTokensRE is the reference pathTokens is checked against: the same
// token rule written as a regular expression.
func pathTokensRE(text string) []string {
	var out []string
	for _, t := range regexp.MustCompile(`[A-Za-z0-9_~./@+-]+`).FindAllString(text, -1) {
		t = strings.TrimRight(t, ".-")
		if len(t) < 3 || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "@") || strings.HasSuffix(t, "/") {
			continue
		}
		if looksLikePath(t) {
			out = append(out, t)
		}
	}
	return out
}

func TestPathTokensScanner(t *testing.T) {
	for _, text := range []string{
		"",
		"edit pkg/x/fix.go and ./run.sh, then ~/notes.md.",
		"Traceback: File \"/usr/lib/python3/site.py\", line 3\n  at src/main.rs:12:4",
		"naïve/ünïcode/päth.go x/é.py «a/b.txt» --flag=/etc/hosts",
		"//comment.go @scope/pkg.json a.b. ../.. .- ---x.go-- /a/b/ ab",
		strings.Repeat("word ", 50) + "internal/testkit/transcripts/load.go",
	} {
		if diff := cmp.Diff(pathTokensRE(text), pathTokens(text)); diff != "" {
			t.Errorf("pathTokens(%q) (-want +got):\n%s", text, diff)
		}
	}
}

func FuzzPathTokens(f *testing.F) {
	f.Add("see pkg/x/fix.go and /etc/hosts")
	f.Fuzz(func(t *testing.T, text string) {
		if diff := cmp.Diff(pathTokensRE(text), pathTokens(text)); diff != "" {
			t.Errorf("pathTokens(%q) (-want +got):\n%s", text, diff)
		}
	})
}

// TestCleanPath trims what surrounds a path, quotes and white space in any
// order, and rejects what is no path worth keeping.
func TestCleanPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.go", "a.go"},
		{` "pkg/x.go", `, "pkg/x.go"},
		// A fuzz input: the quote was trimmed, the space after it kept,
		// and the facts read back did not write the same section.
		{`" 0`, "0"},
		{"(\t'b.txt' )", "b.txt"},
		{"my file.txt", "my file.txt"},
		{"/dev/null", ""},
		{"$OUT", ""},
		{"*.go", ""},
		{"https://x.io/a", ""},
		{"a, b.go", ""},
		{` " `, ""},
	} {
		if got := cleanPath(tc.in); got != tc.want {
			t.Errorf("cleanPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
