package summary

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

func factsHistory(r *rand.Rand, n int) []processor.Message {
	word := func() string {
		pool := []string{"read_config", "FileStorage", "os.path.join", "settings.DEBUG", "parse_args", "HttpClient",
			"pkg/core/store.go", "./run.sh", "src/app/main.py", "/etc/app/conf.d/x.yaml", "notes.md", "make_thing",
			"plain", "words", "here", "and", "x.y", "a_b", "Foo", "the", "value"}
		if r.IntN(3) == 0 {
			// A fresh fact, so that kinds overflow.
			switch r.IntN(4) {
			case 0:
				return fmt.Sprintf("handle_case_%d", r.IntN(500))
			case 1:
				return fmt.Sprintf("pkg/mod%d/file_%d.go", r.IntN(20), r.IntN(300))
			case 2:
				return fmt.Sprintf("module%d.Class%d.method", r.IntN(30), r.IntN(30))
			default:
				return fmt.Sprintf("CamelName%d", r.IntN(400))
			}
		}
		return pool[r.IntN(len(pool))]
	}
	sentence := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	var h []processor.Message
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		switch r.IntN(6) {
		case 0:
			h = append(h, processor.UserMessage(sentence(3+r.IntN(30))))
		case 1:
			h = append(h, processor.TextMessage(sentence(3+r.IntN(60))))
		}
		var tool, args string
		switch r.IntN(6) {
		case 0:
			tool, args = "Edit", fmt.Sprintf(`{"file_path":%q,"old_string":%q,"new_string":%q}`, word(), sentence(2), sentence(3))
		case 1:
			tool, args = "bash", fmt.Sprintf(`{"command":"cat > %s <<'EOF'\n%s\nEOF\necho %s"}`, word(), sentence(4), word())
		case 2:
			tool, args = "bash", fmt.Sprintf(`{"command":"sed -i 's/a/b/' %s && grep -rn %s %s 2>&1 | head"}`, word(), word(), word())
		case 3:
			tool, args = "search", fmt.Sprintf(`{"query":%q,"paths":[%q,%q],"limit":%d,"deep":{"k":%q}}`, sentence(3), word(), word(), r.IntN(9), word())
		case 4:
			// Words in quotes that start a command, after other commands
			// (a reused reader must not take them for words before).
			tool, args = "bash", fmt.Sprintf(`{"command":"'%s' > %s && \"%s\" 2>&1 | tee %s"}`, word(), word(), word(), word())
		default:
			tool, args = "shell", "ls -la "+word()
		}
		h = append(h, processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: tool, Args: args}))
		out := sentence(5)
		switch r.IntN(3) {
		case 0:
			out = fmt.Sprintf("Traceback (most recent call last):\n  File %q\nError: %s failed at %s", word(), word(), word())
		case 1:
			out = fmt.Sprintf("ok\nexit status %d\n%s", 1+r.IntN(3), sentence(3))
		}
		h = append(h, processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: tool, Content: out}))
		if r.IntN(20) == 0 {
			h = append(h, processor.NewRequest(processor.RetryPrompt{ToolName: tool, ToolCallID: id, Content: "invalid: " + sentence(4)}))
		}
	}
	return h
}

// checkFacts checks the properties of the section of msgs (after
// previous) within max characters, for a Facts of bound characters:
//   - it is within its bound, its header first; it is valid UTF-8 when
//     the messages and previous are;
//   - read back, it is written again the same (the rolling merge keeps
//     what it reads);
//   - made from no previous section, and merged again with the same
//     messages, it does not change (after a previous section it may: a
//     name is left out while it is a file of the previous section, even
//     one the section has no room to show);
//   - each file and name it lists is a part of one of the messages'
//     texts, and each file edited keeps the order of its bytes in one
//     (quotes and escapes only removed).
func checkFacts(t *testing.T, bound int, msgs []processor.Message, previous string, max int) string {
	t.Helper()
	f := NewFacts(FactsOptions{MaxChars: bound})
	s := f.Section(msgs, previous, max)
	limit := max
	if max <= 0 || max > bound {
		limit = bound
	}
	valid := utf8.ValidString(previous)
	var texts []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			var ts []string
			switch p := p.(type) {
			case processor.UserPrompt:
				ts = []string{UserText(p)}
			case processor.Text:
				ts = []string{p.Content}
			case processor.ToolCall:
				ts = append(stringValues(decodeArgs(p.Args), nil), p.Args, p.ToolName)
			case processor.ToolReturn:
				ts = []string{p.ToolReturnContent(), p.ToolName}
			case processor.RetryPrompt:
				ts = []string{p.Content, p.ToolName}
			}
			for _, x := range ts {
				valid = valid && utf8.ValidString(x)
			}
			texts = append(texts, ts...)
		}
	}
	switch {
	case len(s) > limit:
		t.Fatalf("a section of %d bytes, bound %d:\n%s", len(s), limit, s)
	case s != "" && !strings.HasPrefix(s, FactsHeader+"\n"):
		t.Fatalf("no header:\n%s", s)
	case valid && !utf8.ValidString(s):
		t.Fatalf("invalid UTF-8 from valid messages:\n%q", s)
	}
	_, facts := SplitFacts(s)
	if again := f.Section(nil, facts, max); again != s {
		t.Fatalf("the section read back and written again (-first +again):\n%s", cmp.Diff(s, again))
	}
	if merged := f.Section(msgs, facts, max); previous == "" && merged != s {
		t.Fatalf("the section merged again with the same messages (-first +merged):\n%s", cmp.Diff(s, merged))
	}
	got := parseFacts(facts)
	prev := parseFacts(previous)
	for _, e := range append(got.files, got.names...) {
		if !containsFunc(texts, func(x string) bool { return strings.Contains(x, e) }) && !containsFunc(append(prev.files, prev.names...), func(x string) bool { return x == e }) {
			t.Fatalf("%q is in no message:\n%s", e, s)
		}
	}
	for _, e := range got.edited {
		if !containsFunc(texts, func(x string) bool { return isSubsequence(e, x) }) && !containsFunc(prev.edited, func(x string) bool { return x == e }) {
			t.Fatalf("edited %q is in no message:\n%s", e, s)
		}
	}
	return s
}

