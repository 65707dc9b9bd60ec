package summary

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

func TestFactsSection(t *testing.T) {
	f := NewFacts(FactsOptions{})
	got := f.Section(processortest.CodingSession(), "", 0)
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
			var got factSet
			got.add(extractFacts(tc.msgs, nil))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(factSet{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
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
	parsed := parseFacts(strings.TrimPrefix(section, FactsHeader+"\n"))
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
	msgs := append(processortest.CodingSession(), processor.UserMessage(strings.Repeat("ünïcode ", 200)))
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
	section := NewFacts(FactsOptions{}).Section(processortest.CodingSession(), "", 0)
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

// tokens finds the path-like tokens pathTokens finds and code names: each
// a part of the text, a path token that is its own token, a name that is
// a code name and no path.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{
		"Look at os.path.join and FileSystemStorage in django/core/files/storage.py; README and Django are words.",
		"plain words only here and nothing else at all",
		"x_y", "a.b.c.go ~/x/y ./run.sh ../a /etc/hosts settings.DEBUG __init__.py",
		"caf\u00e9 na\u00efve \u00c9t\u00e9 read_config\xff\xfeFoo",
		"trailing dots... and-dashes-- v1.2.3 a/b/ //x @scope/pkg",
		"See Foo. and /tmp/x.log. Then FOO_BAR.md, a/B_c.txt.. x. Y/z ./Q_r",
		"This is I. Done. Word.. fooBar aB 1Foo 9fooBar -Foo foo-Bar e.g. x.Y A_b _ab end. go.mod. a. see main.go and os.path here",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		files, names := tokens(text)
		if diff := cmp.Diff(pathTokens(text), files, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("tokens(%q): files (-pathTokens +tokens):\n%s", text, diff)
		}
		for _, p := range files {
			if !strings.Contains(text, p) || pathToken(p) != p {
				t.Fatalf("tokens(%q): file %q", text, p)
			}
		}
		for _, n := range names {
			if _, ok := codeName(n); !ok || !strings.Contains(text, n) || strings.Contains(n, "/") {
				t.Fatalf("tokens(%q): name %q", text, n)
			}
		}
	})
}
