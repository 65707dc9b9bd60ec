package replay

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// bigResult returns a result with figures as large as a replay of many
// long transcripts gives, under a long path.
func bigResult(path string, scale int64) Result {
	n := int(scale)
	x := Result{
		File: path, Messages: 4_674 * n, Requests: 2_201 * n, Compactions: 201 * n,
		SummarizerCalls: 189 * n, FallbackCalls: 12 * n, Failures: map[string]int{"timeout": 3 * n, "summary too large": 9 * n},
		SummarizerInputChars: 3_620_571 * scale, TranscriptChars: 7_300_123 * scale,
		NaiveSummarizerChars: 267_180_000 * scale, NaiveTrimmedChars: 204_400_000 * scale,
		CompactedMessages: 3_733 * n, Unsummarized: 2 * n,
		MaxPromptCharsBefore: 6_029_280, MaxPromptCharsAfter: 993_280,
		MaxTokensBefore: 1_507_320, MaxTokensAfter: 248_320,
		ReusedChars: 8_560_000_000 * scale, RequestChars: 10_000_000_000 * scale, CeilingChars: 8_650_000_000 * scale,
		ProcessorTime: 123 * time.Second * time.Duration(scale), ProcessorCPU: 98 * time.Second * time.Duration(scale),
		SummarizerTime: 3 * time.Hour * time.Duration(scale),
		PathsCompacted: 9_000 * scale, PathsKept: 4_527 * scale, PathsWrittenCompacted: 800 * scale, PathsWrittenKept: 800 * scale,
		NeededTokens: 123_456 * scale, NeededKeptTokens: 101_234 * scale, NeededFarTokens: 23_456 * scale, NeededFarKeptTokens: 6_789 * scale,
		InvalidRequests: 1_234 * n, FirstError: "request 1234: validate: message 2: call \"c1\" (ls) of message 1: tool call without a tool return",
		sumCharsBefore: 351_211_000 * scale, sumCharsAfter: 66_063_000 * scale,
		sumTokensBefore: 88_979_800 * scale, sumTokensAfter: 16_791_000 * scale,
	}
	x.finish()
	return x
}

// tableReports returns the reports the table tests print: the shipped
// transcripts replayed, and a report of two huge results with long paths
// and every setting given.
func tableReports(t *testing.T) map[string]*Report {
	t.Helper()
	shipped, err := Run(t.Context(), transcripts.Shipped(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	big := NewReport(Options{
		Summarizer: SummarizerRecorder,
		Window:     window.Options{MaxMessages: 100, ContextWindow: 1_000_000, TriggerPercent: 85, KeepUserTurns: 3},
		Trim:       trimtools.Options{MaxChars: 20_000},
	}, []Result{
		bigResult("/home/someone/transcripts/openai/claudecode-spotter__258c7280-ae70-4798-800f-63464d01a85d__subagent-agent-a881341.jsonl.json", 1),
		bigResult("/home/someone/transcripts/openai/minisweagent-gemini3pro__django__django-10914.traj.json.json", 40),
	})
	return map[string]*Report{"shipped": shipped, "huge figures, long names": big}
}

// TestTable checks the default table: every line fits TableWidth (a word
// longer than a line aside), the headings are words, every transcript
// has a row under a recognisable name, and the figures docs/figures.md quotes
// are all there.
func TestTable(t *testing.T) {
	for name, rep := range tableReports(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := rep.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > TableWidth && len(strings.Fields(l)) > 1 {
					t.Errorf("line %d is %d columns wide, more than %d:\n%s", i+1, n, TableWidth, l)
				}
			}

			// The settings, a blank line, two lines of headings (the
			// second starts with "transcript"), the rows.
			h := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "transcript ") })
			if h < 1 || len(lines) < h+1+len(rep.Results)+1 {
				t.Fatalf("no headings followed by %d rows:\n%s", len(rep.Results)+1, out)
			}
			headings := lines[h-1] + "\n" + lines[h]
			for _, abbr := range []string{"msgs", "reqs", "summ ", "/size", "/req", "cpu"} {
				if strings.Contains(headings, abbr) {
					t.Errorf("the headings abbreviate (%q):\n%s", abbr, headings)
				}
			}
			rows := lines[h+1 : h+1+len(rep.Results)+1]
			for i, x := range rep.Results {
				checkRowName(t, out, rows[i], DisplayName(x.File), x.File)
			}
			total := rows[len(rows)-1]
			tt := rep.Total
			if !strings.HasPrefix(total, "total ") {
				t.Fatalf("the last row is not the total: %q", total)
			}
			for _, want := range []string{groupDigits(int64(tt.Requests)), groupDigits(int64(tt.Compactions)),
				fmt.Sprintf("%.3f", tt.CacheReuse), fmt.Sprintf("%.3f", tt.NeededKept), fmt.Sprintf("%.3f", tt.NeededKeptFar)} {
				if !slices.Contains(strings.Fields(total), want) {
					t.Errorf("the total row lacks %s: %q", want, total)
				}
			}

			// What docs/figures.md quotes, read across wrapped lines.
			text := strings.Join(strings.Fields(out), " ")
			arrow := func(a, b float64) string {
				return groupDigits(int64(a+0.5)) + " → " + groupDigits(int64(b+0.5))
			}
			for _, want := range []string{
				"mean prompt " + arrow(tt.MeanTokensBefore, tt.MeanTokensAfter) + " tokens",
				"largest prompt " + arrow(float64(tt.MaxTokensBefore), float64(tt.MaxTokensAfter)) + " tokens",
				"mean prompt " + arrow(tt.MeanPromptCharsBefore, tt.MeanPromptCharsAfter) + " characters",
				fmt.Sprintf("%.1f%% smaller", 100*(1-tt.MeanPromptCharsAfter/tt.MeanPromptCharsBefore)),
				groupDigits(int64(tt.SummarizerCalls)) + " calls, " + groupDigits(int64(tt.FallbackCalls)) + " fallbacks",
				fmt.Sprintf("%.3f × the transcripts'", tt.SummarizerRatio()),
				fmt.Sprintf("%.1f × that size (%.1f × trimmed)", tt.NaiveRatio(), tt.NaiveTrimmedRatio()),
				"compacted messages " + groupDigits(int64(tt.CompactedMessages)) + ", never summarized " + groupDigits(int64(tt.Unsummarized)),
				"invalid requests " + groupDigits(int64(tt.InvalidRequests)),
				fmt.Sprintf("name %.3f of the file paths", tt.Fidelity),
				fmt.Sprintf("(written: %.3f)", tt.WrittenFidelity),
				fmt.Sprintf("the requests showed %.3f of the %s tokens", tt.NeededKept, groupDigits(tt.NeededTokens)),
				fmt.Sprintf("%.3f of the %s last seen over 20 messages back", tt.NeededKeptFar, groupDigits(tt.NeededFarTokens)),
				fmt.Sprintf("prompt-cache reuse %.3f", tt.CacheReuse),
				fmt.Sprintf("ceiling %.3f", tt.CacheReuseCeiling),
				fmt.Sprintf("%.1f µs CPU a request", float64(tt.PerRequestCPU)/1e3),
			} {
				if !strings.Contains(text, want) {
					t.Errorf("the table does not say %q:\n%s", want, out)
				}
			}
			if tt.FirstError != "" && !strings.Contains(text, "first invalid request: "+tt.FirstError) {
				t.Errorf("the table does not give the first invalid request %q:\n%s", tt.FirstError, out)
			}
		})
	}
}

