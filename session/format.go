package session

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// formatWidth bounds the text Format shows of one part.
const formatWidth = 100

// Format writes a transcript for people to read: one line per message (its
// seq, an "x" when a compaction removed it from the working history, its
// kind and a clipped view of its parts), and, where each compaction
// happened, one line saying which messages it covered and the start of its
// summary. For example:
//
//	  1   request   user: list the files
//	  2 x response  tool-call ls {}
//	  3 x request   tool-return ls: a.go b.go
//	--- compaction 1: covered 2-3 (2 messages); summary: the assistant listed…
//	  4   response  text: There are two files.
//
// entries and comps are what [Session.Transcript] and [Session.Compactions]
// return.
func Format(w io.Writer, entries []Entry, comps []Compaction) error {
	bw := bufio.NewWriter(w)
	c := 0
	flush := func(seq int64) {
		for c < len(comps) && comps[c].After <= seq {
			formatCompaction(bw, comps[c])
			c++
		}
	}
	for _, e := range entries {
		flush(e.Seq - 1)
		mark := " "
		if e.Compacted {
			mark = "x"
		}
		fmt.Fprintf(bw, "%5d %s %-9s %s\n", e.Seq, mark, e.Message.Kind, describe(e.Message))
	}
	for ; c < len(comps); c++ {
		formatCompaction(bw, comps[c])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("format transcript: %w", err)
	}
	return nil
}

func formatCompaction(w io.Writer, c Compaction) {
	fmt.Fprintf(w, "  --- compaction %d: covered %s (%d messages)", c.ID, ranges(c.Covered), len(c.Covered))
	if len(c.Superseded) > 0 {
		fmt.Fprintf(w, ", superseded %s", ranges(c.Superseded))
	}
	if c.Summary != "" {
		fmt.Fprintf(w, "; summary: %s", clip(c.Summary))
	} else if len(c.Inserted) > 0 {
		fmt.Fprintf(w, "; inserted %d messages", len(c.Inserted))
	}
	fmt.Fprintln(w)
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
func clip(s string) string { return processor.Clip(s, formatWidth) }
