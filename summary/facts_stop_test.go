package summary_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/summary"
)

// factsFiles returns the shipped transcripts and, when present, the shared
// ones.
func factsFiles(t *testing.T) []string { return factsFilesB(t) }

// The fast section (read from the newest message back, stopping once each
// kind is full) is byte for byte the section of the reference extraction
// (the old code, reading every message whole), on every shipped and shared
// transcript, raw and with old outputs trimmed as the window gets them, cut
// in spans of several lengths, with several bounds and rooms, each section
// merged into the next and two previous sections joined as merged markers
// join them.
func TestFactsEarlyStop(t *testing.T) {
	spans := []int{5, 17, 40}
	bounds := []int{300, 800, summary.DefaultFactsChars, 6000}
	if testing.Short() {
		spans, bounds = []int{17}, []int{summary.DefaultFactsChars}
	}
	for _, file := range factsFiles(t) {
		raw, err := model.LoadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		trimmed, err := trimtools.New(trimtools.Options{}).Process(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []struct {
			name string
			msgs []processor.Message
		}{{"raw", raw}, {"trimmed", trimmed}} {
			for _, span := range spans {
				for _, bound := range bounds {
					name := fmt.Sprintf("%s/%s/span %d/bound %d", filepath.Base(file), h.name, span, bound)
					checkSpans(t, name, h.msgs, span, bound)
				}
			}
		}
	}
}

// checkSpans compares the fast and the reference sections of h cut in
// spans of span messages, for a Facts of bound characters, with the room
// varying as the window's does.
func checkSpans(t *testing.T, name string, h []processor.Message, span, bound int) {
	t.Helper()
	f := summary.NewFacts(summary.FactsOptions{MaxChars: bound})
	var prev, older string
	for k, from := 0, 0; from < len(h); k, from = k+1, from+span {
		msgs := h[from:min(len(h), from+span)]
		room := []int{0, bound / 2, 250, bound * 2}[k%4]
		previous := prev
		if k%3 == 2 && older != "" {
			previous = older + "\n" + prev // two merged markers' sections
		}
		got := f.Section(msgs, previous, room)
		want := summary.RefSection(bound, msgs, previous, room)
		if got != want {
			t.Fatalf("%s, messages %d to %d, room %d (-reference +fast):\n%s", name, from, from+len(msgs), room, cmp.Diff(want, got))
		}
		older = prev
		_, prev = summary.SplitFacts(got)
	}
}

// The same on synthetic histories made so that errors, names and files
// fill their room and overflow it, with names that are also edited files
// and facts repeated across spans.
func TestFactsEarlyStopSynthetic(t *testing.T) {
	for seed := range uint64(40) {
		h := factsHistory(rand.New(rand.NewPCG(seed, 7)), 300)
		for _, bound := range []int{300, 800, summary.DefaultFactsChars, 6000} {
			for _, span := range []int{7, 30, 120} {
				checkSpans(t, fmt.Sprintf("seed %d/span %d/bound %d", seed, span, bound), h, span, bound)
			}
		}
	}
}

// factsHistory returns n rounds of a random agent conversation rich in
// facts: prompts, texts and calls naming paths and identifiers, edits,
// shell commands that write files (some starting with a quoted word), and
// failing outputs.
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

// One Facts used by several goroutines at once (as the windows of a
// proxy share one) gives each the section of the reference: the
// extractions' pooled scratch is never shared between two of them, and
// holds nothing of a section once returned (run with -race).
func TestFactsConcurrent(t *testing.T) {
	f := summary.NewFacts(summary.FactsOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			h := factsHistory(rand.New(rand.NewPCG(uint64(g), 11)), 200)
			prev := ""
			for from := 0; from < len(h); from += 13 {
				msgs := h[from:min(len(h), from+13)]
				got := f.Section(msgs, prev, 0)
				if want := summary.RefSection(summary.DefaultFactsChars, msgs, prev, 0); got != want {
					t.Errorf("goroutine %d, messages %d to %d (-reference +got):\n%s", g, from, from+len(msgs), cmp.Diff(want, got))
					return
				}
				_, prev = summary.SplitFacts(got)
			}
		})
	}
	wg.Wait()
}
