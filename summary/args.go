package summary

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
)

// argKind is the JSON type of an argument value.
type argKind uint8

const (
	argNull argKind = iota
	argString
	argNumber
	argBool
	argArray
	argObject
)

// argValue is a JSON value as decodeArgs reads it: what encoding/json
// decodes into an any, without reflection, and with a string left in place
// (no copy) when it needs no unescaping.
type argValue struct {
	kind    argKind
	s       string // a string's value; a number's literal
	b       bool
	elems   []argValue  // an array's
	members []argMember // an object's, by key, each key once (the last wins)
}

// argMember is a member of a JSON object.
type argMember struct {
	key string
	val argValue
}

// maxArgDepth is how deep values may nest, as for encoding/json.
const maxArgDepth = 10000

// decodeArgs decodes a tool call's arguments in one pass, without
// reflection: the members of the JSON object they hold, sorted by key,
// each key once (its last value), as encoding/json decodes them into a
// map[string]any. It reports false when encoding/json would give no map:
// the text is not valid JSON, is not an object, or holds a number beyond
// float64.
func decodeArgs(raw string) ([]argMember, bool) {
	return decodeArgsIn(raw, &argScratch{})
}

// argScratch is where decodeArgsIn keeps the members of the objects it
// reads: each object's members are gathered on stack, then copied to the
// end of arena, the object's slice of it (capped at its length), so that
// the objects of many calls take a few allocations between them.
type argScratch struct {
	stack, arena []argMember
}

// release empties x, which then holds no value it read; a list grown past
// scratchMax members is dropped, so that a pooled scratch holds no huge one.
func (x *argScratch) release() {
	clear(x.stack[:cap(x.stack)])
	clear(x.arena[:cap(x.arena)])
	x.stack, x.arena = x.stack[:0], x.arena[:0]
	if cap(x.stack) > scratchMax {
		x.stack = nil
	}
	if cap(x.arena) > scratchMax {
		x.arena = nil
	}
}

// decodeArgsIn is decodeArgs, its objects' members kept in x.
func decodeArgsIn(raw string, x *argScratch) ([]argMember, bool) {
	d := argDecoder{s: raw, x: x}
	x.stack = x.stack[:0]
	d.space()
	if !d.more() || d.s[d.i] != '{' {
		return nil, false
	}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	if d.more() {
		return nil, false
	}
	return v.members, true
}

type argDecoder struct {
	s string
	i int
	x *argScratch
}

func (d *argDecoder) more() bool { return d.i < len(d.s) }

