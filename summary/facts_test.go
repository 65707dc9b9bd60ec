package summary

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/processor"
)

func TestFactsSection(t *testing.T) {
	f := NewFacts(FactsOptions{})
	got := f.Section(sample(), "", 0)
	want := FactsHeader + `
User said:
- Add a --verbose flag to cmd/tool/main.go.
Files edited: /src/cmd/tool/main.go
Commands and tool calls:
- Read: /src/cmd/tool/main.go
- Edit: /src/cmd/tool/main.go; b; a
- bash: go test ./... 2>&1 | tail
Errors met:
- bash: --- FAIL: TestFlags
Names used: TestFlags`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Section (-want +got):\n%s", diff)
	}
}

func TestFactsKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []processor.Message
		want factSet
	}{
		{"names from text and arguments, not from paths or outputs",
			[]processor.Message{
				processor.TextMessage("Look at os.path.join and FileSystemStorage in django/core/files/storage.py; README and Django are words."),
				call("c1", "grep", `{"pattern":"FILE_UPLOAD_PERMISSIONS","path":"django/conf"}`),
				ret("c1", "grep", "django/conf/global_settings.py: FILE_UPLOAD_TEMP_DIR = None"),
			},
			factSet{
				edited:   nil,
				files:    []string{"django/core/files/storage.py"},
				commands: []string{"grep: django/conf; FILE_UPLOAD_PERMISSIONS"},
				names:    []string{"os.path.join", "FileSystemStorage", "FILE_UPLOAD_PERMISSIONS"},
			}},
		{"a long argument is shown by its size",
			[]processor.Message{call("c1", "Write", `{"file_path":"a.go","content":"`+strings.Repeat("x", 300)+`"}`), ret("c1", "Write", "ok")},
			factSet{edited: []string{"a.go"}, commands: []string{"Write: a.go; (300 characters)"}}},
		{"arguments that are not JSON",
			[]processor.Message{call("c1", "shell", `ls -la /tmp/work/dir`), ret("c1", "shell", "total 0")},
			factSet{files: []string{"/tmp/work/dir"}, commands: []string{"shell: ls -la /tmp/work/dir"}}},
		{"a fact seen twice is kept once, where it was last",
			[]processor.Message{
				call("c1", "bash", `{"command":"make"}`), ret("c1", "bash", "Error: no rule"),
				call("c2", "bash", `{"command":"make test"}`), ret("c2", "bash", "ok"),
				call("c3", "bash", `{"command":"make"}`), ret("c3", "bash", "Error: no rule"),
			},
			factSet{commands: []string{"bash: make test", "bash: make"}, errors: []string{"bash: Error: no rule"}}},
		{"retry prompts are errors",
			[]processor.Message{processor.NewRequest(processor.RetryPrompt{ToolName: "bash", Content: "invalid   arguments"})},
			factSet{errors: []string{"invalid arguments"}}},
		{"markers are not read",
			[]processor.Message{Marker("Earlier: FooBarBaz was renamed.")},
			factSet{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := getScratch()
			defer x.release()
			got := extractFacts(tc.msgs, factSet{}, DefaultFactsChars, x)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(factSet{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("extractFacts (-want +got):\n%s", diff)
			}
		})
	}
}

// The section rolls: the facts of a previous section come first, a fact
// seen again moves to the end, and the oldest go first when the bound is
// reached.
func TestFactsRolling(t *testing.T) {
	f := NewFacts(FactsOptions{MaxChars: 600})
	var section string
	for i := range 30 {
		id := "c" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		msgs := []processor.Message{
			call(id, "bash", `{"command":"run_step_`+id+`"}`),
			ret(id, "bash", "ok"),
		}
		_, prev := SplitFacts(section)
		section = f.Section(msgs, prev, 0)
		if len(section) > 600 {
			t.Fatalf("step %d: section of %d bytes, bound 600:\n%s", i, len(section), section)
		}
		if !strings.Contains(section, "run_step_"+id) {
			t.Fatalf("step %d: the newest command is missing:\n%s", i, section)
		}
	}
	if strings.Contains(section, "run_step_caa") {
		t.Errorf("the oldest command outlived 30 newer ones in 600 bytes:\n%s", section)
	}
	x := getScratch()
	defer x.release()
	parsed := parseFacts(strings.TrimPrefix(section, FactsHeader+"\n"), x)
	if n := len(parsed.commands); n < 5 {
		t.Errorf("only %d commands kept in 600 bytes", n)
	}
}

