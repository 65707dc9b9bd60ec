package llm

import (
	"strconv"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
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
		b.WriteString(summary.Clip(strings.TrimRight(text, "\n"), clipChars))
		b.WriteString("\n")
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.SystemPrompt:
			block("system", p.Content)
		case processor.UserPrompt:
			block("user", summary.UserText(p))
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