func (d *argDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *argDecoder) value(depth int) (argValue, bool) {
	d.space()
	if !d.more() {
		return argValue{}, false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		return argValue{kind: argString, s: s}, ok
	case c == 't':
		return argValue{kind: argBool, b: true}, d.literal("true")
	case c == 'f':
		return argValue{kind: argBool}, d.literal("false")
	case c == 'n':
		return argValue{}, d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return argValue{}, false
}

func (d *argDecoder) literal(lit string) bool {
	if !strings.HasPrefix(d.s[d.i:], lit) {
		return false
	}
	d.i += len(lit)
	return true
}

func (d *argDecoder) object(depth int) (argValue, bool) {
	if depth > maxArgDepth {
		return argValue{}, false
	}
	d.i++ // {
	v := argValue{kind: argObject}
	d.space()
	if d.more() && d.s[d.i] == '}' {
		d.i++
		return v, true
	}
	sorted := true
	base := len(d.x.stack) // this object's members are d.x.stack[base:]
	for {
		d.space()
		if !d.more() || d.s[d.i] != '"' {
			return argValue{}, false
		}
		k, ok := d.str()
		if !ok {
			return argValue{}, false
		}
		d.space()
		if !d.more() || d.s[d.i] != ':' {
			return argValue{}, false
		}
		d.i++
		e, ok := d.value(depth)
		if !ok {
			return argValue{}, false
		}
		if n := len(d.x.stack); n > base && d.x.stack[n-1].key >= k {
			sorted = false
		}
		d.x.stack = append(d.x.stack, argMember{k, e})
		d.space()
		if !d.more() {
			return argValue{}, false
		}
		c := d.s[d.i]
		d.i++
		if c == '}' {
			break
		}
		if c != ',' {
			return argValue{}, false
		}
	}
	members := d.x.stack[base:]
	if !sorted {
		// Sort stably by key, then keep each key's last value.
		slices.SortStableFunc(members, func(a, b argMember) int { return strings.Compare(a.key, b.key) })
		out := members[:0]
		for i, m := range members {
			if i+1 < len(members) && members[i+1].key == m.key {
				continue
			}
			out = append(out, m)
		}
		members = out
	}
	a := len(d.x.arena)
	d.x.arena = append(d.x.arena, members...)
	v.members = d.x.arena[a:len(d.x.arena):len(d.x.arena)]
	clear(d.x.stack[base:])
	d.x.stack = d.x.stack[:base]
	return v, true
}

func (d *argDecoder) array(depth int) (argValue, bool) {
	if depth > maxArgDepth {
		return argValue{}, false
	}
	d.i++ // [
	v := argValue{kind: argArray}
	d.space()
	if d.more() && d.s[d.i] == ']' {
		d.i++
		return v, true
	}
	for {
		e, ok := d.value(depth)
		if !ok {
			return argValue{}, false
		}
		v.elems = append(v.elems, e)
		d.space()
		if !d.more() {
			return argValue{}, false
		}
		c := d.s[d.i]
		d.i++
		if c == ']' {
			return v, true
		}
		if c != ',' {
			return argValue{}, false
		}
	}
}

// number reads a number, which must fit a float64.
func (d *argDecoder) number() (argValue, bool) {
	s, start := d.s, d.i
	i := start
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return argValue{}, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return argValue{}, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return argValue{}, false
		}
	}
	d.i = i
	lit := s[start:i]
	if _, err := strconv.ParseFloat(lit, 64); err != nil {
		return argValue{}, false
	}
	return argValue{kind: argNumber, s: lit}, true
}

// str reads a string, unescaped as encoding/json does it (invalid UTF-8
// and lone surrogates become U+FFFD); one that needs nothing is returned
// in place.
func (d *argDecoder) str() (string, bool) {
	s := d.s
	start := d.i + 1
	i := start
	ascii := true
	// The plain ASCII runs are passed over 8 bytes at a time.
	for i = nextSpecial(s, i); i < len(s); i = nextSpecial(s, i+1) {
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			v := s[start:i]
			if !ascii && !utf8.ValidString(v) {
				return d.unquote(start) // each invalid byte becomes U+FFFD
			}
			return v, true
		case c == '\\':
			return d.unquote(start)
		case c < 0x20:
			return "", false
		default: // a byte of a multi-byte character
			ascii = false
		}
	}
	return "", false
}

// unquote reads the string starting at start (after its quote) that holds
// an escape.
func (d *argDecoder) unquote(start int) (string, bool) {
	s := d.s
	// The text up to the closing quote bounds the value's length: the
	// first quote after an even run of backslashes (found with IndexByte,
	// faster than stopping at each escape; the bound only sizes b).
	end := start
	for {
		q := strings.IndexByte(s[end:], '"')
		if q < 0 {
			end = len(s)
			break
		}
		end += q
		k := end
		for k > start && s[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			break
		}
		end++
	}
	var b strings.Builder
	b.Grow(end - start)
	i := start
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			d.i = i + 1
			return b.String(), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if i+1 >= len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < utf8.RuneSelf:
			// A run of plain ASCII bytes, copied at once.
			j := nextSpecial(s, i+1)
			b.WriteString(s[i:j])
			i = j
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
		}
	}
	return "", false
}

// hex4 reads the 4 hexadecimal digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// walkArgStrings calls fn with every string value in v, in the order of
// the object keys (sorted) and array elements.
func walkArgStrings(v *argValue, fn func(string)) {
	switch v.kind {
	case argString:
		fn(v.s)
	case argArray:
		for i := range v.elems {
			walkArgStrings(&v.elems[i], fn)
		}
	case argObject:
		for i := range v.members {
			walkArgStrings(&v.members[i].val, fn)
		}
	}
}

// argGet returns the value of key k in args (sorted by key).
func argGet(args []argMember, k string) (*argValue, bool) {
	if i, ok := argIndex(args, k); ok {
		return &args[i].val, true
	}
	return nil, false
}

