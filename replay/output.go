package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// WriteTable writes the report as an aligned table: the settings, one row
// per transcript, a row of totals, and the naive baseline. Prompt sizes are
// shown before → after (without abridge → what is sent): the largest and
// the mean estimated tokens, the mean characters, and the reduction of the
// mean characters sent.
func (r *Report) WriteTable(w io.Writer) error {
	o := r.Options
	if _, err := fmt.Fprintf(w, "mode %s, summarizer %s, max messages %s, context window %s, trigger %s, trim %s\n\n",
		o.Mode, o.Summarizer, orDefault(o.MaxMessages), orNone(o.ContextWindow), orDefault(o.TriggerPercent), orDefault(o.TrimMaxChars)); err != nil {
		return err
	}
	// The names are padded here to be left-aligned; tabwriter aligns the
	// figures to the right.
	width := len("transcript")
	for _, x := range r.Results {
		width = max(width, utf8.RuneCountInString(DisplayName(x.File)))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, pad("transcript")+"\tmsgs\treqs\tcompact\tsumm calls\tsumm in/size\tmax tokens\tmean tokens\tmean chars\treduction\tcache reuse\tµs/req\tcpu µs/req\tfidelity\tinvalid\t")
	row := func(name string, x Result) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%d → %d\t%.0f → %.0f\t%.0f → %.0f\t%.1f%%\t%.3f\t%.1f\t%.1f\t%.3f\t%d\t\n",
			pad(name), x.Messages, x.Requests, x.Compactions, x.SummarizerCalls+x.FallbackCalls, x.SummarizerRatio(),
			x.MaxTokensBefore, x.MaxTokensAfter, x.MeanTokensBefore, x.MeanTokensAfter,
			x.MeanPromptCharsBefore, x.MeanPromptCharsAfter, 100*reduction(x.MeanPromptCharsBefore, x.MeanPromptCharsAfter),
			x.CacheReuse, micros(x.PerRequest), micros(x.PerRequestCPU), x.Fidelity, x.InvalidRequests)
	}
	for _, x := range r.Results {
		row(DisplayName(x.File), x)
	}
	row("total", r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	t := r.Total
	_, err := fmt.Fprintf(w, "\nsummarizer input %d chars = %.3f × the transcripts' %d chars; naive re-summarizing baseline %.1f × (%.1f × after trimming)\n"+
		"compacted messages %d, never summarized %d; summarizer calls %d, fallback calls %d; fidelity %.3f of paths (%.3f of paths written)\n"+
		"prompt-cache reuse %.3f; ceiling %.3f: what these compaction points allow, whatever the trimmer and the summaries do\n"+
		"processor time %v wall, %.1f µs/request (CPU %.1f µs/request); summarizer time %v\n",
		t.SummarizerInputChars, t.SummarizerRatio(), t.TranscriptChars, t.NaiveRatio(), t.NaiveTrimmedRatio(),
		t.CompactedMessages, t.Unsummarized, t.SummarizerCalls, t.FallbackCalls, t.Fidelity, t.WrittenFidelity,
		t.CacheReuse, t.CacheReuseCeiling,
		t.ProcessorTime.Round(time.Microsecond), micros(t.PerRequest), micros(t.PerRequestCPU), t.SummarizerTime.Round(time.Millisecond))
	if err == nil && len(t.Failures) > 0 {
		reasons := make([]string, 0, len(t.Failures))
		for k, v := range t.Failures {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, v))
		}
		slices.Sort(reasons)
		_, err = fmt.Fprintf(w, "summaries not used (fallback written): %s\n", strings.Join(reasons, ", "))
	}
	if err == nil && t.FirstError != "" {
		_, err = fmt.Fprintf(w, "first invalid request: %s\n", t.FirstError)
	}
	return err
}

// reduction returns the share of before that after saves, 0 when before is 0.
func reduction(before, after float64) float64 {
	if before <= 0 {
		return 0
	}
	return 1 - after/before
}

// WriteJSON writes the report as indented JSON, series included.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// DisplayName returns the short name a table shows for a transcript path:
// its base name without the .json, .jsonl and .traj extensions, cut in the
// middle when longer than 56 characters.
func DisplayName(path string) string {
	name := filepath.Base(path)
	for {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".jsonl"), ".traj")
		if trimmed == name {
			break
		}
		name = trimmed
	}
	const limit = 56
	if r := []rune(name); len(r) > limit {
		name = string(r[:limit/2-1]) + "…" + string(r[len(r)-limit/2:])
	}
	return name
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func orDefault(n int) string {
	if n == 0 {
		return "default"
	}
	return fmt.Sprint(n)
}

func orNone(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}