// Each kind keeps its share: a flood of one kind does not push the others
// out.
func TestFactsShares(t *testing.T) {
	var msgs []processor.Message
	msgs = append(msgs, call("e", "Edit", `{"file_path":"pkg/keep/me.go","old_string":"a","new_string":"b"}`), ret("e", "Edit", "ok"))
	for i := range 200 {
		id := "c" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		msgs = append(msgs, call(id, "bash", `{"command":"echo LongIdentifierName`+strings.Repeat("_x", i%13)+`"}`), ret(id, "bash", "ok"))
	}
	s := NewFacts(FactsOptions{MaxChars: 1000}).Section(msgs, "", 0)
	if !strings.Contains(s, "Files edited: pkg/keep/me.go") {
		t.Errorf("the file edited was pushed out:\n%s", s)
	}
	if len(s) > 1000 {
		t.Errorf("section of %d bytes, bound 1000", len(s))
	}
}

func TestFactsBounds(t *testing.T) {
	f := NewFacts(FactsOptions{MaxChars: 5000})
	msgs := append(sample(), processor.UserMessage(strings.Repeat("ünïcode ", 200)))
	for _, n := range []int{0, 1, 40, 100, 300, 1000, 5000, 9000} {
		s := f.Section(msgs, "", n)
		limit := n
		if n <= 0 || n > 5000 {
			limit = 5000
		}
		if len(s) > limit {
			t.Errorf("Section(max %d) gave %d bytes", n, len(s))
		}
		if !utf8.ValidString(s) {
			t.Errorf("Section(max %d) split a rune", n)
		}
		if s != "" && !strings.HasPrefix(s, FactsHeader+"\n") {
			t.Errorf("Section(max %d) = %q: no header", n, s)
		}
	}
	if got := f.Section([]processor.Message{processor.TextMessage("ok")}, "", 0); got != "" {
		t.Errorf("no facts, section %q", got)
	}
}

func TestSplitFacts(t *testing.T) {
	section := NewFacts(FactsOptions{}).Section(sample(), "", 0)
	for _, tc := range []struct {
		name             string
		summary          string
		prose, wantFacts string
	}{
		{"none", "Just prose.", "Just prose.", ""},
		{"one", WithFacts("The prose.", section), "The prose.", strings.TrimPrefix(section, FactsHeader+"\n")},
		{"facts only", section, "", strings.TrimPrefix(section, FactsHeader+"\n")},
		{"two merged summaries", WithFacts("First.", section) + "\n\n" + WithFacts("Second.", section),
			"First.\n\nSecond.", strings.TrimPrefix(section, FactsHeader+"\n") + "\n" + strings.TrimPrefix(section, FactsHeader+"\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prose, facts := SplitFacts(tc.summary)
			if diff := cmp.Diff([]string{tc.prose, tc.wantFacts}, []string{prose, facts}); diff != "" {
				t.Errorf("SplitFacts (-want +got):\n%s", diff)
			}
		})
	}
	// A section read back and written again is the same section.
	_, facts := SplitFacts(section)
	if again := NewFacts(FactsOptions{}).Section(nil, facts, 0); again != section {
		t.Errorf("section written again:\n%s\nwant:\n%s", again, section)
	}
}

func TestCodeName(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		want bool
	}{
		{"read_config", true}, {"FileStorage", true}, {"os.path.join", true}, {"settings.DEBUG", true},
		{"_private_name", true}, {"getURL", true},
		{"README", false}, {"Django", false}, {"main.go", false}, {"abc", false}, {"x_y", false},
		{"1.2.3", false}, {"a..b", false}, {"v1.0", false}, {strings.Repeat("a_", 50), false},
	} {
		if _, got := codeName(tc.tok); got != tc.want {
			t.Errorf("codeName(%q) = %v, want %v", tc.tok, got, tc.want)
		}
	}
}

