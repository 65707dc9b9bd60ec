package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestPatch(t *testing.T) {
	for _, tc := range []struct {
		name, raw, value string
		path             []any
		want             string // "" when refused
	}{
		{"top key", `{"a":1, "b" : "x" ,"c":[1]}`, `"y"`, []any{"b"}, `{"a":1, "b" : "y" ,"c":[1]}`},
		{"nested", `{"content":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}}]}`, `"short"`,
			[]any{"content", 0, "text"}, `{"content":[{"type":"text","text":"short","cache_control":{"type":"ephemeral"}}]}`},
		{"a duplicated key", `{"a":1,"a":2}`, `3`, []any{"a"}, ""},
		{"invalid UTF-8", "{\"a\":\"\xff\",\"b\":1}", `3`, []any{"b"}, ""},
		{"escaped key", `{"\u0061":1}`, `2`, []any{"a"}, `{"\u0061":2}`},
		{"key added", `{"type":"function_call_output", "call_id":"c"}`, `"out"`, []any{"output"},
			`{"type":"function_call_output", "call_id":"c","output":"out"}`},
		{"key added to an empty object", `{ }`, `true`, []any{"is_error"}, `{ "is_error":true}`},
		{"array element", `[1, {"x":"]}"}, 3]`, `null`, []any{1}, `[1, null, 3]`},
		{"strings with brackets and escapes", `{"a":"}\"]","b":"\\"}`, `"z"`, []any{"b"}, `{"a":"}\"]","b":"z"}`},
		{"whole value", `{"a":1}`, `[]`, nil, `[]`},
		{"index out of range", `[1]`, `2`, []any{1}, ""},
		{"key of an array", `[1]`, `2`, []any{"a"}, ""},
		{"missing parent", `{"a":{}}`, `2`, []any{"b", "c"}, ""},
		{"index of an object", `{"a":1}`, `2`, []any{0}, ""},
		{"a key of another case is another key", `{"Content":"x"}`, `"y"`, []any{"content"}, `{"Content":"x","content":"y"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := patch([]byte(tc.raw), []byte(tc.value), tc.path...)
			if tc.want == "" {
				if err == nil || !errors.Is(err, errPatch) {
					t.Fatalf("patch = %s, %v; want an errPatch", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// parsePath reads a path of the fuzzer: steps separated by '/', "#N" an
// array index, anything else a key.
func parsePath(s string) []any {
	if s == "" {
		return nil
	}
	var path []any
	for _, step := range strings.Split(s, "/") {
		if n, err := strconv.Atoi(strings.TrimPrefix(step, "#")); err == nil && strings.HasPrefix(step, "#") {
			path = append(path, n)
			continue
		}
		path = append(path, step)
	}
	return path
}

// setAt sets the value at path in v (encoding/json's view of a text), and
// reports false when path leads nowhere.
func setAt(v any, path []any, value any) (any, bool) {
	if len(path) == 0 {
		return value, true
	}
	switch s := path[0].(type) {
	case string:
		o, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		child, has := o[s]
		if !has && len(path) > 1 {
			return nil, false
		}
		nv, ok := setAt(child, path[1:], value)
		if !ok {
			return nil, false
		}
		o[s] = nv
		return o, true
	case int:
		a, ok := v.([]any)
		if !ok || s < 0 || s >= len(a) {
			return nil, false
		}
		nv, ok := setAt(a[s], path[1:], value)
		if !ok {
			return nil, false
		}
		a[s] = nv
		return a, true
	}
	return nil, false
}

// FuzzPatch holds patch to encoding/json: on text jsontext takes (valid
// UTF-8, no name twice in an object), the patched text is valid JSON,
// reads as the text read with the value replaced, and keeps every other
// byte; a path encoding/json finds no place for is refused. Other text is
// refused or patched without a panic.
func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"type":"function_call_output","id":"fc_1","call_id":"c","output":"long","status":"completed"}`), "output", []byte(`"short"`))
	f.Add([]byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"is_error":true}]}`), "content/#0/content/#0/text", []byte(`"y"`))
	f.Add([]byte(`{"a" : [ 1 , 2 ] , "b":{}}`), "b/new", []byte(`{"k":[null]}`))
	f.Add([]byte(`[ "x", {"\u0061":"\"}"} ]`), "#1/a", []byte(`false`))
	f.Fuzz(func(t *testing.T, raw []byte, pathSpec string, value []byte) {
		path := parsePath(pathSpec)
		got, err := patch(raw, value, path...)
		if !jsontext.Value(raw).IsValid() || !json.Valid(value) || !utf8.ValidString(pathSpec) {
			return // no panic is all that is asked
		}
		var view, val any
		if json.Unmarshal(raw, &view) != nil || json.Unmarshal(value, &val) != nil {
			return
		}
		want, ok := setAt(view, path, val)
		if !ok {
			if err == nil {
				t.Fatalf("patch(%s, %q) = %s; encoding/json finds no such place", raw, pathSpec, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("patch(%s, %q): %v", raw, pathSpec, err)
		}
		if !json.Valid(got) {
			t.Fatalf("patch(%s, %q) = %s, not JSON", raw, pathSpec, got)
		}
		var back any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, back); diff != "" {
			t.Fatalf("patch(%s, %q) = %s, read (-want +got):\n%s", raw, pathSpec, got, diff)
		}
		// Every other byte kept: got is raw with the value's range
		// replaced, or with one member inserted.
		if len(path) == 0 {
			return
		}
		if v, err := lookup(raw, path...); err == nil {
			want := append(append(append([]byte(nil), raw[:v.start]...), value...), raw[v.end:]...)
			if !bytes.Equal(got, want) {
				t.Fatalf("patch(%s, %q) = %s, want %s", raw, pathSpec, got, want)
			}
			return
		}
		key, _ := appendJSON(nil, path[len(path)-1])
		member := append(append(key, ':'), value...)
		pre := 0
		for pre < len(raw) && raw[pre] == got[pre] {
			pre++
		}
		rest := got[pre:]
		rest = bytes.TrimPrefix(rest, []byte(","))
		if !bytes.HasPrefix(rest, member) || !bytes.Equal(rest[len(member):], raw[pre:]) {
			t.Fatalf("patch(%s, %q) = %s: not raw with the member %s inserted", raw, pathSpec, got, member)
		}
	})
}
