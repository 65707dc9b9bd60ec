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
		strings.Repeat("word ", 50) + "internal/transcripts/load.go",
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

// isKnownExt answers as looking up the lower case of its argument in
// knownExt, for every known extension in several cases, for longer and
// shorter texts, and for texts whose lower case differs in length (the
// Kelvin sign lowers to an ASCII 'k'); maxExtLen is the longest known.
func TestIsKnownExt(t *testing.T) {
	longest := 0
	exts := []string{"", "x", "properties1", "dockerfiles", "\u212Ats", "\u212At", "T\u212AS", "İni", "go\u00e9", "PROPERTIES", "Dockerfile", "c\x00", "\x00c", "go\x00", "a\x00\u00e9", "markdown", "MARKDOWN", "markdowns"}
	for e := range knownExt {
		longest = max(longest, len(e))
		exts = append(exts, e, strings.ToUpper(e), strings.ToUpper(e[:1])+e[1:], e+"x", "x"+e)
	}
	if longest != maxExtLen {
		t.Errorf("maxExtLen = %d, the longest known extension has %d bytes", maxExtLen, longest)
	}
	for _, e := range exts {
		if got, want := isKnownExt(e), knownExt[strings.ToLower(e)]; got != want {
			t.Errorf("isKnownExt(%q) = %v, want %v", e, got, want)
		}
	}
}
