package summary

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
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

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		name          string
		calls         []processor.ToolCall
		text          string
		wantW, wantM  []string
		wantMContains []string
	}{
		{
			name: "editing tools",
			calls: []processor.ToolCall{
				{ToolName: "Write", Args: `{"file_path":"/a/new.go","content":"x"}`},
				{ToolName: "Edit", Args: `{"file_path":"/a/old.go","old_string":"a","new_string":"b"}`},
				{ToolName: "str_replace_based_edit_tool", Args: `{"command":"create","path":"/a/c.py","file_text":""}`},
				{ToolName: "str_replace_based_edit_tool", Args: `{"command":"view","path":"/a/viewed.py"}`},
				{ToolName: "Read", Args: `{"file_path":"/a/read.go"}`},
				{ToolName: "MultiEdit", Args: `{"file_path":"/a/multi.ts","edits":[]}`},
			},
			wantW: []string{"/a/new.go", "/a/old.go", "/a/c.py", "/a/multi.ts"},
			wantM: []string{"/a/viewed.py", "/a/read.go"},
		},
		{
			name: "shell",
			calls: []processor.ToolCall{
				{ToolName: "bash", Args: `{"command":"sed -i 's/a/b/' src/x.go src/y.go && go test ./..."}`},
				{ToolName: "bash", Args: `{"command":"cat > notes.md <<'EOF'\nline > not_a_file.txt\nEOF\necho done"}`},
				{ToolName: "bash", Args: `{"command":"echo hi >> log/out.txt 2>&1; ls > /dev/null"}`},
				{ToolName: "bash", Args: `{"command":"grep -n foo a.go | tee result.txt"}`},
				{ToolName: "bash", Args: `{"command":"cp tmpl.yaml config/app.yaml && mv a.tmp b.json && touch ready.flag"}`},
				{ToolName: "bash", Args: `{"command":"perl -pi -e 's/x/y/' lib/z.pl"}`},
				{ToolName: "bash", Args: `{"command":"echo \"a > b\" && sed 's/x/y/' read.go"}`},
			},
			wantW:         []string{"src/x.go", "src/y.go", "notes.md", "log/out.txt", "result.txt", "config/app.yaml", "b.json", "ready.flag", "lib/z.pl"},
			wantMContains: []string{"a.go", "tmpl.yaml", "read.go"},
		},
		{
			name: "patch",
			calls: []processor.ToolCall{
				{ToolName: "apply_patch", Args: `{"input":"*** Begin Patch\n*** Update File: pkg/a.go\n@@\n-x\n+y\n*** Add File: pkg/b.go\n+z\n*** End Patch"}`},
				{ToolName: "bash", Args: `{"command":"git diff"}`},
			},
			wantW: []string{"pkg/a.go", "pkg/b.go"},
		},
		{
			name:  "text mentions",
			text:  "See docs/guide.md, /etc/app/config and https://example.com/x/y.go; version 1.2.3 and e.g. foo.",
			wantM: []string{"docs/guide.md", "/etc/app/config"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []processor.Message
			if tc.text != "" {
				h = append(h, processor.UserMessage(tc.text))
			}
			for i, c := range tc.calls {
				c.ToolCallID = fmt.Sprint(i)
				h = append(h, processor.NewResponse(c))
			}
			w, m := Paths(h)
			if diff := cmp.Diff(tc.wantW, w); diff != "" {
				t.Errorf("written (-want +got):\n%s", diff)
			}
			if tc.wantM != nil {
				if diff := cmp.Diff(tc.wantM, m); diff != "" {
					t.Errorf("mentioned (-want +got):\n%s", diff)
				}
			}
			for _, p := range tc.wantMContains {
				if !contains(m, p) {
					t.Errorf("mentioned %v lacks %q", m, p)
				}
			}
			if contains(w, "not_a_file.txt") {
				t.Errorf("here-document body taken as a redirection")
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
