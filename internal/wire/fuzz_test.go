package wire

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// slowSplit is split alone (encoding/json), on a new Body.
func slowSplit(data []byte) (*Body, error) {
	b := &Body{data: data}
	return b, b.split()
}

// checkSame checks, for one body, that the scanner and the message
// decoder agree with encoding/json and package model wherever they
// accept: the same messages array (its bytes and each message's), model
// and stream, and the same messages decoded; and that they accept nothing
// encoding/json or model refuses.
func checkSame(t *testing.T, data []byte) {
	t.Helper()
	fast := &Body{data: data}
	fastOK := fast.fastSplit()
	slow, err := slowSplit(data)
	if err != nil {
		if fastOK {
			t.Fatalf("the scanner accepted a body encoding/json refuses (%v): %q", err, data)
		}
		return
	}
	if fastOK {
		if fast.start != slow.start || fast.end != slow.end || fast.Model != slow.Model || fast.Stream != slow.Stream || len(fast.raws) != len(slow.raws) {
			t.Fatalf("split differs: scanner [%d:%d] %q %v %d messages, encoding/json [%d:%d] %q %v %d messages",
				fast.start, fast.end, fast.Model, fast.Stream, len(fast.raws), slow.start, slow.end, slow.Model, slow.Stream, len(slow.raws))
		}
		for i := range fast.raws {
			if !bytes.Equal(fast.raws[i], bytes.TrimSpace(slow.raws[i])) {
				t.Fatalf("message %d: scanner %q, encoding/json %q", i, fast.raws[i], slow.raws[i])
			}
		}
	}
	got, ok := fastDecode(slow.raws)
	want, err := model.FromRawMessages(slow.raws)
	switch {
	case ok && err != nil:
		t.Fatalf("the fast decoder accepted messages model refuses (%v): %q", err, data)
	case ok:
		if err := processortest.Diff(want, got); err != nil {
			t.Fatalf("decoded messages differ from model's: %v\n%q", err, data)
		}
	}
	if err == nil {
		b, perr := Parse(data)
		if perr != nil {
			t.Fatalf("Parse: %v", perr)
		}
		if err := processortest.Diff(want, b.Messages); err != nil {
			t.Fatalf("Parse's messages differ from model's: %v", err)
		}
		// Written back unchanged: the body itself; and re-encoded (each
		// message written anew where it can be), the same messages.
		same, werr := b.With(b.Messages)
		if werr != nil || !bytes.Equal(same, data) {
			t.Fatalf("With(unchanged messages) = %q, %v", same, werr)
		}
		for _, m := range b.Messages {
			enc, ok := appendMessage(nil, m)
			if !ok {
				continue
			}
			back, err := model.FromRawMessages([]json.RawMessage{enc})
			if err != nil || len(back) != 1 {
				t.Fatalf("appendMessage(%v) = %q, which reads back as %v, %v", m, enc, back, err)
			}
			// A tool return read alone has no call to take its tool's name
			// from.
			w := m
			if r, isReturn := m.Parts[0].(processor.ToolReturn); isReturn {
				r.ToolName = ""
				w = processor.NewRequest(r)
			}
			if !processor.Equal(w, back[0]) {
				t.Fatalf("appendMessage: %q reads back as another message", enc)
			}
		}
	}
}

// requestBody returns the transcript at path as a request body.
func requestBody(tb testing.TB, path string) []byte {
	tb.Helper()
	h, err := model.LoadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	msgs, err := model.ToJSON(h)
	if err != nil {
		tb.Fatal(err)
	}
	return append(append([]byte(`{"model":"gpt-x","stream":true,"messages":`), msgs...), `,"temperature":0}`...)
}

// allTranscripts returns the shared transcripts, or the shipped ones.
func allTranscripts(tb testing.TB) []string {
	if dir, ok := transcripts.SharedDir(); ok {
		if files, _ := filepathGlob(dir); len(files) > 0 {
			return files
		}
	}
	return transcripts.Shipped(tb)
}

// FuzzParse checks Parse against encoding/json and package model (see
// checkSame), seeded with every transcript as a request body and with
// bodies that stress the scanner.
func FuzzParse(f *testing.F) {
	f.Add([]byte(body))
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"a\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}]}`,
		`{"messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
		`{"Messages":[{"role":"user","content":"x"}]}`,
		`{"messages":[{"Role":"user","content":"x"}]}`,
		`{"messages":[{"role":"user","content":"x","role":"system"}]}`,
		`{"messages":[{"role":"user","content":"\xff"}]}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"a","content":""}]}`,
		`{"messages":[{"role":"assistant","content":null,"refusal":"no","name":"bot"}]}`,
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
		checkSame(t, data)
	})
}

func filepathGlob(dir string) ([]string, error) { return filepath.Glob(filepath.Join(dir, "*.json")) }

// TestParseTranscripts parses every transcript as a request body: the fast
// paths take them all, and agree with encoding/json and model.
func TestParseTranscripts(t *testing.T) {
	for _, path := range allTranscripts(t) {
		data := requestBody(t, path)
		b := &Body{data: data}
		if !b.fastSplit() {
			t.Errorf("%s: the scanner did not take the body", filepath.Base(path))
		}
		if _, ok := fastDecode(b.raws); !ok {
			t.Errorf("%s: the fast decoder did not take the messages", filepath.Base(path))
		}
		checkSame(t, data)
	}
}

// fastDecode decodes messages with fastMessage alone, one by one, and
// reports false when one is not of a shape it takes.
func fastDecode(raws []json.RawMessage) ([]processor.Message, bool) {
	out := make([]processor.Message, len(raws))
	var nm namer // tool names by call id
	for i, raw := range raws {
		s := scanner{data: raw}
		m, ok := fastMessage(&s, &nm, out[:i])
		if s.ws(); !ok || s.pos != len(raw) {
			return nil, false
		}
		out[i] = m
	}
	return out, true
}
