package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Patching: a message the processors changed goes out as the bytes the
// client sent with only the changed values replaced, so that what abridge
// does not model (ids, status, annotations, cache_control, citations,
// unknown keys) and the order of the keys survive.

// errPatch: a path that does not lead to a value of the JSON text.
var errPatch = errors.New("no such value")

// errFolded: an object holds a key that is the one sought but for case.
// encoding/json matches keys to fields without regard to case (as the
// codecs read messages), so replacing or adding the member of the exact
// name would leave two that read as one: the patch is refused.
var errFolded = errors.New("a key that differs only in case")

// lookup returns the byte range of the value at path in raw, a JSON value:
// each step of path is a string (an object's key; the last member of that
// name, as encoding/json reads it) or an int (an array's index).
func lookup(raw []byte, path ...any) (span, error) {
	v, err := valueSpan(raw, 0)
	if err != nil {
		return span{}, err
	}
	for k, step := range path {
		switch s := step.(type) {
		case string:
			m, _, err := member(raw, v, s)
			if err != nil {
				return span{}, err
			}
			if m.start < 0 {
				return span{}, fmt.Errorf("%w: no key %q at step %d", errPatch, s, k)
			}
			v = m
		case int:
			e, err := element(raw, v, s)
			if err != nil {
				return span{}, err
			}
			v = e
		default:
			return span{}, fmt.Errorf("%w: step %d is a %T", errPatch, k, step)
		}
	}
	return v, nil
}

// patch returns raw, a JSON value, with the value at path (as [lookup]
// reads it) replaced by value, a JSON value: every other byte is kept.
// When the last step names a key the object does not have, the member is
// added at the object's end. raw is not changed.
func patch(raw []byte, value []byte, path ...any) ([]byte, error) {
	if len(path) == 0 {
		return append([]byte(nil), value...), nil
	}
	parent, err := lookup(raw, path[:len(path)-1]...)
	if err != nil {
		return nil, err
	}
	var v span
	switch s := path[len(path)-1].(type) {
	case string:
		m, closing, err := member(raw, parent, s)
		if err != nil {
			return nil, err
		}
		if m.start < 0 {
			// A new member, before the closing brace.
			key, _ := appendJSON(nil, s)
			out := make([]byte, 0, len(raw)+len(key)+len(value)+2)
			out = append(out, raw[:closing]...)
			if !emptyObject(raw, parent) {
				out = append(out, ',')
			}
			out = append(append(append(out, key...), ':'), value...)
			return append(out, raw[closing:]...), nil
		}
		v = m
	case int:
		if v, err = element(raw, parent, s); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: the last step is a %T", errPatch, s)
	}
	return splice(raw, v, value), nil
}

// splice returns raw with the bytes of v replaced by value, in a new
// slice.
func splice(raw []byte, v span, value []byte) []byte {
	out := make([]byte, 0, len(raw)-(v.end-v.start)+len(value))
	out = append(out, raw[:v.start]...)
	out = append(out, value...)
	return append(out, raw[v.end:]...)
}

// emptyObject reports whether the object at v has no member.
func emptyObject(d []byte, v span) bool {
	return skipSpace(d, v.start+1) == v.end-1
}

// elementsOf returns the byte ranges of the elements of the array at v.
func elementsOf(d []byte, v span) ([]span, error) {
	if v.start >= len(d) || d[v.start] != '[' {
		return nil, fmt.Errorf("%w: not an array", errPatch)
	}
	var out []span
	i := skipSpace(d, v.start+1)
	if i < v.end && d[i] == ']' {
		return out, nil
	}
	for {
		e, err := valueSpan(d, i)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		i = skipSpace(d, e.end)
		if i >= v.end {
			return nil, fmt.Errorf("%w: an array not closed", errPatch)
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case ']':
			return out, nil
		default:
			return nil, fmt.Errorf("%w: %q in an array", errPatch, d[i])
		}
	}
}

// element returns the byte range of the array element of index k.
func element(d []byte, v span, k int) (span, error) {
	es, err := elementsOf(d, v)
	if err != nil {
		return span{}, err
	}
	if k < 0 || k >= len(es) {
		return span{}, fmt.Errorf("%w: index %d of an array of %d", errPatch, k, len(es))
	}
	return es[k], nil
}

