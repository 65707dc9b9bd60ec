package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestPatch(t *testing.T) {
	for _, tc := range []struct {
		name, raw, value, key string
		want                  string // "" when refused
	}{
		{"a key", `{"a":1, "b" : "x" ,"c":[1]}`, `"y"`, "b", `{"a":1, "b" : "y" ,"c":[1]}`},
		{"a duplicated key", `{"a":1,"a":2}`, `3`, "a", ""},
		{"invalid UTF-8", "{\"a\":\"\xff\",\"b\":1}", `3`, "b", ""},
		{"escaped key", `{"\u0061":1}`, `2`, "a", `{"\u0061":2}`},
		{"key added", `{"type":"function_call_output", "call_id":"c"}`, `"out"`, "output",
			`{"type":"function_call_output", "call_id":"c","output":"out"}`},
		{"key added to an empty object", `{ }`, `true`, "is_error", `{ "is_error":true}`},
		{"strings with brackets and escapes", `{"a":"}\"]","b":"\\"}`, `"z"`, "b", `{"a":"}\"]","b":"z"}`},
		{"not an object", `[1]`, `2`, "a", ""},
		{"a key of another case is another key", `{"Content":"x"}`, `"y"`, "content", `{"Content":"x","content":"y"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := patch([]byte(tc.raw), []byte(tc.value), tc.key)
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

// FuzzPatch holds patch to encoding/json: on an object jsontext takes
// (valid UTF-8, no name twice in an object), the patched text is valid
// JSON, reads as the object read with the key's value replaced (or
// added), and keeps every other byte. Other text is refused or patched
// without a panic.
func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"type":"function_call_output","id":"fc_1","call_id":"c","output":"long","status":"completed"}`), "output", []byte(`"short"`))
	f.Add([]byte(`{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}],"is_error":true}`), "content", []byte(`"y"`))
	f.Add([]byte(`{"a" : [ 1 , 2 ] , "b":{}}`), "new", []byte(`{"k":[null]}`))
	f.Add([]byte(`{ }`), "a", []byte(`false`))
	f.Fuzz(func(t *testing.T, raw []byte, key string, value []byte) {
		got, err := patch(raw, value, key)
		if !jsontext.Value(raw).IsValid() || !json.Valid(value) || !utf8.ValidString(key) {
			return // no panic is all that is asked
		}
		var view map[string]any
		var val any
		if json.Unmarshal(raw, &view) != nil || json.Unmarshal(value, &val) != nil {
			if err == nil {
				t.Fatalf("patch(%s, %q) = %s; not an object", raw, key, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("patch(%s, %q): %v", raw, key, err)
		}
		view[key] = val
		var back map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("patch(%s, %q) = %s, not JSON: %v", raw, key, got, err)
		}
		if diff := cmp.Diff(view, back); diff != "" {
			t.Fatalf("patch(%s, %q) = %s, read (-want +got):\n%s", raw, key, got, diff)
		}
		// Every other byte kept: got is raw with the value's range
		// replaced, or with one member inserted.
		if v, err := lookup(raw, key); err == nil {
			want := append(append(append([]byte(nil), raw[:v.start]...), value...), raw[v.end:]...)
			if !bytes.Equal(got, want) {
				t.Fatalf("patch(%s, %q) = %s, want %s", raw, key, got, want)
			}
			return
		}
		member := append(append(appendString(nil, key), ':'), value...)
		pre := 0
		for pre < len(raw) && raw[pre] == got[pre] {
			pre++
		}
		rest := bytes.TrimPrefix(got[pre:], []byte(","))
		if !bytes.HasPrefix(rest, member) || !bytes.Equal(rest[len(member):], raw[pre:]) {
			t.Fatalf("patch(%s, %q) = %s: not raw with the member %s inserted", raw, key, got, member)
		}
	})
}
