package window

import (
	"strings"

	"github.com/abridge-go/abridge/processor"
)

// Prefix is the first line of every summary marker. It is what
// [ParseMarker] recognises, so a marker read back from OpenAI JSON (a plain
// user message) is still known for what it is.
const Prefix = "[abridge: summary of the earlier conversation]"

// handoff follows Prefix and frames the summary for the model.
const handoff = "The messages that were here have been condensed into the summary below to save context. " +
	"The assistant was in the middle of this work: treat the summary as its memory of what happened, " +
	"continue from where it stopped, and do not redo steps it reports as done."

// Marker returns the request that stands in for compacted messages: one
// user prompt made of [Prefix], a hand-off sentence, a blank line and the
// summary.
func Marker(summary string) processor.Message {
	return processor.UserMessage(Prefix + "\n" + handoff + "\n\n" + strings.TrimSpace(summary))
}

// ParseMarker reports whether m is a marker built by [Marker] (also after
// a round trip through OpenAI JSON) and returns its summary.
func ParseMarker(m processor.Message) (summary string, ok bool) {
	text, ok := markerText(m)
	if !ok || !strings.HasPrefix(text, Prefix) {
		return "", false
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, found := strings.CutPrefix(text, Prefix+"\n")
	if !found {
		return "", rest == Prefix
	}
	if s, found := strings.CutPrefix(rest, handoff+"\n\n"); found {
		return s, true
	}
	// A marker whose framing sentence changed: the summary follows the
	// first blank line.
	if _, s, found := strings.Cut(rest, "\n\n"); found {
		return s, true
	}
	return rest, true
}

// markerText returns the text of m when m has the form of a marker: a
// request holding one user prompt, of plain text or of one text part.
func markerText(m processor.Message) (string, bool) {
	if m.Kind != processor.Request || len(m.Parts) != 1 {
		return "", false
	}
	u, isUser := m.Parts[0].(processor.UserPrompt)
	if !isUser {
		return "", false
	}
	if u.Contents == nil {
		return u.Content, true
	}
	if len(u.Contents) != 1 || u.Contents[0].Type != "text" {
		return "", false
	}
	return u.Contents[0].Text, true
}

// isMarker reports whether m is a summary marker, as ParseMarker tells,
// from the start of its text alone: [Prefix], then the end of the text or
// a line break (CRLF too).
func isMarker(m processor.Message) bool {
	text, ok := markerText(m)
	if !ok {
		return false
	}
	rest, found := strings.CutPrefix(text, Prefix)
	return found && (rest == "" || rest[0] == '\n' || strings.HasPrefix(rest, "\r\n"))
}