// member returns the byte range of the value of the object's last member
// named key (start -1 when there is none) and the offset of the object's
// closing brace.
func member(d []byte, v span, key string) (found span, closing int, err error) {
	found = span{-1, -1}
	if v.start >= len(d) || d[v.start] != '{' {
		return found, 0, fmt.Errorf("%w: not an object", errPatch)
	}
	i := skipSpace(d, v.start+1)
	if i < len(d) && d[i] == '}' {
		return found, i, nil
	}
	for {
		k, err := valueSpan(d, i)
		if err != nil || d[i] != '"' {
			return found, 0, fmt.Errorf("%w: an object's key", errPatch)
		}
		i = skipSpace(d, k.end)
		if i >= len(d) || d[i] != ':' {
			return found, 0, fmt.Errorf("%w: no ':' after a key", errPatch)
		}
		val, err := valueSpan(d, skipSpace(d, i+1))
		if err != nil {
			return found, 0, err
		}
		switch is, folds := keyIs(d[k.start:k.end], key); {
		case is:
			found = val
		case folds:
			return found, 0, fmt.Errorf("%w: %s for %q", errFolded, d[k.start:k.end], key)
		}
		i = skipSpace(d, val.end)
		if i >= len(d) {
			return found, 0, fmt.Errorf("%w: an object not closed", errPatch)
		}
		switch d[i] {
		case ',':
			i = skipSpace(d, i+1)
		case '}':
			return found, i, nil
		default:
			return found, 0, fmt.Errorf("%w: %q in an object", errPatch, d[i])
		}
	}
}

// keyIs reports whether the JSON string raw (quotes included) is key, and
// whether it is key but for case.
func keyIs(raw []byte, key string) (is, folds bool) {
	k := raw[1 : len(raw)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return false, false
		}
		return s == key, s != key && strings.EqualFold(s, key)
	}
	if string(k) == key {
		return true, false
	}
	return false, strings.EqualFold(string(k), key)
}

// skipSpace returns the offset of the first byte at or after i that is
// not JSON white space.
func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// valueSpan returns the byte range of the JSON value starting at i, found
// by its brackets, quotes and delimiters (the text is assumed valid, as
// every message's is once read; what is not is refused, never read past
// its end).
func valueSpan(d []byte, i int) (span, error) {
	i = skipSpace(d, i)
	if i >= len(d) {
		return span{}, fmt.Errorf("%w: no value at the end", errPatch)
	}
	start := i
	depth := 0
	for ; i < len(d); i++ {
		switch c := d[i]; c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return span{}, fmt.Errorf("%w: %q where a value starts", errPatch, c)
			}
			if depth == 0 {
				return span{start, i + 1}, nil
			}
		case '"':
			// The closing quote: the next one not escaped (an odd run of
			// backslashes before it escapes it).
			from := i + 1
			for {
				k := bytes.IndexByte(d[from:], '"')
				if k < 0 {
					return span{}, fmt.Errorf("%w: a string not closed", errPatch)
				}
				i = from + k
				n := 0
				for j := i - 1; j > start && d[j] == '\\'; j-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				from = i + 1
			}
			if depth == 0 {
				return span{start, i + 1}, nil
			}
		default:
			if depth == 0 {
				// A number or a literal: up to a delimiter.
				for i < len(d) && strings.IndexByte(",:]} \t\r\n{[\"", d[i]) < 0 {
					i++
				}
				if i == start {
					return span{}, fmt.Errorf("%w: %q where a value starts", errPatch, c)
				}
				return span{start, i}, nil
			}
		}
	}
	return span{}, fmt.Errorf("%w: a value not closed", errPatch)
}

// spliceAll returns raw with the bytes of each span of spans (in order,
// apart) replaced by the value of the same index, in a new slice.
func spliceAll(raw []byte, spans []span, vals [][]byte) []byte {
	n := len(raw)
	for k, v := range spans {
		n += len(vals[k]) - (v.end - v.start)
	}
	out := make([]byte, 0, n)
	at := 0
	for k, v := range spans {
		out = append(append(out, raw[at:v.start]...), vals[k]...)
		at = v.end
	}
	return append(out, raw[at:]...)
}

// valuesOf returns the byte ranges of the values of a comma-separated
// run of JSON values (the items of one message of the Responses codec).
func valuesOf(raw []byte) ([]span, error) {
	var out []span
	i := skipSpace(raw, 0)
	for i < len(raw) {
		v, err := valueSpan(raw, i)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		i = skipSpace(raw, v.end)
		if i < len(raw) {
			if raw[i] != ',' {
				return nil, fmt.Errorf("%w: %q between values", errPatch, raw[i])
			}
			i = skipSpace(raw, i+1)
		}
	}
	return out, nil
}

// stringAt returns the string at path in raw, or "".
func stringAt(raw []byte, path ...any) string {
	v, err := lookup(raw, path...)
	if err != nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw[v.start:v.end], &s)
	return s
}
