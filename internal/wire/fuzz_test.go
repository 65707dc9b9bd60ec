package wire

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// checkChat holds Chat.Parse, for one body, to what encoding/json and
// package transcript's reader make of it: it refuses every body
// encoding/json refuses, every body whose strings are not valid UTF-8 and
// every one naming a member twice; a body it takes has the "messages"
// encoding/json finds there, message for message, and they read as
// transcript.FromRawMessages reads them; written back unchanged it is the
// body itself, and each message written anew reads back the same.
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
	want, err := transcript.FromRawMessages(msgs)
	if err != nil {
		t.Fatalf("Parse took messages transcript.FromRawMessages refuses (%v): %q", err, data)
	}
	if err := processortest.Diff(want, b.Messages); err != nil {
		t.Fatalf("Parse's messages differ from transcript's: %v\n%q", err, data)
	}
	same, err := with(b, b.Messages)
	if err != nil || !bytes.Equal(same, data) {
		t.Fatalf("With(unchanged messages) = %q, %v", same, err)
	}
	enc := make([]json.RawMessage, len(b.Messages))
	for i, m := range b.Messages {
		if enc[i], err = transcript.AppendMessage(nil, m); err != nil {
			t.Fatalf("message %d written anew: %v", i, err)
		}
	}
	back, err := transcript.FromRawMessages(enc)
	if err != nil {
		t.Fatalf("messages written anew as %s read back with %v", enc, err)
	}
	for i, m := range b.Messages {
		if !processor.Equal(m, back[i]) {
			t.Fatalf("message %d written anew as %s reads back as another message", i, enc[i])
		}
	}
}

// duplicateNames returns a name some object of the JSON text data gives
// twice, or "", as encoding/json reads the text.
func duplicateNames(data []byte) string {
	return findName(data, func(object map[string]bool, name string) bool { return object[name] })
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

// requestBody returns the transcript at path as a request body.
func requestBody(tb testing.TB, path string) []byte {
	tb.Helper()
	h, err := transcript.LoadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	raws, err := transcript.ToRawMessages(h)
	if err != nil {
		tb.Fatal(err)
	}
	msgs := transcript.JoinRawMessages(raws)
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

// FuzzParse holds Chat.Parse to encoding/json and package transcript (see
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
// reads as package transcript reads it (see checkChat).
func TestParseTranscripts(t *testing.T) {
	for _, path := range allTranscripts(t) {
		data := requestBody(t, path)
		if _, err := Chat.Parse(data, nil); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
		checkChat(t, data)
	}
}