func containsFunc(ss []string, f func(string) bool) bool {
	for _, s := range ss {
		if f(s) {
			return true
		}
	}
	return false
}

// FuzzFactsSection checks checkFacts' properties on a conversation made
// of the fuzzer's texts: a user message, an assistant text, a call with
// the raw arguments, a shell call and an edit with them as values, and
// outputs; then on the next section, merged with the first.
func FuzzFactsSection(f *testing.F) {
	f.Add("Fix the parser in pkg/parse/lex.go", "Looking at read_config and os.path.join.", `{"command":"sed -i 's/a/b/' x.go > out.log"}`, "Traceback (most recent call last):\nValueError: bad", 600)
	f.Add("", "", "not json at all > f.txt", "exit status 2\nlast line", 0)
	f.Add(strings.Repeat("long user text ", 40), "a, b.go and c.go", `{"path":"a, b.go"}`, strings.Repeat("Error: x", 40), 300)
	f.Add("x", "y", `{"cmd":"echo \"unclosed"}`, "", 90)
	f.Add("notes, draft.md", "", `{"command":"tee 'a, b.txt'"}`, "", 0) // the list separator in a file edited
	f.Fuzz(func(t *testing.T, user, text, args, output string, max int) {
		max %= 5000
		shell, _ := json.Marshal(map[string]string{"command": args, "description": text})
		edit, _ := json.Marshal(map[string]any{"file_path": user, "new_string": output, "n": len(text)})
		msgs := []processor.Message{
			processor.UserMessage(user),
			processor.TextMessage(text),
			call("c1", "tool", args), ret("c1", "tool", output),
			call("c2", "bash", string(shell)), ret("c2", "bash", output),
			call("c3", "Edit", string(edit)), ret("c3", "Edit", "ok"),
			processor.NewRequest(processor.RetryPrompt{ToolName: "bash", ToolCallID: "c2", Content: output}),
		}
		first := checkFacts(t, 3000, msgs, "", max)
		_, previous := SplitFacts(first)
		checkFacts(t, 3000, msgs[1:5], previous, max)
	})
}

// The properties hold on synthetic histories cut in spans, each section
// merged into the next, with bounds from small to large.
func TestFactsProperties(t *testing.T) {
	for seed := range uint64(8) {
		h := factsHistory(rand.New(rand.NewPCG(seed, 7)), 200)
		for _, bound := range []int{300, DefaultFactsChars, 6000} {
			for _, span := range []int{7, 40} {
				t.Run(fmt.Sprintf("seed %d/bound %d/span %d", seed, bound, span), func(t *testing.T) {
					previous := ""
					for from := 0; from < len(h); from += span {
						s := checkFacts(t, bound, h[from:min(len(h), from+span)], previous, 0)
						_, previous = SplitFacts(s)
					}
				})
			}
		}
	}
}

// One Facts used by several goroutines at once (as the windows of a
// proxy share one) gives each the sections it gives one at a time (run
// with -race).
func TestFactsConcurrent(t *testing.T) {
	f := NewFacts(FactsOptions{})
	sections := func(g int) []string {
		h := factsHistory(rand.New(rand.NewPCG(uint64(g), 11)), 150)
		var out []string
		prev := ""
		for from := 0; from < len(h); from += 13 {
			s := f.Section(h[from:min(len(h), from+13)], prev, 0)
			out = append(out, s)
			_, prev = SplitFacts(s)
		}
		return out
	}
	want := make([][]string, 4)
	for g := range want {
		want[g] = sections(g)
	}
	var wg sync.WaitGroup
	for g := range want {
		wg.Go(func() {
			if diff := cmp.Diff(want[g], sections(g)); diff != "" {
				t.Errorf("goroutine %d (-alone +concurrent):\n%s", g, diff)
			}
		})
	}
	wg.Wait()
}
