package summary

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// UserText returns a user prompt's text as a summary shows it: its plain
// text, or the parts of a multi-part prompt joined by newlines, each
// attachment named by its type ("[attachment: image_url]").
func UserText(p processor.UserPrompt) string {
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

// Clip shortens s to at most n bytes, keeping about two thirds from its
// head and one third from its tail around a note of how much was cut
// ("[... N characters cut ...]"). Runes are never split. n <= 0 means no
// clipping.
func Clip(s string, n int) string {
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

// Lines renders messages for a reader, the model reading back what a
// summary replaced among them: one line per part, "[N] " and the part as
// processor.Describe labels it, in full; N numbers the messages from 1.
func Lines(msgs []processor.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		for _, p := range m.Parts {
			b.WriteString("[")
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString("] ")
			b.WriteString(processor.Describe(p, 0))
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// ClipTexts returns m with each text longer than n bytes clipped to n
// (see [Clip]): the content of a tool return (structured or multi-part
// content as its text), an assistant's text and a plain user prompt. It
// reports whether anything was clipped; m is not changed (a clipped copy
// gets new parts). Other parts are left as they are, tool-call arguments
// included (they stay valid JSON). n <= 0 clips nothing.
func ClipTexts(m processor.Message, n int) (processor.Message, bool) {
	if n <= 0 {
		return m, false
	}
	var parts []processor.Part
	set := func(j int, p processor.Part) {
		if parts == nil {
			parts = slices.Clone(m.Parts)
		}
		parts[j] = p
	}
	for j, p := range m.Parts {
		switch p := p.(type) {
		case processor.ToolReturn:
			if c := p.ToolReturnContent(); len(c) > n {
				set(j, processor.ToolReturn{ToolName: p.ToolName, ToolCallID: p.ToolCallID, Content: Clip(c, n)})
			}
		case processor.Text:
			if len(p.Content) > n {
				set(j, processor.Text{Content: Clip(p.Content, n)})
			}
		case processor.UserPrompt:
			if len(p.Content) > n && p.Contents == nil {
				set(j, processor.UserPrompt{Content: Clip(p.Content, n), Name: p.Name})
			}
		case processor.RetryPrompt:
			if len(p.Content) > n {
				set(j, processor.RetryPrompt{ToolName: p.ToolName, ToolCallID: p.ToolCallID, Content: Clip(p.Content, n)})
			}
		}
	}
	if parts == nil {
		return m, false
	}
	m.Parts = parts
	return m, true
}

// collapse replaces runs of white space with one space, and trims it.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// argKeys are the argument names shown for a tool call, best first.
var argKeys = []string{"command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt"}

// KeyArg returns the most telling argument of a tool call's JSON
// arguments (a command, a path, a pattern, a query...; the whole arguments
// when none is found or they are no JSON object), white space collapsed,
// clipped to 120 bytes (see [Clip]).
func KeyArg(args string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return Clip(collapse(args), 120)
	}
	for _, k := range argKeys {
		if s, ok := m[k].(string); ok && s != "" {
			return Clip(collapse(s), 120)
		}
	}
	return Clip(collapse(args), 120)
}
