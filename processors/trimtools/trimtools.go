// Package trimtools provides abridge's tool-return trimmer: a synchronous
// processor, with no I/O, that caps the content of old tool returns so that
// long command outputs, file listings and API payloads stop filling the
// context window once the model has moved past them. The most recent
// messages (the current turn) are never touched, and trimming depends only on
// a message and its distance from the end of the history, so a message once
// trimmed is byte-identical on every later request and the provider's prompt
// cache stays valid.
package trimtools

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// DefaultMaxChars is the cap on a tool return's content, in characters,
// used when [Options.MaxChars] is 0.
const DefaultMaxChars = 2000

// DefaultKeepLast is the number of messages at the end of the history that
// are never trimmed, used when [Options.KeepLast] is 0.
const DefaultKeepLast = 2

// MinMaxChars is the smallest effective cap. A smaller positive
// [Options.MaxChars] is raised to it, so that a trimmed content, note
// included, always fits the cap (which is what makes trimming idempotent).
const MinMaxChars = 100

// Options configures a [Trimmer]. The zero value means all defaults.
type Options struct {
	// MaxChars caps a tool return's content, in characters (Unicode code
	// points); 0 means the default 2000 ([DefaultMaxChars]); a negative
	// value disables trimming. Values between 1 and [MinMaxChars] are
	// raised to MinMaxChars.
	MaxChars int
	// KeepLast is how many messages at the end of the history are never
	// trimmed; 0 means the default 2 ([DefaultKeepLast]). A negative value
	// means 1: the request about to be sent is never altered.
	KeepLast int
}

// Trimmer is the tool-return trimmer. What it returns depends on its
// input alone, so it gives the same result for the same history whoever
// holds it and however it was built; it keeps no state and is safe for
// concurrent use.
//
// Process walks every message except the last KeepLast and replaces each
// tool return whose content is longer than MaxChars characters by a text
// tool return with the same tool name and call ID whose content is:
//
//	<head of the content>
//	[... N bytes trimmed by abridge ...]
//	<tail of the content>
//
// The head and tail are whole characters (runes are never split) and,
// where a line ends within an eighth of the budget of the cut, whole lines;
// the tail takes about a quarter of the bytes kept, the head the rest. N
// counts the removed bytes of the content as sent (UTF-8). The whole
// result, note included, is at most MaxChars bytes long, hence at most
// MaxChars characters, so a trimmed return is never trimmed again and costs
// nothing to check on later requests. Structured (JSON) content is measured
// and trimmed as its serialized bytes, multi-part content as its parts
// joined by newlines; either way the trimmed return holds plain text. Other
// parts and messages are left as they are.
type Trimmer struct {
	maxChars int
	keepLast int
}

var _ processor.Processor = (*Trimmer)(nil)

// New returns a Trimmer with the given options.
func New(opts Options) *Trimmer {
	t := &Trimmer{maxChars: opts.MaxChars, keepLast: opts.KeepLast}
	switch {
	case t.maxChars == 0:
		t.maxChars = DefaultMaxChars
	case t.maxChars > 0 && t.maxChars < MinMaxChars:
		t.maxChars = MinMaxChars
	}
	switch {
	case t.keepLast == 0:
		t.keepLast = DefaultKeepLast
	case t.keepLast < 0:
		t.keepLast = 1
	}
	return t
}

// MaxChars returns the effective cap in characters, or a negative number
// when trimming is disabled.
func (t *Trimmer) MaxChars() int { return t.maxChars }

// KeepLast returns the effective number of messages kept untouched at the
// end of the history.
func (t *Trimmer) KeepLast() int { return t.keepLast }

// Process returns history with old, long tool returns trimmed. When nothing
// needs trimming it returns history itself; otherwise a new slice that
// shares every unchanged message with history, which is never modified.
// Either way the result is the caller's: the Trimmer keeps nothing of it.
// It does not wait and does not look at ctx. An empty history is an error
// ([processor.ErrEmptyHistory]).
func (t *Trimmer) Process(_ context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if t.maxChars < 0 {
		return history, nil
	}
	edit := processor.EditHistory(history)
	for i, end := 0, len(history)-t.keepLast; i < end; i++ {
		if history[i].Kind != processor.Request {
			continue
		}
		if m, changed := processor.MapParts(history[i], t.trimPart); changed {
			edit.Set(i, m)
		}
	}
	return edit.History(), nil
}