func TestClipTexts(t *testing.T) {
	long := strings.Repeat("word ", 100)
	m := processor.NewRequest(
		processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long},
		processor.UserPrompt{Content: long},
		processor.RetryPrompt{ToolCallID: "c2", Content: long},
	)
	before := processor.Clone([]processor.Message{m})[0]
	got, changed := ClipTexts(m, 100)
	if !changed {
		t.Fatal("nothing clipped")
	}
	if !processor.Equal(m, before) {
		t.Error("ClipTexts changed its input")
	}
	for _, p := range got.Parts {
		var text string
		switch p := p.(type) {
		case processor.ToolReturn:
			text = p.Content
			if p.ToolCallID != "c1" {
				t.Errorf("tool return lost its call ID: %+v", p)
			}
		case processor.UserPrompt:
			text = p.Content
		case processor.RetryPrompt:
			text = p.Content
		}
		if len(text) > 100 || !strings.Contains(text, "characters cut") {
			t.Errorf("%s not clipped to 100: %d bytes", p.PartKind(), len(text))
		}
	}
	call := processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"` + long + `"}`})
	if _, changed := ClipTexts(call, 100); changed {
		t.Error("tool-call arguments were clipped")
	}
	if _, changed := ClipTexts(m, 0); changed {
		t.Error("n = 0 clipped")
	}
}

// TestAppendNewest checks appendNewest against the reference's merge on
// lists below and above the sizes where it changes method, with empty
// entries, entries seen again in either list, and entries alike in length
// and in the bytes their fingerprint reads.
func TestAppendNewest(t *testing.T) {
	gen := func(n, distinct int, shift int) []string {
		var out []string
		for i := range n {
			k := (i*7 + shift) % distinct
			switch {
			case k%11 == 0:
				out = append(out, "")
			case k%2 == 0:
				// Same length, first, middle and last bytes: one fingerprint.
				out = append(out, fmt.Sprintf("a%03db", k))
			default:
				out = append(out, fmt.Sprintf("name_%d", k))
			}
		}
		return out
	}
	tests := []struct {
		name     string
		old, new []string
	}{
		{"empty", nil, nil},
		{"few", gen(5, 4, 0), gen(6, 9, 3)},
		{"under 32", gen(16, 12, 0), gen(15, 20, 1)},
		{"over 32", gen(30, 25, 0), gen(30, 40, 2)},
		{"under 256", gen(120, 100, 0), gen(130, 150, 5)},
		{"over 256", gen(200, 180, 0), gen(200, 300, 7)},
		{"all alike", gen(40, 1, 2), gen(40, 1, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := getScratch()
			defer x.release()
			got := slices.Clone(x.appendNewest(tt.old, tt.new))
			want := refAppendNewest(slices.Clone(tt.old), slices.Clone(tt.new))
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("appendNewest (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewestFirstSeen checks that newestFirst keeps each entry once, as
// the reference's collector does, below and above the number of entries
// it finds by their fingerprint, with entries alike in their fingerprint,
// empty ones and ones a keep function changes; and that its scratch,
// reused, starts empty.
func TestNewestFirstSeen(t *testing.T) {
	gen := func(n, distinct int) []string {
		var out []string
		for i := range n {
			k := (i * 7) % distinct
			switch {
			case k%13 == 0:
				out = append(out, "")
			case k%2 == 0:
				out = append(out, fmt.Sprintf("a%03db", k)) // many share a fingerprint
			default:
				out = append(out, fmt.Sprintf("name_%d", k))
			}
		}
		return out
	}
	trim := func(e string) (string, bool) { return strings.TrimSuffix(e, "b"), true }
	tests := []struct {
		name string
		in   []string
		keep func(string) (string, bool)
	}{
		{"few", gen(20, 9), nil},
		{"some", gen(400, 200), nil},
		{"many", gen(3000, 900), nil},
		{"some kept", gen(400, 200), trim},
		{"many kept", gen(3000, 900), trim},
		{"few again", gen(20, 9), nil},
	}
	x := getScratch()
	defer x.release()
	for _, tt := range tests {
		for round := range 2 {
			t.Run(fmt.Sprint(tt.name, round), func(t *testing.T) {
				c := newestFirst{limit: 1 << 30, sep: 3, keep: tt.keep, seen: &x.seen[0], items: x.items[0][:0]}
				ref := refNewestFirst{limit: 1 << 30, keep: tt.keep}
				c.addAll(tt.in)
				ref.addAll(tt.in)
				if diff := cmp.Diff(ref.items, c.items); diff != "" {
					t.Errorf("entries (-want +got):\n%s", diff)
				}
				x.items[0] = c.items
				x.seen[0].reset()
			})
		}
	}
}

// TestDropAll checks dropAll against filtering by a set, with lists to
// drop below and above the size where it changes method, and entries
// alike in their fingerprint.
func TestDropAll(t *testing.T) {
	gen := func(n, from int) []string {
		var out []string
		for i := range n {
			k := from + i*3
			if k%2 == 0 {
				out = append(out, fmt.Sprintf("a%03db", k%1000)) // many share a fingerprint
			} else {
				out = append(out, fmt.Sprintf("name_%d", k))
			}
		}
		return out
	}
	for _, n := range []int{0, 3, 16, 17, 100, 256, 257, 600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			list, drop := gen(400, 0), gen(n, 5)
			set := map[string]bool{}
			for _, e := range drop {
				set[e] = true
			}
			var want []string
			for _, e := range list {
				if !set[e] {
					want = append(want, e)
				}
			}
			x := getScratch()
			defer x.release()
			if diff := cmp.Diff(want, x.dropAll(list, drop), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("dropAll (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNumberText checks numberText against encoding/json writing the
// float64 a number reads as.
func TestNumberText(t *testing.T) {
	for _, lit := range []string{
		"0", "-0", "7", "-7", "10000", "120000", "999999999999999", "-999999999999999",
		"9999999999999999", "12345678901234567890", "100000000000000000000", "1000000000000000000000",
		"00", "007", "1.0", "1.50", "-2.5e3", "1e-7", "1E+2", "0.000001", "123456789012345678901234",
	} {
		f, _ := strconv.ParseFloat(lit, 64)
		j, _ := json.Marshal(f)
		if got, want := numberText(lit), string(j); got != want {
			t.Errorf("numberText(%q) = %q, want %q", lit, got, want)
		}
	}
}