// argIndex returns the index of key k in args (sorted by key).
func argIndex(args []argMember, k string) (int, bool) {
	if len(args) <= 8 {
		// Few members (most calls): comparing each beats the search.
		for i := range args {
			if args[i].key == k {
				return i, true
			}
		}
		return 0, false
	}
	return slices.BinarySearchFunc(args, k, func(m argMember, k string) int { return strings.Compare(m.key, k) })
}

// argStr returns the string value of key k in args, if it has one.
func argStr(args []argMember, k string) (string, bool) {
	if v, ok := argGet(args, k); ok && v.kind == argString {
		return v.s, true
	}
	return "", false
}

// writtenByDecoded is writtenByArgs for arguments decodeArgs read (ok:
// they are a JSON object): it appends to out the paths a tool call writes,
// its shell commands read by sh.
func writtenByDecoded(out []string, sh *shellWriter, c processor.ToolCall, args []argMember, ok bool) []string {
	if !ok {
		return append(out, writtenByArgs(c, nil)...)
	}
	if writesDecoded(strings.ToLower(c.ToolName), args) {
		for _, k := range pathKeys {
			if s, ok := argStr(args, k); ok {
				out = append(out, s)
			}
		}
		if edits, ok := argGet(args, "edits"); ok && edits.kind == argArray {
			for _, e := range edits.elems {
				if e.kind != argObject {
					continue
				}
				for _, k := range pathKeys {
					if s, ok := argStr(e.members, k); ok {
						out = append(out, s)
					}
				}
			}
		}
	}
	for _, m := range args {
		if m.val.kind == argString && hasPatchMarker(m.val.s) {
			out = append(out, patchPaths(m.val.s)...)
		}
	}
	for _, k := range commandKeys {
		if s, ok := argStr(args, k); ok && shellMayWrite(s) {
			out = sh.appendWritten(out, s)
		}
	}
	return out
}

// hasPatchMarker reports whether s holds "*** Add File:", "*** Update
// File:" or "\n+++ ", or starts with "+++ " or "--- ": what makes
// writtenByArgs read s as a patch. It looks for "*** " and "+++ " (their
// first bytes are rare, where a line break is not), then at what is
// around them.
func hasPatchMarker(s string) bool {
	if strings.HasPrefix(s, "+++ ") || strings.HasPrefix(s, "--- ") {
		return true
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "*** ")
		if j < 0 {
			break
		}
		i += j + len("*** ")
		if strings.HasPrefix(s[i:], "Add File:") || strings.HasPrefix(s[i:], "Update File:") {
			return true
		}
	}
	for i := 1; i < len(s); {
		j := strings.Index(s[i:], "+++ ")
		if j < 0 {
			break
		}
		if i += j; s[i-1] == '\n' {
			return true
		}
		i++
	}
	return false
}

// writesDecoded is writesFiles for arguments decodeArgs read.
func writesDecoded(name string, args []argMember) bool {
	if cmd, ok := argStr(args, "command"); ok {
		switch cmd {
		case "create", "str_replace", "insert", "undo_edit", "write", "edit", "append", "replace":
			return true
		case "view", "read":
			return false
		}
	}
	for _, w := range writeWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// SWAR constants: a byte of ones, and each byte's high bit.
const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// load8 returns the 8 bytes of s at i (at least 8 left) as a little-endian
// word.
func load8(s string, i int) uint64 {
	w := s[i : i+8] // one bounds check, not one a byte
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// swarZero flags, by its high bit, each zero byte of v; the lowest flag
// is exact (a borrow runs only toward higher bytes).
func swarZero(v uint64) uint64 { return (v - swarOnes) &^ v & swarHigh }

// nextSpecial returns the index of the first byte of s at or after i that
// a JSON string's plain ASCII run ends at: '"', '\\', a control byte or a
// byte of a multi-byte character; len(s) when there is none.
func nextSpecial(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := load8(s, i)
		// Control bytes: below 0x20 (x & high is kept apart: a byte of 0x80
		// or more is special anyway, and masks the test's own false flags).
		ctl := (x - swarOnes*0x20) &^ x & swarHigh
		if hit := swarZero(x^(swarOnes*'"')) | swarZero(x^(swarOnes*'\\')) | ctl | x&swarHigh; hit != 0 {
			return i + bits.TrailingZeros64(hit)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
	}
	return len(s)
}
