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

// Trimmer is the tool-return trimmer. It holds no state besides its
// options and is safe for concurrent use.
//
// Process walks every message except the last KeepLast and replaces each
// tool return whose content is longer than MaxChars characters by a text
// tool return with the same tool name and call ID whose content is:
//
//	<head of the content>
//	[... N bytes trimmed by abridge ...]
//	<tail of the content>
//
// The head and tail are whole characters (runes are never split); the tail
// takes a quarter of the characters kept, the head the rest. N counts the
// removed bytes of the content as sent (UTF-8), and the whole result,
// note included, is at most MaxChars characters long, so a trimmed return
// is never trimmed again. Structured (JSON) content is measured and trimmed
// as its serialized bytes, multi-part content as its parts joined by
// newlines. Other parts and messages are left as they are.
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
// shares every unchanged message with history, which is never modified. It
// does not wait and does not look at ctx. An empty history is an error
// ([processor.ErrEmptyHistory]).
func (t *Trimmer) Process(_ context.Context, history []processor.Message) ([]processor.Message, error) {
	if len(history) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	if t.maxChars < 0 {
		return history, nil
	}
	var out []processor.Message // nil until a message changes
	for i, end := 0, len(history)-t.keepLast; i < end; i++ {
		m, changed := t.trimMessage(history[i])
		if !changed {
			continue
		}
		if out == nil {
			out = make([]processor.Message, len(history))
			copy(out, history)
		}
		out[i] = m
	}
	if out == nil {
		return history, nil
	}
	return out, nil
}

// trimMessage returns m with its long tool returns trimmed, and whether it
// changed anything. The parts slice is copied only when a part changes.
func (t *Trimmer) trimMessage(m processor.Message) (processor.Message, bool) {
	if m.Kind != processor.Request {
		return m, false
	}
	var parts []processor.Part // nil until a part changes
	for j, p := range m.Parts {
		r, ok := p.(processor.ToolReturn)
		if !ok {
			continue
		}
		content, ok := t.trimReturn(r)
		if !ok {
			continue
		}
		if parts == nil {
			parts = make([]processor.Part, len(m.Parts))
			copy(parts, m.Parts)
		}
		parts[j] = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: content}
	}
	if parts == nil {
		return m, false
	}
	m.Parts = parts
	return m, true
}

// trimReturn returns the trimmed content of r, and false when r fits.
func (t *Trimmer) trimReturn(r processor.ToolReturn) (string, bool) {
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

// Trim returns s cut down to at most maxChars characters, keeping its head
// and tail around a note that says how many bytes were removed, and true;
// or "" and false when s already fits. It never splits a rune. maxChars
// below [MinMaxChars] is raised to it.
func Trim(s string, maxChars int) (string, bool) {
	maxChars = max(maxChars, MinMaxChars)
	if len(s) <= maxChars {
		return "", false // a character is at least one byte
	}
	if _, ok := runeOffset(s, maxChars+1); !ok {
		return "", false
	}
	// The note's length depends on the number it carries; sizing it with
	// len(s) (an upper bound of the bytes removed) keeps the result within
	// maxChars whatever the exact count turns out to be.
	keep := maxChars - noteLen(len(s))
	tailRunes := keep / 4
	headEnd, _ := runeOffset(s, keep-tailRunes)
	tailStart := max(tailOffset(s, tailRunes), headEnd)
	removed := tailStart - headEnd
	b := make([]byte, 0, headEnd+noteLen(removed)+len(s)-tailStart)
	b = append(b, s[:headEnd]...)
	b = appendNote(b, removed)
	b = append(b, s[tailStart:]...)
	return string(b), true
}

const (
	notePrefix = "\n[... "
	noteSuffix = " bytes trimmed by abridge ...]\n"
)

// noteLen returns the length of the note for n removed bytes.
func noteLen(n int) int {
	digits := 1
	for ; n >= 10; n /= 10 {
		digits++
	}
	return len(notePrefix) + digits + len(noteSuffix)
}

func appendNote(b []byte, n int) []byte {
	b = append(b, notePrefix...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, noteSuffix...)
}

// runeOffset returns the byte offset in s right after its first n runes,
// and false when s has fewer than n runes. Runes are counted as
// utf8.DecodeRuneInString decodes them (an invalid byte counts as one).
func runeOffset(s string, n int) (int, bool) {
	i := 0
	for n > 0 {
		// Skip ASCII eight bytes at a time.
		for n >= 8 && i+8 <= len(s) && isASCII8(s[i:i+8]) {
			i += 8
			n -= 8
		}
		if n == 0 {
			break
		}
		if i >= len(s) {
			return i, false
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		n--
	}
	return i, true
}

// tailOffset returns the byte offset in s where its last n runes begin (0
// when s has n runes or fewer).
func tailOffset(s string, n int) int {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		if s[i-1] < utf8.RuneSelf {
			i--
			continue
		}
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return i
}

func isASCII8(s string) bool {
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return w&0x8080808080808080 == 0
}
