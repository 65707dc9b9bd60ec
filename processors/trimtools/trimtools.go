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
	"bytes"
	"context"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// holds it and however it was built; it is safe for concurrent use. It
// remembers the last return it trimmed for each tool call ID (up to
// [MemoBytes] of their contents), so that the old returns an agent sends
// again with every request are compared with what they were, not trimmed
// anew, and are replaced by the very same part each time.
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

	mu    sync.Mutex
	memo  map[string]*trimmed // by tool call ID
	bytes int                 // the contents the memo holds, in bytes
}

// trimmed is a tool return and the part that replaces it.
type trimmed struct {
	in  processor.ToolReturn
	out processor.Part
	// matches counts the returns found the same as in. At the 1st, 2nd,
	// 4th, 8th… the entry takes the return found as its in: strings that
	// share their bytes compare without reading them, and a history
	// decoded anew (by a cache that evicted it, or another one) shares
	// none with in, so each comparison would read the whole output until
	// the entry adopts the new strings, after at most as many matches as
	// came before.
	matches atomic.Uint64
}

// MemoBytes bounds the contents of the tool returns a [Trimmer] remembers
// having trimmed; past it, it forgets them all.
const MemoBytes = 16 << 20

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
	if !ok || !t.long(&r) {
		return nil, false
	}
	t.mu.Lock()
	e, ok := t.memo[r.ToolCallID]
	t.mu.Unlock()
	if ok && sameReturn(&e.in, &r) {
		if n := e.matches.Add(1); n&(n-1) == 0 {
			a := &trimmed{in: r, out: e.out}
			a.matches.Store(n)
			t.mu.Lock()
			if t.memo[r.ToolCallID] == e {
				t.memo[r.ToolCallID] = a
			}
			t.mu.Unlock()
		}
		return e.out, true
	}
	content, ok := t.trimReturn(&r)
	if !ok {
		return nil, false
	}
	var out processor.Part = processor.ToolReturn{ToolName: r.ToolName, ToolCallID: r.ToolCallID, Content: content}
	size := len(r.Content) + len(r.JSON) + len(content)
	for _, c := range r.Contents {
		size += len(c)
	}
	t.mu.Lock()
	if t.memo == nil || t.bytes+size > MemoBytes {
		t.memo, t.bytes = map[string]*trimmed{}, 0
	}
	t.memo[r.ToolCallID] = &trimmed{in: r, out: out}
	t.bytes += size
	t.mu.Unlock()
	return out, true
}

// long reports whether r's content is longer than the cap in bytes: one
// that is not fits, and is neither looked up nor trimmed.
func (t *Trimmer) long(r *processor.ToolReturn) bool {
	switch {
	case r.JSON != nil:
		return len(r.JSON) > t.maxChars
	case r.Contents != nil:
		n := 0
		for _, c := range r.Contents {
			n += len(c) + 1
		}
		return n-1 > t.maxChars
	}
	return len(r.Content) > t.maxChars
}

// sameReturn reports whether a and b are the same tool return, field by
// field (strings that share their bytes compare without reading them).
func sameReturn(a, b *processor.ToolReturn) bool {
	return a.ToolName == b.ToolName && a.ToolCallID == b.ToolCallID && a.Content == b.Content &&
		(a.JSON == nil) == (b.JSON == nil) && bytes.Equal(a.JSON, b.JSON) &&
		(a.Contents == nil) == (b.Contents == nil) && slices.Equal(a.Contents, b.Contents)
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

const hiBits = 0x8080808080808080

// exceeds reports whether s has more than n characters, counted as
// utf8.DecodeRuneInString decodes them (an invalid byte counts as one).
// Every byte that is not a UTF-8 continuation byte starts a character, so
// counting those, eight bytes at a time, gives a lower bound that settles
// almost every case long before the end of s; only a text within the limit
// that holds invalid UTF-8 needs an exact count.
func exceeds(s string, n int) bool {
	switch {
	case len(s) <= n:
		return false // a character is at least one byte
	case len(s)/utf8.UTFMax > n:
		return true // and at most four
	}
	starts, i := 0, 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s[i:])
		starts += 8 - bits.OnesCount64(w&^(w<<1)&hiBits) // bytes 10xxxxxx
		if starts > n {
			return true
		}
	}
	for ; i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			starts++
		}
	}
	if starts > n {
		return true
	}
	if utf8.ValidString(s) {
		return false
	}
	return utf8.RuneCountInString(s) > n
}

func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
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
