package summarizer

import (
	"context"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// DefaultDigestChars is the size bound of a [Digest] summary when
// [DigestOptions.MaxChars] is 0.
const DefaultDigestChars = 4000

// DigestHeader starts every summary a [Digest] writes.
const DigestHeader = "Digest of earlier messages (written offline, without a model)."

// writtenLabel starts the line listing the files written; a later digest
// reads it back from its previous summary so no written path is lost.
const writtenLabel = "Files written: "

// DigestOptions configures a [Digest]. The zero value means all defaults.
type DigestOptions struct {
	// MaxChars bounds the summary's size; 0 means DefaultDigestChars. The
	// header line, the count of messages and the list of files written
	// are always kept whole, even past the bound; when they fill it, the
	// digest holds nothing else.
	MaxChars int
}

// Digest is an offline, deterministic summarizer: it extracts the user's
// requests, the tools called with their key arguments, the errors and
// files seen and the last assistant text, without calling any model. It is
// the window's fallback and the default when no model is configured. It is
// safe for concurrent use.
type Digest struct {
	maxChars int
}

// NewDigest returns a Digest.
func NewDigest(opts DigestOptions) *Digest {
	n := opts.MaxChars
	if n <= 0 {
		n = DefaultDigestChars
	}
	return &Digest{maxChars: n}
}

// Summarize returns the digest of messages, merged with previous (kept,
// clipped to a share of the bound; the files written it lists, those of
// every digest it holds, are carried over whole). It never fails and never
// waits. A digest extracts the same things whatever the focus (an
// on-demand compaction's, see package compact), so it cannot follow one;
// it records a focus that is not empty, clipped, right after its counts,
// so the model reading the summary knows what the user asked to keep above
// all.
func (d *Digest) Summarize(_ context.Context, messages []processor.Message, previous, focus string) (string, error) {
	return d.digest(messages, previous, focus), nil
}

func (d *Digest) digest(messages []processor.Message, previous, focus string) string {
	written, mentioned := summary.Paths(messages)
	prevWritten, prevRest := splitDigest(previous)
	written = mergePaths(prevWritten, written)

	var b strings.Builder
	b.WriteString(DigestHeader)
	b.WriteString("\n")
	b.WriteString("Messages covered: " + strconv.Itoa(len(messages)) + ".\n")
	if len(written) > 0 {
		b.WriteString(writtenLabel + strings.Join(written, ", ") + "\n")
	}
	fixed := b.Len() // the header and the files written, always kept
	budget := d.maxChars - fixed
	section := func(title, body string) {
		if body == "" {
			return
		}
		b.WriteString(title + "\n" + body + "\n")
	}
	share := func(pct int) int { return max(budget*pct/100, 0) }

	section("Focus asked for:", summary.Clip(collapse(focus), share(5)))
	if prevRest = strings.TrimSpace(prevRest); prevRest != "" {
		section("Earlier summary:", summary.Clip(prevRest, share(40)))
	}
	section("User requests:", userRequests(messages, share(15)))
	section("Tool calls:", toolCalls(messages, share(13)))
	section("Errors seen:", errorsSeen(messages, share(9)))
	section("Last assistant text:", summary.Clip(collapse(lastText(messages)), share(10)))
	if left := d.maxChars - max(b.Len(), fixed) - len("Files mentioned: \n"); left > 0 && len(mentioned) > 0 {
		var kept []string
		n := 0
		for _, p := range mentioned {
			if n+len(p)+2 > left {
				break
			}
			kept = append(kept, p)
			n += len(p) + 2
		}
		if len(kept) > 0 {
			b.WriteString("Files mentioned: " + strings.Join(kept, ", ") + "\n")
		}
	}
	out := strings.TrimRight(b.String(), "\n")
	if len(out) > fixed && len(out)-fixed > max(budget, 0) {
		if budget > 0 {
			out = out[:fixed] + summary.Clip(out[fixed:], budget)
		} else {
			// The fixed lines fill the bound: nothing else fits (clip
			// would not cut at 0).
			out = strings.TrimRight(out[:fixed], "\n")
		}
	}
	return out
}

// splitDigest returns the files-written lists of a previous digest (of
// each, when previous joins several) and the rest of its text, without
// their headers and counts. A previous summary of another kind is returned
// whole.
func splitDigest(previous string) (written []string, rest string) {
	if !strings.Contains(previous, writtenLabel) && !strings.Contains(previous, DigestHeader) {
		return nil, previous
	}
	var lines []string
	for _, line := range strings.Split(previous, "\n") {
		if list, ok := strings.CutPrefix(line, writtenLabel); ok {
			written = append(written, strings.Split(list, ", ")...)
			continue
		}
		if line == DigestHeader || strings.HasPrefix(line, "Messages covered: ") {
			continue
		}
		lines = append(lines, line)
	}
	return written, strings.Join(lines, "\n")
}

// mergePaths returns a followed by the paths of b it lacks.
func mergePaths(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, p := range append(append([]string(nil), a...), b...) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// fitLines joins items as "- item" lines within budget characters, always
// keeping the first item and then as many of the latest as fit, in order.
func fitLines(items []string, budget int) string {
	if len(items) == 0 || budget <= 0 {
		return ""
	}
	line := func(s string) string { return "- " + s + "\n" }
	first := line(items[0])
	if len(first) > budget {
		return strings.TrimRight(summary.Clip(first, budget), "\n")
	}
	used := len(first)
	var tail []string
	for i := len(items) - 1; i >= 1; i-- {
		l := line(items[i])
		if used+len(l) > budget {
			break
		}
		used += len(l)
		tail = append(tail, l)
	}
	var b strings.Builder
	b.WriteString(first)
	if skipped := len(items) - 1 - len(tail); skipped > 0 {
		b.WriteString("- (" + strconv.Itoa(skipped) + " more left out)\n")
	}
	for i := len(tail) - 1; i >= 0; i-- {
		b.WriteString(tail[i])
	}
	return strings.TrimRight(b.String(), "\n")
}

// userRequests lists the user's prompts.
func userRequests(messages []processor.Message, budget int) string {
	var items []string
	for _, m := range messages {
		for _, p := range m.Parts {
			if u, ok := p.(processor.UserPrompt); ok {
				if t := collapse(summary.UserText(u)); t != "" {
					items = append(items, summary.Clip(t, 300))
				}
			}
		}
	}
	return fitLines(items, budget)
}

// toolCalls counts the calls per tool and lists the latest ones.
func toolCalls(messages []processor.Message, budget int) string {
	var names []string
	count := map[string]int{}
	var items []string
	for _, m := range messages {
		for _, c := range m.ToolCalls() {
			if count[c.ToolName] == 0 {
				names = append(names, c.ToolName)
			}
			count[c.ToolName]++
			items = append(items, c.ToolName+": "+summary.KeyArg(c.Args))
		}
	}
	if len(items) == 0 {
		return ""
	}
	var counts []string
	for _, n := range names {
		counts = append(counts, n+" x"+strconv.Itoa(count[n]))
	}
	noun := " calls: "
	if len(items) == 1 {
		noun = " call: "
	}
	head := summary.Clip(strconv.Itoa(len(items))+noun+strings.Join(counts, ", "), budget)
	return strings.TrimRight(head+"\n"+fitLines(items, budget-len(head)-1), "\n")
}

// errorsSeen lists the errors reported by tools and retry prompts.
func errorsSeen(messages []processor.Message, budget int) string {
	var items []string
	seen := map[string]bool{}
	add := func(tool, line string) {
		if line == "" {
			return
		}
		if tool != "" {
			line = tool + ": " + line
		}
		if !seen[line] {
			seen[line] = true
			items = append(items, line)
		}
	}
	for _, m := range messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case processor.RetryPrompt:
				add(p.ToolName, summary.Clip(collapse(p.Content), 200))
			case processor.ToolReturn:
				add(p.ToolName, summary.ErrorLine(p.ToolReturnContent()))
			}
		}
	}
	return fitLines(items, budget)
}

// collapse replaces runs of white space with one space, and trims it.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// lastText returns the last text the assistant wrote.
func lastText(messages []processor.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Kind == processor.Response {
			if t := messages[i].Text(); strings.TrimSpace(t) != "" {
				return t
			}
		}
	}
	return ""
}
