package wire

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// checkChat holds Chat.Parse, for one body, to what encoding/json and
// package model make of it: it refuses every body encoding/json refuses,
// every body whose strings are not valid UTF-8 and every one naming a
// member twice; a body it takes has the "messages" encoding/json finds
// there, message for message, and they read as package model reads them
// wherever model takes them too; written back unchanged it is the body
// itself, and each message written anew reads back the same.
func checkChat(t *testing.T, data []byte) {
	t.Helper()
	b, err := Chat.Parse(data, nil)
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || !utf8.Valid(data) {
		if err == nil {
			t.Fatalf("Parse took a body encoding/json refuses, or of invalid UTF-8: %q", data)
		}
		return
	}
	if err != nil {
		return
	}
	if dup := duplicateNames(data); dup != "" {
		t.Fatalf("Parse took a body naming %q twice in an object: %q", dup, data)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) != len(b.raws) {
		t.Fatalf("%d messages, encoding/json finds %d (%v): %q", len(b.raws), len(msgs), err, data)
	}
	for i := range msgs {
		if !bytes.Equal(msgs[i], b.raws[i]) {
			t.Fatalf("message %d: %q, encoding/json finds %q", i, b.raws[i], msgs[i])
		}
	}
	// A name encoding/json matches regardless of case is not the field to
	// the API, nor to Parse: package model is no reference for it.
	if want, err := openai.FromRawMessages(msgs); err == nil && foldedName(top["messages"]) == "" {
		if err := processortest.Diff(compactData(want), compactData(b.Messages)); err != nil {
			t.Fatalf("Parse's messages differ from model's: %v\n%q", err, data)
		}
	}
	same, err := with(b, b.Messages)
	if err != nil || !bytes.Equal(same, data) {
		t.Fatalf("With(unchanged messages) = %q, %v", same, err)
	}
	calls := map[string]string{}
	for i, m := range b.Messages {
		enc, err := writeChat(m)
		if err != nil {
			t.Fatalf("message %d written anew: %v", i, err)
		}
		back, err := readChat(enc, calls)
		if err != nil {
			t.Fatalf("message %d written anew as %s, which reads back with %v", i, enc, err)
		}
		if !processor.Equal(m, back) {
			t.Fatalf("message %d written anew as %s reads back as another message", i, enc)
		}
	}
}

// duplicateNames returns a name some object of the JSON text data gives
// twice, or "", as encoding/json reads the text.
func duplicateNames(data []byte) string {
	return findName(data, func(object map[string]bool, name string) bool { return object[name] })
}

// chatNames are the member names package model reads in a Chat message.
var chatNames = []string{"role", "content", "name", "refusal", "tool_call_id", "tool_calls",
	"reasoning_content", "id", "type", "function", "arguments", "text"}

// foldedName returns a name of data that encoding/json matches to one of
// chatNames without being it ("nAme", "Role"), or "". The APIs match names
// exactly, as Parse does; encoding/json, and so package model, ignores case.
func foldedName(data []byte) string {
	return findName(data, func(_ map[string]bool, name string) bool {
		return slices.ContainsFunc(chatNames, func(known string) bool {
			return name != known && strings.EqualFold(name, known)
		})
	})
}

// findName returns the first member name of the JSON text data, as
// encoding/json reads it, for which found holds, given the names its
// object gave before it; "" when there is none.
func findName(data []byte, found func(object map[string]bool, name string) bool) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []map[string]bool // the names of each object open, nil for an array
	expectName := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
			expectName = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if name, ok := tok.(string); ok && expectName {
				if found(stack[len(stack)-1], name) {
					return name
				}
				stack[len(stack)-1][name] = true
				expectName = false
				continue
			}
		}
		// After a value, an object expects a name next.
		expectName = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// compactData returns msgs with the Data of each user content compacted:
// package model rewrites a part it keeps whole, the codec keeps its bytes.
func compactData(msgs []processor.Message) []processor.Message {
	out := processor.Clone(msgs)
	for i, m := range out {
		for j, p := range m.Parts {
			u, ok := p.(processor.UserPrompt)
			if !ok || u.Contents == nil {
				continue
			}
			for k, c := range u.Contents {
				if c.Data == nil {
					continue
				}
				var v any
				_ = json.Unmarshal(c.Data, &v)
				u.Contents[k].Data, _ = json.Marshal(v)
			}
			out[i].Parts[j] = u
		}
	}
	return out
}

// requestBody returns the transcript at path as a request body.
func requestBody(tb testing.TB, path string) []byte {
	tb.Helper()
	h, err := transcript.LoadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	msgs, err := openai.ToJSON(h)
	if err != nil {
		tb.Fatal(err)
	}
	return append(append([]byte(`{"model":"gpt-x","stream":true,"messages":`), msgs...), `,"temperature":0}`...)
}

// allTranscripts returns the shared transcripts, or the shipped ones.
func allTranscripts(tb testing.TB) []string {
	if dir, ok := transcripts.SharedDir(); ok {
		if files, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(files) > 0 {
			return files
		}
	}
	return transcripts.Shipped(tb)
}

// FuzzParse holds Chat.Parse to encoding/json and package model (see
// checkChat), seeded with every small transcript as a request body and
// with bodies at the edges of what JSON and the API allow.
func FuzzParse(f *testing.F) {
	f.Add([]byte(body))
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"a\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
		`{"Messages":[{"role":"user","content":"x"}]}`,
		`{"messages":[{"Role":"user","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x","role":"system"}]}`,
		`{"messages":[{"role":"user","content":"\xff"}]}`,
		`{"messages":[{"role":"user","content":"\ud800"}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"a","content":""}]}`,
		`{"messages":[{"role":"assistant","content":null,"refusal":"no","name":"bot"}]}`,
		`{"messages":[{"role":"assistant","content":null,"rvvvefusal":"no","nAme":"000"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}}]}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"}],"reasoning_content":"r"}]}`,
		`{"temperature":1e400,"messages":[{"role":"user","content":"x"}]}`,
		`{"temperature":01,"messages":[{"role":"user","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x"}]}  `,
		` {"stream":true,"model":"m","messages":[{"role":"developer","content":"d","name":"n"}]}`,
	} {
		f.Add([]byte(s))
	}
	// The small transcripts only: the fuzzer mutates its seeds, and large
	// ones slow every execution (TestParseTranscripts takes them all).
	for _, path := range allTranscripts(f) {
		if b := requestBody(f, path); len(b) <= 32<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChat(t, data)
	})
}

// TestParseTranscripts parses every transcript as a request body: each
// reads as package model reads it (see checkChat).
func TestParseTranscripts(t *testing.T) {
	for _, path := range allTranscripts(t) {
		data := requestBody(t, path)
		if _, err := Chat.Parse(data, nil); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
		checkChat(t, data)
	}
}
