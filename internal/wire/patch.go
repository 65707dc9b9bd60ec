package wire

import (
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

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

// lookup returns the byte range of the value of the member key of raw,
// a JSON object.
func lookup(raw []byte, key string) (span, error) {
	ms, _, err := members(raw, span{0, len(raw)})
	if err != nil {
		return span{}, err
	}
	for _, m := range ms {
		if m.name == key {
			return m.value, nil
		}
	}
	return span{}, fmt.Errorf("%w: no key %q", errPatch, key)
}

// patch returns raw, a JSON object, with the value of its member key
// replaced by value, a JSON value, or the member added at its end when it
// has none: every other byte is kept. raw is not changed.
func patch(raw []byte, value []byte, key string) ([]byte, error) {
	ms, closing, err := members(raw, span{0, len(raw)})
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

// stringAt returns the string value of the member key of raw, a JSON
// object, or "".
func stringAt(raw []byte, key string) string {
	v, err := lookup(raw, key)
	if err != nil {
		return ""
	}
	var s string
	_ = jsonv2.Unmarshal(raw[v.start:v.end], &s)
	return s
}
