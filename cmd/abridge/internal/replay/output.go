package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay/internal/fidelity"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
)

// TableWidth is the most columns a line of [Report.WriteTable] takes,
// long words (a path in an error) aside.
const TableWidth = 100

// short writes n with grouped digits below 100,000, and in thousands
// ("123k") or millions ("4.5M") above.
func short(n float64) string {
	switch {
	case n >= 10e6:
		return fmt.Sprintf("%.0fM", n/1e6)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 100e3:
		return fmt.Sprintf("%.0fk", n/1e3)
	}
	return count(int(math.Round(n)))
}

// A column of a table: its heading on two lines and its cell for one
// result.
type column struct {
	top, bottom string
	cell        func(x Result) string
}

// The columns of the tables after the transcript's name. Prompt sizes are
// "without → with": the transcript prefix the request stands for, and
// what abridge sends.
var (
	colRequests    = column{"", "requests", func(x Result) string { return count(x.Requests) }}
	colCompactions = column{"", "compactions", func(x Result) string { return count(x.Compactions) }}
	colMeanTokens  = column{"mean prompt tokens", "without → with", func(x Result) string {
		return beforeAfter(x.MeanTokensBefore, x.MeanTokensAfter)
	}}
	colSummarizerRatio = column{"summarizer", "input ÷ size", func(x Result) string { return fmt.Sprintf("%.3f", x.SummarizerRatio()) }}
	colCacheReuse      = column{"cache", "reuse", func(x Result) string { return fmt.Sprintf("%.3f", x.CacheReuse) }}
	colInvalid         = column{"invalid", "requests", func(x Result) string { return count(x.InvalidRequests) }}
	// colBilled is what a request costs: input tokens billed when cached
	// input costs 10% or 25% of the full price (see Result.BilledAt10).
	colBilled = column{"billed tokens", "cached 10% / 25%", func(x Result) string {
		return short(x.BilledAt10) + " / " + short(x.BilledAt25)
	}}
	// colNeeded is what the requests still showed of what the replies
	// used: all needed tokens, and those last seen far back (see
	// Result.NeededKept).
	colNeeded = column{"needed kept", "all / far", func(x Result) string {
		return fmt.Sprintf("%.3f / %.3f", x.NeededKept, x.NeededKeptFar)
	}}

	// tableColumns fit TableWidth with the transcripts' names shortened;
	// the invalid requests and the summarizer's input of the total are
	// told below the table.
	tableColumns = []column{colRequests, colCompactions, colMeanTokens, colCacheReuse, colBilled, colNeeded}

	// wideColumns hold every figure of a result but its series.
	wideColumns = []column{
		{"", "messages", func(x Result) string { return count(x.Messages) }},
		colRequests,
		colCompactions,
		{"summarizer", "calls", func(x Result) string { return count(x.SummarizerCalls) }},
		{"requests", "waited", func(x Result) string { return count(x.Waits) }},
		{"requests", "deferred", func(x Result) string { return count(x.Deferred) }},
		{"summarizer input", "wasted", func(x Result) string { return fmt.Sprintf("%.3f", x.WastedShare()) }},
		{"fallback", "calls", func(x Result) string { return count(x.FallbackCalls) }},
		colSummarizerRatio,
		{"largest prompt tokens", "without → with", func(x Result) string {
			return beforeAfter(float64(x.MaxTokensBefore), float64(x.MaxTokensAfter))
		}},
		colMeanTokens,
		{"mean prompt characters", "without → with", func(x Result) string {
			return beforeAfter(x.MeanPromptCharsBefore, x.MeanPromptCharsAfter)
		}},
		{"mean prompt", "reduction", func(x Result) string {
			return fmt.Sprintf("%.1f%%", 100*reduction(x.MeanPromptCharsBefore, x.MeanPromptCharsAfter))
		}},
		colCacheReuse,
		{"cache reuse", "ceiling", func(x Result) string { return fmt.Sprintf("%.3f", x.CacheReuseCeiling) }},
		colBilled,
		{"processor µs", "per request", func(x Result) string { return fmt.Sprintf("%.1f", micros(x.PerRequest)) }},
		{"processor CPU", "µs per request", func(x Result) string { return fmt.Sprintf("%.1f", micros(x.PerRequestCPU)) }},
		{"file paths", "kept", func(x Result) string { return fmt.Sprintf("%.3f", x.Fidelity) }},
		{"written paths", "kept", func(x Result) string { return fmt.Sprintf("%.3f", x.WrittenFidelity) }},
		{"needed tokens", "kept", func(x Result) string { return fmt.Sprintf("%.3f", x.NeededKept) }},
		{"far needed tokens", "kept", func(x Result) string { return fmt.Sprintf("%.3f", x.NeededKeptFar) }},
		colInvalid,
	}
)

