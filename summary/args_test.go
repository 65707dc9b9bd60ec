package summary

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// argSeeds are arguments that exercise the decoder's corners.
var argSeeds = []string{
	`{"command":"ls -la","path":"/tmp/x"}`,
	` {"b":1,"a":[true,false,null,{"z":"y","a":"\u00e9\ud83d\ude00"}]} `,
	`{"a":"x","a":"y","b":"z","a":"w"}`,
	`{"s":"tab\there \"q\" \\ \/ \b\f\n\r"}`,
	`{"lone":"\ud800x","pair":"\ud83d\ude00","bad":"\ud800\u0041","hi":"\udc00"}`,
	"{\"inv\":\"a\xffb\xc3\"}",
	`{"n":-0.5e+10,"m":0,"big":1e400}`,
	`{"n":01}`,
	`{"n":1.}`,
	`{"x":"unterminated}`,
	`{"a":1,}`,
	`[1,2]`,
	`null`,
	`"str"`,
	`{}`,
	`{"deep":[[[[{"k":["v"]}]]]]}`,
	"{\"ctl\":\"a\x01b\"}",
	`{"a":1} x`,
	`{"command":"create","path":"a.go","file_text":"` + strings.Repeat("y", 900) + `"}`,
	`{"description":"a long one ` + strings.Repeat("word ", 60) + `","command":"go test"}`,
}

