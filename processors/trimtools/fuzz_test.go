package trimtools_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// FuzzTrimtools runs the trimmer on random valid histories (up to 63
// messages, which reach past any KeepLast that matters), with the fuzzed
// content placed in the first tool return, and checks its invariants: valid
// output, last request intact, input untouched, only tool returns changed,
// each keeping its tool and call ID, no tool return outside the last
// KeepLast messages longer than the cap, trimming idempotent, and the same
// result from a fresh trimmer; then it replays the history request by
// request in the three host modes, each result scribbled over by its
// owner, and checks they all get the same results (processortest.HostModes).
func FuzzTrimtools(f *testing.F) {
	f.Add(uint64(1), uint16(40), int16(0), int8(0), "")
	f.Add(uint64(2), uint16(200), int16(150), int8(1), strings.Repeat("語😀x", 30))
	f.Add(uint64(3), uint16(3), int16(-1), int8(-2), "\xff\xfe\x80")
	f.Add(uint64(4), uint16(90), int16(100), int8(5), strings.Repeat("é", 101))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, maxChars int16, keepLast int8, content string) {
		h := processortest.WithContent(processortest.RandomHistory(rand.New(rand.NewPCG(seed, uint64(n))), int(n%64)), content)
		opts := trimtools.Options{MaxChars: int(maxChars), KeepLast: int(keepLast)}
		newTrimmer := func() processor.Processor { return trimtools.New(opts) }
		out, err := processortest.CheckRewrite(newTrimmer, h)
		if err != nil {
			t.Fatal(err)
		}
		tr := trimtools.New(opts)
		end := len(h) - tr.KeepLast()
		for i := range out {
			if i >= end || tr.MaxChars() < 0 {
				if !processor.Equal(out[i], h[i]) {
					t.Fatalf("message %d changed though it is kept", i)
				}
				continue
			}
			checkMessage(t, i, h[i], out[i], tr.MaxChars())
		}
		// The host modes on the first 12 messages at most: replaying is
		// quadratic in the history's length, and the fuzzer runs this
		// body thousands of times to minimize each new input (for up to
		// -fuzzminimizetime, a minute by default), so a slow body stalls
		// it: with 40 messages and histories of up to 200, it made 30
		// executions in 40 seconds.
		if err := processortest.HostModes(newTrimmer, processortest.Prefix(h, 12)); err != nil {
			t.Fatal(err)
		}
	})
}

// checkMessage checks one trimmed-or-not message against its input.
func checkMessage(t *testing.T, i int, in, out processor.Message, maxChars int) {
	t.Helper()
	if len(in.Parts) != len(out.Parts) {
		t.Fatalf("message %d: %d parts, want %d", i, len(out.Parts), len(in.Parts))
	}
	inMeta, outMeta := in, out
	inMeta.Parts, outMeta.Parts = nil, nil
	if !processor.Equal(inMeta, outMeta) {
		t.Fatalf("message %d: metadata changed", i)
	}
	for j, p := range out.Parts {
		r, ok := p.(processor.ToolReturn)
		orig, wasReturn := in.Parts[j].(processor.ToolReturn)
		if !ok || !wasReturn {
			if !processor.Equal(processor.NewRequest(p), processor.NewRequest(in.Parts[j])) {
				t.Fatalf("message %d part %d: a %s part changed", i, j, p.PartKind())
			}
			continue
		}
		if r.ToolName != orig.ToolName || r.ToolCallID != orig.ToolCallID {
			t.Fatalf("message %d part %d: tool or call ID changed", i, j)
		}
		if n := utf8.RuneCountInString(r.ToolReturnContent()); n > maxChars {
			t.Fatalf("message %d part %d: %d characters, limit %d", i, j, n, maxChars)
		}
		if r.ToolReturnContent() != orig.ToolReturnContent() {
			if !strings.Contains(r.Content, " bytes trimmed by abridge ...]") {
				t.Fatalf("message %d part %d: content changed without a note", i, j)
			}
			if len(r.Content) > maxChars {
				t.Fatalf("message %d part %d: trimmed to %d bytes, limit %d", i, j, len(r.Content), maxChars)
			}
		}
	}
}
