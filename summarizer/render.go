package summarizer

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// DefaultClipChars is the per-message clip [LLM] applies before sending a
// transcript when [Options.ClipChars] is 0.
const DefaultClipChars = 4000

// Render returns the role-labelled transcript of messages that [LLM] sends
// to its model: one block per part, numbered by message, labelled "system",
// "user", "assistant", "tool call NAME (ID)", "tool result NAME (ID)" or
// "retry NAME (ID)". Thinking parts are left out. Each part's text longer
// than clipChars is clipped, keeping its head and tail and noting how many
// characters were cut; clipChars <= 0 means no clipping.
func Render(messages []processor.Message, clipChars int) string {
	var b strings.Builder
	for i, m := range messages {
		renderMessage(&b, i+1, m, clipChars)
	}
	return b.String()
}

// renderMessage appends the blocks of message number n to b.
func renderMessage(b *strings.Builder, n int, m processor.Message, clipChars int) {
	block := func(label, text string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[")
		b.WriteString(strconv.Itoa(n))
		b.WriteString("] ")
		b.WriteString(label)
		b.WriteString(":\n")
		b.WriteString(clip(strings.TrimRight(text, "\n"), clipChars))
		b.WriteString("\n")
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.SystemPrompt:
			block("system", p.Content)
		case processor.UserPrompt:
			block("user", userText(p))
		case processor.ToolReturn:
			block("tool result "+p.ToolName+" ("+p.ToolCallID+")", p.ToolReturnContent())
		case processor.RetryPrompt:
			label := "retry"
			if p.ToolName != "" || p.ToolCallID != "" {
				label += " " + p.ToolName + " (" + p.ToolCallID + ")"
			}
			block(label, p.Content)
		case processor.Text:
			block("assistant", p.Content)
		case processor.ToolCall:
			block("tool call "+p.ToolName+" ("+p.ToolCallID+")", p.Args)
		}
	}
	if r := m.Refusal(); r != "" {
		block("assistant refused", r)
	}
}

// userText returns a user prompt's text, naming the non-text attachments of
// a multi-part prompt.
func userText(p processor.UserPrompt) string {
	if p.Contents == nil {
		return p.Content
	}
	var parts []string
	for _, c := range p.Contents {
		if c.Type == "text" {
			parts = append(parts, c.Text)
			continue
		}
		parts = append(parts, "[attachment: "+c.Type+"]")
	}
	return strings.Join(parts, "\n")
}

// clip shortens s to at most n bytes, keeping about two thirds from its
// head and one third from its tail around a note of how much was cut.
// Runes are never split. n <= 0 means no clipping.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	noteLen := len("\n[... ") + len(strconv.Itoa(len(s))) + len(" characters cut ...]\n")
	keep := n - noteLen
	if keep < 16 {
		return s[:runeFloor(s, n)]
	}
	headLen := runeFloor(s, keep*2/3)
	tailStart := runeCeil(s, len(s)-(keep-keep*2/3))
	return s[:headLen] + "\n[... " + strconv.Itoa(tailStart-headLen) + " characters cut ...]\n" + s[tailStart:]
}

// runeFloor returns the largest rune boundary of s at or below i.
func runeFloor(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeCeil returns the smallest rune boundary of s at or above i.
func runeCeil(s string, i int) int {
	if i <= 0 {
		return 0
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