// canonAny renders a value as encoding/json decodes it into an any.
func canonAny(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "s" + strconv.Quote(x)
	case float64:
		return "n" + strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, canonAny(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, strconv.Quote(k)+":"+canonAny(x[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	panic("unexpected type")
}

// canonArg renders a value as decodeArgs reads it, as canonAny does.
func canonArg(v argValue) string {
	switch v.kind {
	case argNull:
		return "null"
	case argString:
		return "s" + strconv.Quote(v.s)
	case argNumber:
		f, err := strconv.ParseFloat(v.s, 64)
		if err != nil {
			panic(err)
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	case argBool:
		return strconv.FormatBool(v.b)
	case argArray:
		var parts []string
		for _, e := range v.elems {
			parts = append(parts, canonArg(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	var parts []string
	for _, m := range v.members {
		parts = append(parts, strconv.Quote(m.key)+":"+canonArg(m.val))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// decodeArgs reads what encoding/json decodes into a map[string]any, and
// the call line made from it is the one the reference makes from that map.
func FuzzDecodeArgs(f *testing.F) {
	for _, s := range argSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var m map[string]any
		jsonOK := json.Unmarshal([]byte(raw), &m) == nil && m != nil
		var ref map[string]any
		if jsonOK {
			ref = m
		}
		members, ok := decodeArgs(raw)
		if ok != jsonOK {
			t.Fatalf("decodeArgs(%q) ok %v, encoding/json %v", raw, ok, jsonOK)
		}
		if ok {
			want := canonAny(m)
			if got := canonArg(argValue{kind: argObject, members: members}); got != want {
				t.Fatalf("decodeArgs(%q):\n got %s\nwant %s", raw, got, want)
			}
		}
		c := processor.ToolCall{ToolName: "tool", Args: raw}
		if got, want := callLine(c, members, ok), refCallLine(c, ref, refSortedKeys(ref)); got != want {
			t.Fatalf("callLine(%q):\n got %q\nwant %q", raw, got, want)
		}
		// Decoded twice in one scratch, as an extraction decodes its
		// calls, the first values stay whole.
		var x argScratch
		first, _ := decodeArgsIn(raw, &x)
		second, _ := decodeArgsIn(raw, &x)
		if ok {
			want := canonAny(m)
			for _, ms := range [][]argMember{first, second} {
				if got := canonArg(argValue{kind: argObject, members: ms}); got != want {
					t.Fatalf("decodeArgsIn(%q), twice in one scratch:\n got %s\nwant %s", raw, got, want)
				}
			}
		}
	})
}

func TestDecodeArgsSeeds(t *testing.T) {
	for _, s := range argSeeds {
		var m map[string]any
		jsonOK := json.Unmarshal([]byte(s), &m) == nil && m != nil
		members, ok := decodeArgs(s)
		if ok != jsonOK {
			t.Errorf("decodeArgs(%q) ok %v, encoding/json %v", s, ok, jsonOK)
			continue
		}
		if ok {
			if got, want := canonArg(argValue{kind: argObject, members: members}), canonAny(m); got != want {
				t.Errorf("decodeArgs(%q):\n got %s\nwant %s", s, got, want)
			}
		}
	}
}

// writtenByDecoded finds the files writtenByCall finds (it passes over
// the commands shellMayWrite says write nothing).
func FuzzWrittenByDecoded(f *testing.F) {
	for _, s := range []string{
		`{"command":"go test ./... 2>&1 | tail"}`,
		`{"command":"cat > out.txt <<'EOF'\nx\nEOF"}`,
		`{"command":"t'e'e x.log"}`,
		`{"command":"c\\p a b"}`,
		`{"command":"echo x >\"&f\""}`,
		`{"command":"sed -i 's/a/b/' f.go"}`,
		`{"command":"create","path":"a.go"}`,
		`{"patch":"*** Update File: a.go\n"}`,
		"--- a/x\n+++ b/x\n",
		`{"cmd":"\u0063p a b"}`,
		`{"command":"ls >& /dev/null; grep -r x ."}`,
	} {
		f.Add("bash", s)
	}
	f.Add("MultiEdit", `{"edits":[{"file_path":"a.go"},{"path":"b.go"},"x"],"command":"edit"}`)
	f.Add("str_replace_editor", `{"command":"view","path":"a.go"}`)
	f.Add("Edit", `{"file_path":"a.go"}`)
	f.Fuzz(func(t *testing.T, name, raw string) {
		c := processor.ToolCall{ToolName: name, Args: raw}
		want := writtenByCall(c)
		// The same files from the arguments decodeArgs read (in any order:
		// the reference takes patches from a map).
		args, ok := decodeArgs(raw)
		var sh shellWriter
		got := writtenByDecoded(nil, &sh, c, args, ok)
		// A writer reused finds the same files.
		if again := writtenByDecoded(nil, &sh, c, args, ok); !slices.Equal(again, got) {
			t.Fatalf("writtenByDecoded(%q, %q) = %q, then %q with the same writer", name, raw, got, again)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("writtenByDecoded(%q, %q) = %q, want %q", name, raw, got, want)
		}
	})
}

// appendTokens finds the tokens the reference finds, reading the bytes
// that can mark a token 8 at a time.
func FuzzAppendTokens(f *testing.F) {
	for _, s := range []string{
		"Look at os.path.join and FileSystemStorage in django/core/files/storage.py; README and Django are words.",
		"plain words only here and nothing else at all",
		"x_y", "a.b.c.go ~/x/y ./run.sh ../a /etc/hosts settings.DEBUG __init__.py",
		"caf\u00e9 na\u00efve \u00c9t\u00e9 read_config\xff\xfeFoo",
		"trailing dots... and-dashes-- v1.2.3 a/b/ //x @scope/pkg",
		"See Foo. and /tmp/x.log. Then FOO_BAR.md, a/B_c.txt.. x. Y/z ./Q_r",
		"This is I. Done. Word.. fooBar aB 1Foo 9fooBar -Foo foo-Bar e.g. x.Y A_b _ab end. go.mod. a. see main.go and os.path here",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		gf, gn := appendTokens(nil, nil, text)
		wf, wn := refAppendTokens(nil, nil, text)
		if !slices.Equal(gf, wf) || !slices.Equal(gn, wn) {
			t.Fatalf("appendTokens(%q) = %q, %q; the reference %q, %q", text, gf, gn, wf, wn)
		}
		// Each kind alone, as the facts ask once the other is full.
		if gf, gn = appendTokensOf(nil, nil, text, true, false); !slices.Equal(gf, wf) || gn != nil {
			t.Fatalf("appendTokensOf(%q), files only = %q, %q; the reference %q", text, gf, gn, wf)
		}
		if gf, gn = appendTokensOf(nil, nil, text, false, true); gf != nil || !slices.Equal(gn, wn) {
			t.Fatalf("appendTokensOf(%q), names only = %q, %q; the reference %q", text, gf, gn, wn)
		}
	})
}

// nextDotOrSlash and nextMarkByte find each byte value they look for at
// every place of an 8-byte word, and no other byte value: nextMarkByte a
// capital only after a lower-case letter (in the text, before where the
// search starts too).
func TestNextByteOfClass(t *testing.T) {
	isLower := func(b byte) bool { return 'a' <= b && b <= 'z' }
	for _, tc := range []struct {
		name string
		next func(string, int) int
		at   func(s string, i int) bool // whether s[i] is looked for
	}{
		{"nextDotOrSlash", nextDotOrSlash, func(s string, i int) bool { return s[i] == '.' || s[i] == '/' }},
		{"nextMarkByte", nextMarkByte, func(s string, i int) bool {
			c := s[i]
			return c == '.' || c == '/' || c == '_' || 'A' <= c && c <= 'Z' && i > 0 && isLower(s[i-1])
		}},
	} {
		for _, filler := range []string{"a", "0", "Q"} {
			for b := range 256 {
				for at := range 20 {
					buf := []byte(strings.Repeat(filler, 20))
					buf[at] = byte(b)
					s := string(buf)
					for _, from := range []int{0, at} {
						want := -1
						for i := from; i < len(s); i++ {
							if tc.at(s, i) {
								want = i
								break
							}
						}
						if got := tc.next(s, from); got != want {
							t.Fatalf("%s(%q, %d): got %d, want %d", tc.name, s, from, got, want)
						}
					}
				}
			}
		}
	}
}

// nextSpecial finds every byte value it looks for at every place of an
// 8-byte word, after a word with none, and only those.
func TestNextSpecial(t *testing.T) {
	for b := range 256 {
		for at := range 20 {
			buf := []byte(strings.Repeat("a", 20))
			buf[at] = byte(b)
			s := string(buf)
			want := 20
			if b == '"' || b == '\\' || b < 0x20 || b >= 0x80 {
				want = at
			}
			if got := nextSpecial(s, 0); got != want {
				t.Fatalf("nextSpecial: byte %#x at %d: got %d, want %d", b, at, got, want)
			}
		}
	}
	// Several special bytes in a word, from every start.
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		buf := make([]byte, r.IntN(40))
		for i := range buf {
			buf[i] = []byte{'a', 'Z', ' ', '"', '\\', 0x01, 0x1f, 0x7f, 0x80, 0xc3, 0xff}[r.IntN(11)]
		}
		s := string(buf)
		for i := 0; i <= len(s); i++ {
			want := i
			for want < len(s) && !(s[want] == '"' || s[want] == '\\' || s[want] < 0x20 || s[want] >= 0x80) {
				want++
			}
			if got := nextSpecial(s, i); got != want {
				t.Fatalf("nextSpecial(%q, %d) = %d, want %d", s, i, got, want)
			}
		}
	}
}

// errorLine finds the line the reference finds.
func FuzzErrorLine(f *testing.F) {
	for _, s := range []string{
		"ok\nexit status 2\ndone", "Traceback (most recent call last):\n  x\nValueError: bad",
		"<returncode>1</returncode>\n<output>\nfatal: no</output>", "all good", "Exit code 0\nError: x",
		"FAIL", "xFAIL", "ok\nFAIL\n", "xxERROR",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := errorLine(s), refErrorLine(s); got != want {
			t.Fatalf("errorLine(%q) = %q, the reference %q", s, got, want)
		}
	})
}

// A command shellMayWrite says writes nothing writes nothing.
func FuzzShellMayWrite(f *testing.F) {
	for _, s := range []string{
		"go test ./... 2>&1 | tail", "cat > out.txt <<'EOF'\nx\nEOF", "t'e'e x.log", `c\p a b`, `echo x >"&f"`,
		"sed -i 's/a/b/' f.go", "ls >& /dev/null; grep -r x .", "echo a >> b", "echo a >>& b", "/usr/bin/tee -a x",
		"env X=1 sudo mv a b", `"m"v a b`, ">&2sed -i s/a/b/ f.go", ">&2tee y",
		`x"sed a`, `a'tee'x`, `s"ed"y`, `mv"" a`, `_"cp a b`, "\xffsed a", `tee\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if w := shellWritten(s); len(w) > 0 && !shellMayWrite(s) {
			t.Fatalf("shellMayWrite(%q) is false, and the command writes %q", s, w)
		}
		if got, want := shellMayWrite(s), refShellMayWrite(s); got != want {
			t.Fatalf("shellMayWrite(%q) = %v, the reference %v", s, got, want)
		}
	})
}

// refHasPatchMarker is the test writtenByArgs makes of a string value.
func refHasPatchMarker(s string) bool {
	return strings.Contains(s, "*** Add File:") || strings.Contains(s, "*** Update File:") || strings.Contains(s, "\n+++ ") || strings.HasPrefix(s, "+++ ") || strings.HasPrefix(s, "--- ")
}

// hasPatchMarker tells a patch as writtenByArgs does.
func FuzzHasPatchMarker(f *testing.F) {
	for _, s := range []string{
		"", "+++ b/x", "--- a/x", "x\n+++ b/x", "+++ ", "x+++ b", "\n++++ x", "++++ x\n+++ y",
		"*** Add File: a.go", "**** Update File: a.go", "*** *** Add File:", "*** Delete File: a", "*** Add File",
		"a\n*** Begin Patch\n*** Update File: b.go\n@@\n-x\n+y\n*** End Patch",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := hasPatchMarker(s), refHasPatchMarker(s); got != want {
			t.Fatalf("hasPatchMarker(%q) = %v, want %v", s, got, want)
		}
	})
}
