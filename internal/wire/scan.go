package wire

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks JSON text, checking it as it goes. It accepts exactly what
// encoding/json accepts (RFC 8259 JSON, strings of valid UTF-8), except
// that it refuses, by failing, some valid text it leaves to encoding/json:
// strings whose bytes are not valid UTF-8 (encoding/json replaces them),
// and \u escapes of surrogates. A failure is not an error of the text: the
// caller then reads it with encoding/json, which says what is wrong, if
// anything.
type scanner struct {
	data []byte
	pos  int
}

// ws skips white space.
func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// eat consumes c after white space.
func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.pos++
		return true
	}
	return false
}

// Byte masks for the eight-at-a-time string scan.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns, for eight bytes, a mask whose lowest set bit is the
// high bit of the first that ends a run of plain string bytes: a quote, a
// backslash or a control character (bytes of 0x80 and more are plain).
// Bits above the lowest may be set for plain bytes (a borrow); the lowest
// is exact.
func special(x uint64) uint64 {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	return ((quote-ones)&^quote | (slash-ones)&^slash | (x-ones*0x20)&^x) & highs
}

// str reads a string at pos (after white space) and returns its bytes
// without the quotes, whether they hold escapes, and whether it was read.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start := s.pos
	d := s.data
	var high uint64 // the bytes seen, OR-ed: its high bits tell of non-ASCII
	for {
		for s.pos+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[s.pos:])
			if m := special(x); m != 0 {
				n := bits.TrailingZeros64(m) >> 3
				high |= x & (1<<(8*n) - 1)
				s.pos += n
				break
			}
			high |= x
			s.pos += 8
		}
		if s.pos >= len(d) {
			return nil, false, false
		}
		c := d[s.pos]
		switch {
		case c == '"':
			raw = d[start:s.pos]
			s.pos++
			if high&highs != 0 && !utf8.Valid(raw) {
				return nil, false, false
			}
			return raw, escaped, true
		case c == '\\':
			escaped = true
			if s.pos+1 >= len(d) {
				return nil, false, false
			}
			switch d[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if s.pos+6 > len(d) {
					return nil, false, false
				}
				r, err := strconv.ParseUint(string(d[s.pos+2:s.pos+6]), 16, 16)
				if err != nil || utf16.IsSurrogate(rune(r)) {
					return nil, false, false
				}
				s.pos += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			high |= uint64(c)
			s.pos++
		}
	}
}

// unquote returns the text of a string's raw bytes (as str returns them).
func unquote(raw []byte, escaped bool) string {
	if !escaped {
		return string(raw)
	}
	var b strings.Builder
	b.Grow(len(raw))
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			b.Write(raw)
			break
		}
		b.Write(raw[:i])
		switch raw[i+1] {
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
			r, _ := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
			b.WriteRune(rune(r))
			raw = raw[i+6:]
			continue
		default: // '"', '\\', '/'
			b.WriteByte(raw[i+1])
		}
		raw = raw[i+2:]
	}
	return b.String()
}

// text reads a string and returns its text.
func (s *scanner) text() (string, bool) {
	raw, esc, ok := s.str()
	if !ok {
		return "", false
	}
	return unquote(raw, esc), true
}

// skip reads any value, checking it.
func (s *scanner) skip(depth int) bool {
	if depth > 10000 {
		return false
	}
	switch s.peek() {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{':
		s.pos++
		if s.eat('}') {
			return true
		}
		for {
			if _, _, ok := s.str(); !ok || !s.eat(':') || !s.skip(depth+1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat('}')
		}
	case '[':
		s.pos++
		if s.eat(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.eat(',') {
				continue
			}
			return s.eat(']')
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// literal reads the word w.
func (s *scanner) literal(w string) bool {
	if len(s.data)-s.pos >= len(w) && string(s.data[s.pos:s.pos+len(w)]) == w {
		s.pos += len(w)
		return true
	}
	return false
}

// number reads a JSON number.
func (s *scanner) number() bool {
	d, i := s.data, s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	s.pos = i
	return true
}
