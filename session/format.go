package session

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// formatWidth bounds the text Format shows of one part.
const formatWidth = 100

// Format writes a transcript for people to read: a heading, one line per
// message (its seq; "c" when a compaction took it out of the working
// history, "w" when the withdrawal of its turn did, "+" when a compaction
// added it and it is still in the working history; its kind and a clipped
// view of its parts, the summary's text for a summary marker), and, where
// each compaction or withdrawn turn happened, one line saying which
// messages it took out and, for a compaction, which messages it put in
// (listed right after it) and the start of its summary. Compactions are
// numbered 1, 2, 3… apart from the withdrawn turns. For example:
//
//	seq   kind      message (c: compacted, w: from a withdrawn turn, +: added by a compaction, unmarked: in the working history)
//	  1   request   user: list the files
//	  2 c response  tool-call ls {}
//	  3 c request   tool-return ls: a.go b.go
//	  4   response  text: There are two files.
//	--- compaction 1: messages 2-3 (2) replaced by message 5; summary: the assistant listed…
//	  5 + summary   the assistant listed…
//	  6 w request   user: and the tests?
//	--- turn withdrawn (interrupted): message 6 taken out of the working history
//
// entries and comps are what [Session.Transcript] and [Session.Compactions]
// return.
func Format(w io.Writer, entries []Entry, comps []Compaction) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%5s   %-9s %s\n", "seq", "kind", "message (c: compacted, w: from a withdrawn turn, +: added by a compaction, unmarked: in the working history)")
	withdrawn := make(map[int64]bool, len(comps))
	for _, c := range comps {
		withdrawn[c.ID] = c.Withdrawn != ""
	}
	// The rows: the transcript's messages and those compactions added,
	// in the order of their seqs.
	type row struct {
		Entry
		added bool
	}
	rows := make([]row, 0, len(entries))
	for _, e := range entries {
		rows = append(rows, row{Entry: e})
	}
	for _, c := range comps {
		for _, e := range c.Inserted {
			rows = append(rows, row{Entry: e, added: true})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.Seq, b.Seq) })

	c, n := 0, 0 // the next record, the compactions shown
	show := func(comp Compaction) {
		if comp.Withdrawn == "" {
			n++
		}
		formatCompaction(bw, comp, n)
	}
	flush := func(seq int64) {
		for c < len(comps) && comps[c].After <= seq {
			show(comps[c])
			c++
		}
	}
	for _, r := range rows {
		flush(r.Seq - 1)
		mark := " "
		switch {
		case r.Compacted && withdrawn[r.CompactionID]:
			mark = "w"
		case r.Compacted:
			mark = "c"
		case r.added:
			mark = "+"
		}
		kind, text := r.Message.Kind.String(), describe(r.Message)
		if s, _, ok := summary.ParseMarker(r.Message); ok {
			kind, text = "summary", clip(s)
		}
		fmt.Fprintf(bw, "%5d %s %-9s %s\n", r.Seq, mark, kind, text)
	}
	for ; c < len(comps); c++ {
		show(comps[c])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("format transcript: %w", err)
	}
	return nil
}

// formatCompaction writes the line of a record, the nth compaction when it
// is not a withdrawn turn.
func formatCompaction(w io.Writer, c Compaction, n int) {
	in := make([]int64, len(c.Inserted))
	for i, e := range c.Inserted {
		in[i] = e.Seq
	}
	if c.Withdrawn != "" {
		fmt.Fprintf(w, "  --- turn withdrawn (%s): %s taken out of the working history", clip(c.Withdrawn), messages(c.Covered))
		if len(c.Superseded) > 0 || len(in) > 0 {
			// The turn had compacted the history: that is undone.
			fmt.Fprintf(w, "; its compaction undone: earlier %s replaced by %s", ranges(c.Superseded), messages(in))
		}
		fmt.Fprintln(w)
		return
	}
	out := messages(c.Covered)
	if len(c.Superseded) > 0 {
		earlier := "earlier " + ranges(c.Superseded)
		if len(c.Covered) == 0 {
			out = earlier
		} else {
			out += " and " + earlier
		}
	}
	if len(in) == 0 {
		// A rolling summary whose text came out the same is kept as it
		// was: the compaction only took messages out.
		fmt.Fprintf(w, "  --- compaction %d: %s taken out of the working history, no message added\n", n, out)
		return
	}
	fmt.Fprintf(w, "  --- compaction %d: %s replaced by %s", n, out, messages(in))
	if s := compactionSummary(c); s != "" {
		fmt.Fprintf(w, "; summary: %s", clip(s))
	}
	fmt.Fprintln(w)
}

// compactionSummary is the text of the summary a compaction wrote: that of
// the summary marker it added, else the text of what it added.
func compactionSummary(c Compaction) string {
	for _, e := range c.Inserted {
		if s, _, ok := summary.ParseMarker(e.Message); ok {
			return s
		}
	}
	return c.Summary
}

// messages names seqs: "message 5", "messages 2-3, 7 (3)" or "nothing".
func messages(seqs []int64) string {
	switch len(seqs) {
	case 0:
		return "nothing"
	case 1:
		return "message " + ranges(seqs)
	}
	return fmt.Sprintf("messages %s (%d)", ranges(seqs), len(seqs))
}

// ranges writes seqs as "1-3, 7".
func ranges(seqs []int64) string {
	if len(seqs) == 0 {
		return "nothing"
	}
	var parts []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(seqs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", seqs[i], seqs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// describe renders a message's parts on one line.
func describe(m processor.Message) string {
	var parts []string
	for _, p := range m.Parts {
		parts = append(parts, processor.Describe(p, formatWidth))
	}
	if r := m.Refusal(); r != "" {
		parts = append(parts, "refusal: "+clip(r))
	}
	return strings.Join(parts, " | ")
}

// clip returns s on one line, cut to formatWidth runes.
func clip(s string) string { return processor.Preview(s, formatWidth) }