// trimPart returns the trimmed replacement of p, a long tool return, and
// false when p is another part or fits.
func (t *Trimmer) trimPart(p processor.Part) (processor.Part, bool) {
	r, ok := p.(processor.ToolReturn)
	if !ok {
		return nil, false
	}
	content, ok := t.trimReturn(&r)
	if !ok {
		return nil, false
	}
	return processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: content}, true
}

// trimReturn returns the trimmed content of r, and false when r fits.
func (t *Trimmer) trimReturn(r *processor.ToolReturn) (string, bool) {
	switch {
	case r.JSON != nil:
		if len(r.JSON) <= t.maxChars {
			return "", false
		}
		return Trim(string(r.JSON), t.maxChars)
	case r.Contents != nil:
		n := 0
		for _, c := range r.Contents {
			n += len(c) + 1
		}
		if n-1 <= t.maxChars {
			return "", false
		}
		return Trim(r.ToolReturnContent(), t.maxChars)
	}
	return Trim(r.Content, t.maxChars)
}

// Trim returns s cut down to fit maxChars characters, keeping its head and
// tail around a note that says how many bytes were removed, and true; or ""
// and false when s already fits. The result, note included, is at most
// maxChars bytes long (so at most maxChars characters): a trimmed text is
// never trimmed again, and checking that costs nothing on later requests.
// It never splits a rune. maxChars below [MinMaxChars] is raised to it.
func Trim(s string, maxChars int) (string, bool) {
	maxChars = max(maxChars, MinMaxChars)
	if !exceeds(s, maxChars) {
		return "", false
	}
	// The note's length depends on the number it carries; sizing it with
	// len(s) (an upper bound of the bytes removed) keeps the result within
	// maxChars whatever the exact count turns out to be.
	budget := maxChars - noteLen(len(s))
	tail := budget / 4
	headEnd := boundaryBefore(s, budget-tail)
	tailStart := max(boundaryAfter(s, len(s)-tail), headEnd)
	// Cut at line ends when one is near: whole lines read better, and
	// the result only gets shorter. The note's own newlines stand for the
	// ones cut at.
	near := budget / 8
	if k := strings.LastIndexByte(s[headEnd-min(near, headEnd):headEnd], '\n'); k >= 0 {
		headEnd = headEnd - min(near, headEnd) + k
	}
	if k := strings.IndexByte(s[tailStart:tailStart+min(near, len(s)-tailStart)], '\n'); k >= 0 {
		tailStart += k + 1
	}
	removed := tailStart - headEnd
	var b strings.Builder
	b.Grow(headEnd + noteLen(removed) + len(s) - tailStart)
	b.WriteString(s[:headEnd])
	b.WriteString(notePrefix)
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], int64(removed), 10))
	b.WriteString(noteSuffix)
	b.WriteString(s[tailStart:])
	return b.String(), true
}

const (
	notePrefix = "\n[... "
	noteSuffix = " bytes trimmed by abridge ...]\n"
)

// IsTrimmed reports whether s holds the note [Trim] leaves where it cut:
// s is, or contains, a trimmed text.
func IsTrimmed(s string) bool {
	return strings.Contains(s, noteSuffix[:len(noteSuffix)-1])
}

// noteLen returns the length of the note for n removed bytes.
func noteLen(n int) int {
	digits := 1
	for ; n >= 10; n /= 10 {
		digits++
	}
	return len(notePrefix) + digits + len(noteSuffix)
}

// exceeds reports whether s has more than n characters, counted as
// utf8.DecodeRuneInString decodes them (an invalid byte counts as one).
func exceeds(s string, n int) bool {
	switch {
	case len(s) <= n:
		return false // a character is at least one byte
	case len(s)/utf8.UTFMax > n:
		return true // and at most four
	}
	return utf8.RuneCountInString(s) > n
}

// boundaryBefore returns the last character boundary of s at or before
// byte p.
func boundaryBefore(s string, p int) int {
	if p >= len(s) {
		return len(s)
	}
	// A non-continuation byte always starts a character; the character
	// holding p starts at most three bytes before it.
	for j := p; j >= 0 && j > p-utf8.UTFMax; j-- {
		if utf8.RuneStart(s[j]) {
			if _, size := utf8.DecodeRuneInString(s[j:]); j+size > p {
				return j
			}
			return p // p is a stray continuation byte: a character of its own
		}
	}
	return p
}

// boundaryAfter returns the first character boundary of s at or after
// byte p.
func boundaryAfter(s string, p int) int {
	b := boundaryBefore(s, p)
	if b == p {
		return p
	}
	_, size := utf8.DecodeRuneInString(s[b:])
	return b + size
}
