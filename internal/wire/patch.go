package wire

import (
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// Patching: a message the processors changed goes out as the bytes the
// client sent with only the changed values replaced, so that what abridge
// does not model (ids, status, annotations, cache_control, citations,
// unknown keys) and the order of the keys survive. The values are found
// with jsontext, as the body was read.

// errPatch: a path that does not lead to a value of the JSON text.
var errPatch = errors.New("no such value")

// member is one member of an object: its name and its value's bytes.
type member struct {
	name  string
	value span
}

// members returns the members of the JSON object at v in raw, and the
// offset of its closing brace.
func members(raw []byte, v span) ([]member, int, error) {
	dec := decoder(raw[v.start:v.end])
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, 0, fmt.Errorf("%w: not an object", errPatch)
	}
	var out []member
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errPatch, err)
		}
		name := tok.String() // before the next read, which reuses the token
		val, err := dec.ReadValue()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", errPatch, err)
		}
		end := v.start + int(dec.InputOffset())
		out = append(out, member{name, span{end - len(val), end}})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errPatch, err)
	}
	return out, v.start + int(dec.InputOffset()) - 1, nil
}

// lookup returns the byte range of the value at path in raw, a JSON value:
// each step of path is a string (an object's key) or an int (an array's
// index).
func lookup(raw []byte, path ...any) (span, error) {
	v := span{0, len(raw)}
	var err error
	for k, step := range path {
		if v, err = child(raw, v, step, k); err != nil {
			return span{}, err
		}
	}
	return v, nil
}

// child returns the byte range of the value of the object or array at v
// that step (the path's k-th) names.
func child(raw []byte, v span, step any, k int) (span, error) {
	switch s := step.(type) {
	case string:
		ms, _, err := members(raw, v)
		if err != nil {
			return span{}, err
		}
		for _, m := range ms {
			if m.name == s {
				return m.value, nil
			}
		}
		return span{}, fmt.Errorf("%w: no key %q at step %d", errPatch, s, k)
	case int:
		es, err := elements(raw, v)
		if err != nil {
			return span{}, fmt.Errorf("%w: %w", errPatch, err)
		}
		if s < 0 || s >= len(es) {
			return span{}, fmt.Errorf("%w: index %d of an array of %d", errPatch, s, len(es))
		}
		return es[s], nil
	}
	return span{}, fmt.Errorf("%w: step %d is a %T", errPatch, k, step)
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
	last := path[len(path)-1]
	if key, isKey := last.(string); isKey {
		ms, closing, err := members(raw, parent)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.name == key {
				return splice(raw, m.value, value), nil
			}
		}
		// A new member, before the closing brace.
		add := appendString(nil, key)
		if len(ms) > 0 {
			add = append([]byte{','}, add...)
		}
		add = append(append(add, ':'), value...)
		return splice(raw, span{closing, closing}, add), nil
	}
	v, err := child(raw, parent, last, len(path)-1)
	if err != nil {
		return nil, err
	}
	return splice(raw, v, value), nil
}

// splice returns raw with the bytes of v replaced by value, in a new
// slice.
func splice(raw []byte, v span, value []byte) []byte {
	return spliceAll(raw, []span{v}, [][]byte{value})
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
// run of JSON values (the items of one message of the Responses codec),
// read as the elements of an array.
func valuesOf(raw []byte) ([]span, error) {
	arr := append(append(append(make([]byte, 0, len(raw)+2), '['), raw...), ']')
	es, err := elements(arr, span{0, len(arr)})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPatch, err)
	}
	for i := range es {
		es[i].start--
		es[i].end--
	}
	return es, nil
}

// stringAt returns the string at path in raw, or "".
func stringAt(raw []byte, path ...any) string {
	v, err := lookup(raw, path...)
	if err != nil {
		return ""
	}
	var s string
	_ = jsonv2.Unmarshal(raw[v.start:v.end], &s)
	return s
}
