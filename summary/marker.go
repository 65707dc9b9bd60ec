package summary

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// Prefix is the first line of every summary marker.
const Prefix = "[abridge: summary of the earlier conversation]"

// handoff follows Prefix and frames the summary for the model.
const handoff = "The messages that were here have been condensed into the summary below to save context. " +
	"The assistant was in the middle of this work: treat the summary as its memory of what happened, " +
	"continue from where it stopped, and do not redo steps it reports as done."

// refLabel starts the marker's reference line.
const refLabel = "Reference: "

// refPrefix starts every marker reference.
const refPrefix = "sum-"

// Marker returns the request that stands in for compacted messages: one
// user prompt made of [Prefix], a hand-off sentence, a line naming the
// summary's reference (see [Ref]), a blank line and the summary (white
// space trimmed, line ends made "\n", NUL bytes and invalid UTF-8 made
// U+FFFD).
func Marker(summary string) processor.Message {
	text, _, _ := MarkerRef(summary)
	return processor.UserMessage(text)
}

// MarkerRef returns the text of [Marker] of summary with the summary as
// the marker holds it (normalized) and its [Ref], the summary hashed once:
// what [ParseMarker] returns for the marker.
func MarkerRef(summary string) (text, normalized, ref string) {
	s := normalize(summary)
	ref = refNormalized(s)
	return Prefix + "\n" + handoff + "\n" + refLabel + ref + "\n\n" + s, s, ref
}

// Ref returns the reference of a summary text: "sum-" and the first 20
// hexadecimal digits of the SHA-256 of the summary (white space trimmed,
// line ends made "\n"). A marker carries the reference of its summary, so
// a store can tell a marker it wrote from a text that only looks like one,
// and find what the summary covered.
func Ref(summary string) string {
	return refNormalized(normalize(summary))
}

// refNormalized is Ref of a summary already normalized.
func refNormalized(s string) string {
	sum := sha256.Sum256([]byte(s))
	return refPrefix + hex.EncodeToString(sum[:10])
}

// normalize trims white space, makes line ends "\n", and makes NUL bytes
// and invalid UTF-8 U+FFFD, byte by byte: as JSON carries the text and as
// every database stores it (PostgreSQL refuses NUL in text).
func normalize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == 0 {
			return utf8.RuneError
		}
		return r
	}, s)
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

// normalized reports whether s is as normalize leaves it: valid UTF-8
// without NUL bytes or "\r\n", and no white space at either end. It
// reads s without copying it (a marker is parsed before every request).
func normalized(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.Contains(s, "\r\n") && strings.TrimSpace(s) == s
}

// ParseMarker reports whether m is a marker built by [Marker] (also after
// a round trip through OpenAI JSON, which may turn its text into one text
// part or its line ends into "\r\n"), and returns its summary and
// reference. The framing must be exact and the reference must be the
// summary's own: a user message that merely starts with [Prefix], or a
// marker whose summary was edited, is not a marker. Whether abridge itself
// wrote it is for the reader to check against what it stored under the
// reference (the window does).
func ParseMarker(m processor.Message) (summary, ref string, ok bool) {
	text, ok := markerText(m)
	if !ok || !strings.HasPrefix(text, Prefix) {
		return "", "", false
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, found := strings.CutPrefix(text, Prefix+"\n"+handoff+"\n"+refLabel)
	if !found {
		return "", "", false
	}
	ref, s, found := strings.Cut(rest, "\n\n")
	if !found || !normalized(s) || refNormalized(s) != ref {
		return "", "", false
	}
	return s, ref, true
}

// IsMarker reports whether m is a marker, as [ParseMarker] tells.
func IsMarker(m processor.Message) bool {
	_, _, ok := ParseMarker(m)
	return ok
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