// checkRowName checks that row starts with name, or with the number the
// table's list of transcripts (in out) gives its whole name, file.
func checkRowName(t *testing.T, out, row, name, file string) {
	t.Helper()
	got, _, _ := strings.Cut(row, "  ")
	if got == name {
		return
	}
	if _, err := strconv.Atoi(got); err != nil || !strings.Contains(out, fmt.Sprintf("\n%3s  %s\n", got, baseName(file))) {
		t.Errorf("row %q does not name %s", row, name)
	}
}

// TestWideTable checks that the wide table names each transcript in full
// (up to DisplayName's limit) and gives its figures on its row.
func TestWideTable(t *testing.T) {
	for name, rep := range tableReports(t) {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := rep.WriteWideTable(&buf); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(buf.String(), "\n")
			for _, x := range append(rep.Results, rep.Total) {
				label := DisplayName(x.File)
				if x.File == "total" {
					label = "total"
				}
				var row string
				for _, l := range lines {
					if strings.HasPrefix(l, label+"  ") {
						row = l
						break
					}
				}
				if row == "" {
					t.Errorf("no row for %s:\n%s", label, buf.String())
					continue
				}
				fields := strings.Fields(row)
				for _, want := range []string{groupDigits(int64(x.Messages)), groupDigits(int64(x.SummarizerCalls)), groupDigits(int64(x.FallbackCalls)),
					fmt.Sprintf("%.3f", x.CacheReuseCeiling), fmt.Sprintf("%.3f", x.Fidelity), fmt.Sprintf("%.3f", x.WrittenFidelity),
					fmt.Sprintf("%.3f", x.SummarizerRatio()), fmt.Sprintf("%.3f", x.NeededKept), fmt.Sprintf("%.3f", x.NeededKeptFar),
					fmt.Sprintf("%.1f", float64(x.PerRequestCPU)/1e3), groupDigits(int64(x.InvalidRequests))} {
					if !slices.Contains(fields, want) {
						t.Errorf("the row of %s lacks %s: %q", label, want, row)
					}
				}
			}
		})
	}
}

func TestFill(t *testing.T) {
	tests := []struct {
		text  string
		width int
		want  string
	}{
		{"", 10, "\n"},
		{"one line", 10, "one line\n"},
		{"a b c", 3, "a b\n  c\n"},
		{"short averyveryverylongword end", 10, "short\n  averyveryverylongword\n  end\n"},
		{"→ → → →", 5, "→ → →\n  →\n"},
		{"  spaces   collapse  ", 20, "spaces collapse\n"},
	}
	for _, tt := range tests {
		if got := fill(tt.text, tt.width); got != tt.want {
			t.Errorf("fill(%q, %d) = %q, want %q", tt.text, tt.width, got, tt.want)
		}
	}
}

func TestFillParts(t *testing.T) {
	tests := []struct {
		parts []string
		width int
		want  string
	}{
		{nil, 10, "\n"},
		{[]string{"mode full"}, 10, "mode full\n"},
		{[]string{"a b", "c d"}, 8, "a b, c d\n"},
		{[]string{"a b", "c d", "e f"}, 8, "a b, c d,\n  e f\n"},
		{[]string{"a very long part", "x"}, 8, "a very long part,\n  x\n"},
	}
	for _, tt := range tests {
		if got := fillParts(tt.parts, tt.width); got != tt.want {
			t.Errorf("fillParts(%q, %d) = %q, want %q", tt.parts, tt.width, got, tt.want)
		}
	}
}

func TestCutMiddle(t *testing.T) {
	tests := []struct {
		s     string
		limit int
		want  string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "ab…efg"},
		{"abcdefgh", 5, "ab…gh"},
		{"αβγδεζη", 4, "α…ζη"},
	}
	for _, tt := range tests {
		if got := cutMiddle(tt.s, tt.limit); got != tt.want {
			t.Errorf("cutMiddle(%q, %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
		}
	}
}