// maxNameWidth is the longest a transcript's name is in a table's row.
const maxNameWidth = 56

// WriteTable writes the report as a table that fits [TableWidth] columns:
// the settings, one row per transcript and a row of totals with the
// requests, compactions, mean estimated prompt tokens without → with
// abridge, the prompt-cache reuse, the input tokens billed per request at
// both cached prices, and the shares of needed tokens kept, all and far
// ([Result.NeededKept], [Result.NeededKeptFar]); then the totals of every
// other figure, one sentence a line. When the transcripts' names do not fit
// beside the figures, the rows are numbered and the names listed whole
// above the table.
// [Report.WriteWideTable] shows every figure per transcript.
func (r *Report) WriteTable(w io.Writer) error {
	return r.writeTable(w, tableColumns, TableWidth)
}

// WriteWideTable writes the report as [Report.WriteTable] does, with
// every figure per transcript (messages, summarizer and fallback calls,
// largest and mean prompt in tokens and characters, the reduction, the
// prompt-cache reuse and its ceiling, processor time, the shares of file
// paths and of needed tokens kept) and names up to 56 characters, some 340
// columns wide.
func (r *Report) WriteWideTable(w io.Writer) error {
	return r.writeTable(w, wideColumns, 0)
}

// writeTable writes the settings, the table of cols and the totals. A
// positive width shortens the names so that the table fits it.
func (r *Report) writeTable(w io.Writer, cols []column, width int) error {
	var b strings.Builder
	o := r.Options
	b.WriteString(fillParts(o.describe(), TableWidth))
	b.WriteString("\n")

	// The cells, the names first; widths in runes.
	results := append(slices.Clone(r.Results), r.Total)
	cells := make([][]string, len(results))
	widths := make([]int, len(cols)+1)
	widths[0] = len("transcript")
	for i, x := range results {
		cells[i] = make([]string, len(cols)+1)
		cells[i][0] = DisplayName(x.File)
		if i == len(results)-1 {
			cells[i][0] = "total"
		}
		for j, c := range cols {
			cells[i][j+1] = c.cell(x)
		}
	}
	for j, c := range cols {
		widths[j+1] = max(utf8.RuneCountInString(c.top), utf8.RuneCountInString(c.bottom))
	}
	for _, row := range cells {
		for j, s := range row {
			widths[j] = max(widths[j], utf8.RuneCountInString(s))
		}
	}
	const gap = 2
	if width > 0 {
		others := 0
		for _, wd := range widths[1:] {
			others += gap + wd
		}
		if widths[0] > width-others {
			// The names do not fit: the rows are numbered, and the names
			// listed whole above the table.
			b.WriteString("transcripts:\n")
			widths[0] = len("transcript")
			for i, row := range cells[:len(cells)-1] {
				fmt.Fprintf(&b, "%3d  %s\n", i+1, baseName(results[i].File))
				row[0] = strconv.Itoa(i + 1)
			}
			b.WriteString("\n")
		}
	}

	line := func(row []string) {
		var l strings.Builder
		for j, s := range row {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(s))
			switch {
			case j == 0:
				l.WriteString(s + pad)
			default:
				l.WriteString(strings.Repeat(" ", gap) + pad + s)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	top := []string{""}
	bottom := []string{"transcript"}
	for _, c := range cols {
		top, bottom = append(top, c.top), append(bottom, c.bottom)
	}
	line(top)
	line(bottom)
	for _, row := range cells {
		line(row)
	}
	b.WriteString("\n")
	r.writeTotals(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTotals writes the figures of the total the table does not show,
// one sentence a line, each filled to TableWidth.
func (r *Report) writeTotals(b *strings.Builder) {
	t := r.Total
	lines := []string{
		fmt.Sprintf("largest prompt %s tokens; mean prompt %s tokens",
			beforeAfter(float64(t.MaxTokensBefore), float64(t.MaxTokensAfter)), beforeAfter(t.MeanTokensBefore, t.MeanTokensAfter)),
		fmt.Sprintf("mean prompt %s characters, %.1f%% smaller",
			beforeAfter(t.MeanPromptCharsBefore, t.MeanPromptCharsAfter), 100*reduction(t.MeanPromptCharsBefore, t.MeanPromptCharsAfter)),
		fmt.Sprintf("summarizer: %s calls, %s fallbacks; input %s characters, %.3f × the transcripts' %s",
			count(t.SummarizerCalls), count(t.FallbackCalls), groupDigits(t.SummarizerInputChars), t.SummarizerRatio(), groupDigits(t.TranscriptChars)),
		fmt.Sprintf("naive baseline, summarizing all but head and tail anew each time: %.1f × that size (%.1f × trimmed)",
			t.NaiveRatio(), t.NaiveTrimmedRatio()),
		fmt.Sprintf("compacted messages %s, never summarized %s; invalid requests %s",
			count(t.CompactedMessages), count(t.Unsummarized), count(t.InvalidRequests)),
		fmt.Sprintf("fidelity: the summaries name %.3f of the file paths of the messages they replace (written: %.3f)",
			t.Fidelity, t.WrittenFidelity),
		fmt.Sprintf("needed tokens: the requests showed %.3f of the %s tokens the replies used from earlier messages, %.3f of the %s last seen over %d messages back",
			t.NeededKept, groupDigits(t.NeededTokens), t.NeededKeptFar, groupDigits(t.NeededFarTokens), fidelity.FarMessages),
		fmt.Sprintf("prompt-cache reuse %.3f of request bytes; ceiling %.3f (the most these compaction points allow)",
			t.CacheReuse, t.CacheReuseCeiling),
		fmt.Sprintf("processor time %.1f µs CPU a request (%.1f µs wall, %v in all); summarizer time %v",
			micros(t.PerRequestCPU), micros(t.PerRequest), t.ProcessorTime.Round(time.Microsecond), t.SummarizerTime.Round(time.Millisecond)),
		fmt.Sprintf("waits, in virtual time (a turn of %v between requests, %v a summary): %s requests waited for a summary (%.2f%%, %v in all); "+
			"%s went out uncompacted while theirs was written (deferred)",
			r.Options.Turn, r.Options.SummaryLatency, count(t.Waits), 100*t.WaitShare(), t.WaitTime, count(t.Deferred)),
		fmt.Sprintf("summaries written ahead: %s; those never used took %s characters, %.1f%% of the summarizer's input",
			count(t.AheadSummaries), groupDigits(t.WastedInputChars), 100*t.WastedShare()),
	}
	if t.DecodeTime > 0 {
		lines = append(lines, fmt.Sprintf("decoding the requests' JSON (transcript.Load): %.1f µs CPU a request; the processors take %.3f of that",
			micros(t.PerRequestDecodeCPU), t.DecodeRatio()))
	}
	if len(t.Failures) > 0 {
		reasons := make([]string, 0, len(t.Failures))
		for k, v := range t.Failures {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, v))
		}
		slices.Sort(reasons)
		lines = append(lines, "summaries not used (fallback written): "+strings.Join(reasons, ", "))
	}
	if t.FirstError != "" {
		lines = append(lines, "first invalid request: "+t.FirstError)
	}
	for _, l := range lines {
		b.WriteString(fill(l, TableWidth))
	}
}

// fill breaks text into lines of at most width runes at spaces, the lines
// after the first indented by two spaces; a word longer than a line stays
// whole. The last line ends with a newline too.
func fill(text string, width int) string {
	var b strings.Builder
	n := 0 // runes on the current line
	for _, word := range strings.Fields(text) {
		wn := utf8.RuneCountInString(word)
		switch {
		case n == 0:
		case n+1+wn > width:
			b.WriteString("\n  ")
			n = 2
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += wn
	}
	b.WriteString("\n")
	return b.String()
}

// fillParts joins parts with ", " into lines of at most width runes,
// breaking only between parts, the lines after the first indented by two
// spaces. The last line ends with a newline too.
func fillParts(parts []string, width int) string {
	var b strings.Builder
	n := 0 // runes on the current line
	for i, p := range parts {
		pn := utf8.RuneCountInString(p)
		switch {
		case i == 0:
		case n+2+pn > width:
			b.WriteString(",\n  ")
			n = 2
		default:
			b.WriteString(", ")
			n += 2
		}
		b.WriteString(p)
		n += pn
	}
	b.WriteString("\n")
	return b.String()
}

// describe returns the settings as phrases: the mode, the summarizer, the
// strategy, the window's triggers, tail and clearing, and the trimmer's
// cap, defaults resolved: every setting that changes the replay's result.
func (o Settings) describe() []string {
	parts := []string{"mode " + o.Mode, "summarizer " + o.Summarizer}
	if o.Strategy != "" {
		parts = append(parts, "strategy "+o.Strategy)
	}
	maxMessages := o.MaxMessages
	switch {
	case o.MaxMessages < 0:
		parts = append(parts, "no message trigger")
		maxMessages = window.DefaultMaxMessages
	case o.MaxMessages == 0:
		maxMessages = window.DefaultMaxMessages
		parts = append(parts, "max messages "+count(maxMessages))
	default:
		parts = append(parts, "max messages "+count(o.MaxMessages))
	}
	if o.ContextWindow > 0 {
		pct := o.TriggerPercent
		if pct == 0 {
			pct = window.DefaultTriggerPercent
		}
		parts = append(parts, fmt.Sprintf("token trigger at %d%% of %s tokens", pct, count(o.ContextWindow)))
	}
	if o.TriggerTokens > 0 {
		parts = append(parts, "token trigger at "+count(o.TriggerTokens)+" tokens")
	}
	if o.ContextWindow <= 0 && o.TriggerTokens <= 0 {
		parts = append(parts, "no token trigger")
	}
	// The tail as window.Options.KeepMessages documents it.
	keep := max(4, maxMessages/2)
	if o.KeepMessages > 0 {
		keep = max(2, o.KeepMessages)
	}
	if o.KeepUserTurns > 0 {
		parts = append(parts, "tail of "+count(o.KeepUserTurns)+" user turns (else "+count(keep)+" messages)")
	} else {
		parts = append(parts, "tail of "+count(keep)+" messages")
	}
	if o.TailOutputs > 0 {
		rounds := "the last round's"
		if o.TailOutputs > 1 {
			rounds = "the last " + count(o.TailOutputs) + " rounds'"
		}
		parts = append(parts, "the tail's tool outputs cleared but "+rounds)
	}
	if o.TrimMaxChars < 0 {
		parts = append(parts, "no trimming")
	} else {
		parts = append(parts, "trim at "+count(cmp.Or(o.TrimMaxChars, trimtools.DefaultMaxChars))+" characters")
	}
	if o.TrimKeepLast > 0 {
		parts = append(parts, "the last "+count(o.TrimKeepLast)+" messages untrimmed")
	}
	if o.Ahead < 0 {
		parts = append(parts, "summaries written when due")
	} else {
		parts = append(parts, "summaries written "+count(cmp.Or(o.Ahead, window.DefaultAhead))+" requests ahead")
	}
	return parts
}

// count formats a count with its digits grouped by thousands.
func count(n int) string { return groupDigits(int64(n)) }

// beforeAfter formats "without → with", rounded to integers, digits
// grouped by thousands.
func beforeAfter(before, after float64) string {
	return groupDigits(int64(math.Round(before))) + " → " + groupDigits(int64(math.Round(after)))
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
	return cutMiddle(baseName(path), maxNameWidth)
}

// baseName returns the base name of a transcript path without the .json,
// .jsonl and .traj extensions.
func baseName(path string) string {
	name := filepath.Base(path)
	for {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".jsonl"), ".traj")
		if trimmed == name {
			return name
		}
		name = trimmed
	}
}

// cutMiddle returns s cut to limit runes by replacing its middle with "…".
func cutMiddle(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	head := (limit - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(limit-1-head):])
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
