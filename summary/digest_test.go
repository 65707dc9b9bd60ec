package summary

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

func call(id, tool, args string) processor.Message {
	return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: tool, Args: args})
}

func ret(id, tool, content string) processor.Message {
	return processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: content})
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		n    int
	}{
		{"short", "hello", 10},
		{"long ascii", strings.Repeat("abcdefghij", 100), 200},
		{"long unicode", strings.Repeat("héllo wörld ", 300), 500},
		{"tiny bound", strings.Repeat("é", 100), 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Clip(tc.in, tc.n)
			if len(got) > max(tc.n, len(tc.in)) || (len(tc.in) > tc.n && len(got) > tc.n) {
				t.Errorf("clip to %d gave %d bytes", tc.n, len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("clip split a rune: %q", got)
			}
			if len(tc.in) > tc.n && tc.n > 64 {
				if !strings.Contains(got, "characters cut") || !strings.HasPrefix(tc.in, got[:10]) || !strings.HasSuffix(tc.in, got[len(got)-10:]) {
					t.Errorf("clip should keep head and tail around a note: %q", got)
				}
			}
		})
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

func TestDigest(t *testing.T) {
	d := NewDigest(DigestOptions{})
	got, err := d.Summarize(context.Background(), processortest.CodingSession(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		DigestHeader,
		"Files written: /src/cmd/tool/main.go",
		"Add a --verbose flag to cmd/tool/main.go.",
		"3 calls: Read x1, Edit x1, bash x1",
		"bash: go test ./... 2>&1 | tail",
		"unknown flag",
		"The flag is added; TestFlags fails on an unknown flag.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("digest lacks %q:\n%s", want, got)
		}
	}
	again, _ := d.Summarize(context.Background(), processortest.CodingSession(), "")
	if again != got {
		t.Error("digest is not deterministic")
	}
}

func TestDigestBoundAndMerge(t *testing.T) {
	var h []processor.Message
	for i := range 300 {
		id := fmt.Sprint(i)
		h = append(h,
			processor.UserMessage(fmt.Sprintf("request %d: %s", i, strings.Repeat("w ", 200))),
			call(id, "Write", fmt.Sprintf(`{"file_path":"out/f%d.go","content":"x"}`, i%40)),
			ret(id, "Write", fmt.Sprintf("Error: disk %d full, see logs/l%d.txt", i, i)))
	}
	d := NewDigest(DigestOptions{MaxChars: 2000})
	first, _ := d.Summarize(context.Background(), h[:450], "")
	written, _ := Paths(h)
	writtenLine := len(writtenLabel) + len(strings.Join(written, ", ")) + 1
	if len(first) > 2000+writtenLine {
		t.Errorf("digest of %d chars, bound 2000 plus the written list %d", len(first), writtenLine)
	}
	// Rolling: the second digest keeps the first one's written files.
	second, _ := d.Summarize(context.Background(), h[450:453], first)
	for _, p := range written {
		if !strings.Contains(second, p) {
			t.Errorf("rolled digest lost written path %s", p)
		}
	}
	if !strings.Contains(second, "Earlier summary:") {
		t.Errorf("rolled digest does not keep the previous one:\n%s", second)
	}
	if len(second) > 2000+writtenLine {
		t.Errorf("rolled digest of %d chars", len(second))
	}
}

// TestDigestBoundAnyInput checks the digest's bound on inputs that stress
// it: everything but the header, the count of messages and the files
// written fits in MaxChars, also when those alone reach the bound and when
// the digest is rolled again and again; every file written, including
// those listed by each of several previous digests, is kept; and a
// previous digest's header is not repeated inside the new one.
func TestDigestBoundAnyInput(t *testing.T) {
	ctx := context.Background()
	writes := func(from, n int) []processor.Message {
		var h []processor.Message
		for i := from; i < from+n; i++ {
			id := fmt.Sprint(i)
			h = append(h,
				call(id, "Write", fmt.Sprintf(`{"file_path":"internal/some/long/directory/file_%03d.go","content":"x"}`, i)),
				ret(id, "Write", "ok"))
		}
		return h
	}
	digest := func(h []processor.Message, previous string) string {
		s, _ := NewDigest(DigestOptions{}).Summarize(ctx, h, previous)
		return s
	}
	longText := processor.TextMessage(strings.Repeat("the last answer ", 4000))
	many := append(writes(0, 300), longText)
	small := []processor.Message{processor.UserMessage("Carry on."), processor.TextMessage("Done.")}
	for _, tc := range []struct {
		name     string
		max      int
		messages []processor.Message
		previous string
		earlier  []processor.Message // the messages the previous digests cover
		rolls    int                 // times the digest is fed back as the previous one
	}{
		{"written files over the bound", 4000, many, "", nil, 0},
		{"written files over the bound, long previous", 4000, writes(0, 300), strings.Repeat("earlier ", 10_000), nil, 0},
		{"written files over the bound, rolled", 4000, many, "", nil, 4},
		{"previous digest over the bound", 4000, small, digest(many, ""), many, 0},
		{"two previous digests", 4000, small, digest(writes(0, 2), "") + "\n\n" + digest(writes(2, 2), ""), writes(0, 4), 0},
		{"previous digest without files written", 4000, small, digest([]processor.Message{processor.UserMessage("Hi.")}, ""), nil, 0},
		{"tiny bound", 100, many, strings.Repeat("earlier ", 100), nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDigest(DigestOptions{MaxChars: tc.max})
			want := map[string]bool{}
			written, _ := Paths(append(append([]processor.Message(nil), tc.earlier...), tc.messages...))
			for _, p := range written {
				want[p] = true
			}
			got, _ := d.Summarize(ctx, tc.messages, tc.previous)
			for range tc.rolls {
				got, _ = d.Summarize(ctx, tc.messages, got)
			}
			fixed := len(DigestHeader) + 1 + len(fmt.Sprintf("Messages covered: %d.\n", len(tc.messages)))
			if len(want) > 0 {
				fixed += len(writtenLabel) + 1 + 2*(len(want)-1)
				for p := range want {
					fixed += len(p)
				}
			}
			if len(got) > max(tc.max, fixed) {
				t.Errorf("digest of %d chars, want at most %d (bound %d, header, count and files written %d)", len(got), max(tc.max, fixed), tc.max, fixed)
			}
			var listed []string
			for _, line := range strings.Split(got, "\n") {
				if list, ok := strings.CutPrefix(line, writtenLabel); ok {
					listed = strings.Split(list, ", ")
					break
				}
			}
			if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(slices.Values(listed))); diff != "" {
				t.Errorf("files written (-want +got):\n%s", diff)
			}
			if n := strings.Count(got, DigestHeader); n != 1 {
				t.Errorf("digest header %d times, want once:\n%s", n, got)
			}
		})
	}
}

// errorLine finds a line when, and only when, a line of the output
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
		got := errorLine(s)
		if (got != "") != want || len(got) > 200 {
			t.Fatalf("errorLine(%q) = %q; a line reads like an error: %v", s, got, want)
		}
	})
}
