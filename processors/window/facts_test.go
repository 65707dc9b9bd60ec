package window

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// factsOf returns the facts section of the one marker of h ("" when none).
func factsOf(t *testing.T, h []processor.Message) string {
	t.Helper()
	for _, m := range h {
		if s, _, ok := summary.ParseMarker(m); ok {
			_, facts := summary.SplitFacts(s)
			return facts
		}
	}
	t.Fatal("no marker")
	return ""
}

// The marker carries the facts of what it replaced beside the prose; the
// summarizer is given neither the facts nor whole texts, and the facts
// roll from one compaction to the next, those of the first still there
// after the second.
func TestFactsInMarker(t *testing.T) {
	var calls []struct {
		msgs     []processor.Message
		previous string
	}
	sum := summarizerFunc(func(_ context.Context, ms []processor.Message, previous string) (string, error) {
		calls = append(calls, struct {
			msgs     []processor.Message
			previous string
		}{ms, previous})
		return fmt.Sprintf("Summary %d.", len(calls)), nil
	})
	w := New(Options{Ahead: -1, MaxMessages: 12, Summarizer: sum, SummaryClip: 200})
	h := conversation(0, 0)
	// An error deep in a long output: past the clip, kept by the facts.
	h = append(h,
		call("err", "bash", `{"command":"go test ./pkg/x"}`),
		ret("err", "bash", strings.Repeat("ok line\n", 60)+"--- FAIL: TestParseConfig (0.00s)\n"))
	h = append(h, toolLoop(0, 10, 400)...)
	out, err := w.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("%d summarizer calls", len(calls))
	}
	for _, m := range calls[0].msgs {
		for _, p := range m.Parts {
			if r, ok := p.(processor.ToolReturn); ok && len(r.Content) > 200 {
				t.Errorf("the summarizer got a tool output of %d characters, clip 200", len(r.Content))
			}
		}
	}
	facts := factsOf(t, out)
	for _, want := range []string{"bash: cat file0.go", "Errors met:\n- bash: --- FAIL: TestParseConfig (0.00s)"} {
		if !strings.Contains(facts, want) {
			t.Errorf("facts lack %q:\n%s", want, facts)
		}
	}

	// The agent goes on from the processed history; a second compaction
	// folds the first summary's prose into the next and merges its facts.
	h2 := append(out, toolLoop(100, 8, 400)...)
	out2, err := w.Process(context.Background(), h2)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("%d summarizer calls after the second compaction", len(calls))
	}
	if diff := cmp.Diff("Summary 1.", calls[1].previous); diff != "" {
		t.Errorf("the summarizer's previous summary is not the prose alone (-want +got):\n%s", diff)
	}
	facts2 := factsOf(t, out2)
	for _, want := range []string{"bash: cat file0.go", "TestParseConfig", "bash: cat file100.go"} {
		if !strings.Contains(facts2, want) {
			t.Errorf("rolled facts lack %q:\n%s", want, facts2)
		}
	}
	if n := strings.Count(out2[len(out2)-1].Text(), summary.FactsHeader); n != 0 {
		t.Errorf("facts outside the marker")
	}
}

// The facts stay within their bound, and a middle too small to hold them
// beside a summary is summarized without them.
func TestFactsBound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		facts     int
		wantFacts bool
	}{
		{"default bound", 2000, 0, true},
		{"small middle", 60, 0, false},
		{"off", 2000, -1, false},
		{"small bound", 2000, 300, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := New(Options{Ahead: -1, MaxMessages: 12, FactsChars: tc.facts})
			out, err := w.Process(context.Background(), conversation(10, tc.size))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := markerOf(out); !ok {
				t.Fatal("no compaction")
			}
			facts := factsOf(t, out)
			if (facts != "") != tc.wantFacts {
				t.Fatalf("facts %q, want some: %v", facts, tc.wantFacts)
			}
			limit := summary.DefaultFactsChars
			if tc.facts > 0 {
				limit = tc.facts
			}
			if n := len(summary.FactsHeader) + 1 + len(facts); n > limit {
				t.Errorf("facts section of %d characters, bound %d", n, limit)
			}
		})
	}
}
