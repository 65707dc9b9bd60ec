package summary

import (
	"slices"
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Placeholder format: phPrefix TOOL phCall ID phSize N phChars, then,
// with recall, phRecall, then phEnd.
const (
	phPrefix = "[abridge: the output of "
	phCall   = " (call "
	phSize   = ") was cleared to save context: "
	phChars  = " characters"
	phRecall = "; the recall tool returns it"
	phEnd    = "]"
)

// Placeholder returns the text that stands for a cleared tool output of n
// characters, the output of the call id to tool: it names both and the
// size, and, with recall, says that the recall tool (see agent.WithRecall)
// returns the output.
func Placeholder(tool, id string, n int, recall bool) string {
	if tool == "" {
		tool = "a tool"
	}
	s := phPrefix + tool + phCall + id + phSize + strconv.Itoa(n) + phChars
	if recall {
		s += phRecall
	}
	return s + phEnd
}

// ParsePlaceholder reports whether r holds a placeholder [Placeholder]
// wrote, and the size of the output it stands for.
func ParsePlaceholder(r processor.ToolReturn) (chars int, ok bool) {
	if r.JSON != nil || r.Contents != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(r.Content, phPrefix)
	if !ok || !strings.HasSuffix(s, phEnd) {
		return 0, false
	}
	i := strings.LastIndex(s, phSize)
	if i < 0 {
		return 0, false
	}
	rest := s[i+len(phSize):]
	j := strings.Index(rest, phChars)
	if j < 0 {
		return 0, false
	}
	if tail := rest[j+len(phChars):]; tail != phEnd && tail != phRecall+phEnd {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil || n < 0 || strconv.Itoa(n) != rest[:j] {
		return 0, false
	}
	return n, true
}

// Saving returns the characters clearing r would save ([Clear]): 0 when r
// is a placeholder already or its placeholder would be no shorter.
func Saving(r processor.ToolReturn, recall bool) int {
	if _, ok := ParsePlaceholder(r); ok {
		return 0
	}
	n := processor.PartChars(r)
	return max(n-len(Placeholder(r.ToolName, r.ToolCallID, n, recall)), 0)
}

// Clear returns r replaced by its placeholder (see [Placeholder]), and
// true; or r and false when r is a placeholder already or its placeholder
// would not be shorter than what it replaces. Tool name and call id are
// kept.
func Clear(r processor.ToolReturn, recall bool) (processor.ToolReturn, bool) {
	if _, ok := ParsePlaceholder(r); ok {
		return r, false
	}
	n := processor.PartChars(r)
	ph := Placeholder(r.ToolName, r.ToolCallID, n, recall)
	if len(ph) >= n {
		return r, false
	}
	return processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: ph}, true
}

// ClearParts returns a copy of parts with every tool return [Clear]
// clears cleared, but those keep (when not nil) reports true for; nil
// when none is.
func ClearParts(parts []processor.Part, recall bool, keep func(processor.ToolReturn) bool) []processor.Part {
	var out []processor.Part
	for j, p := range parts {
		r, ok := p.(processor.ToolReturn)
		if !ok || keep != nil && keep(r) {
			continue
		}
		cleared, ok := Clear(r, recall)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(parts)
		}
		out[j] = cleared
	}
	return out
}
