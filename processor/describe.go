package processor

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Describe renders a part on one line for people (a chat's /history, a
// session transcript): a label, then its content with white space folded and
// cut to width characters followed by "…" (width <= 0: no cut). The labels
// are "system:", "user:", "tool NAME:", "retry NAME:", "assistant:",
// "assistant calls NAME(ARGS)" and "thinking:"; an [Opaque] part is
// "API TYPE (N bytes)", its content never shown.
func Describe(p Part, width int) string {
	clip := func(s string) string { return Preview(s, width) }
	switch p := p.(type) {
	case SystemPrompt:
		return "system: " + clip(p.Content)
	case UserPrompt:
		return "user: " + clip(NewRequest(p).Text())
	case ToolReturn:
		return "tool " + p.ToolName + ": " + clip(p.ToolReturnContent())
	case RetryPrompt:
		return "retry " + p.ToolName + ": " + clip(p.Content)
	case Text:
		return "assistant: " + clip(p.Content)
	case ToolCall:
		return "assistant calls " + p.ToolName + "(" + clip(p.Args) + ")"
	case Thinking:
		return "thinking: " + clip(p.Content)
	case Opaque:
		return p.API + " " + p.Type + " (" + strconv.Itoa(len(p.Raw)) + " bytes)"
	}
	return partKind(p)
}

// Preview returns s as a one-line preview for people: runs of white space
// folded to one space, cut to width characters followed by "…" when
// longer; width <= 0 means no cut. It never splits a rune. To shorten a
// text for a model, keeping its head and its tail, see summary.Clip.
func Preview(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	n := 0
	for i := range s {
		if n == width {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
