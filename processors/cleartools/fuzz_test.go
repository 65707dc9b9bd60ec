package cleartools_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/cleartools"
	"github.com/abridge-go/abridge/summary"
)

// FuzzCleartools runs the clearer on random valid histories with random
// options, the fuzzed content in the first tool return, and checks: the
// output is valid, the last request untouched, only tool returns changed,
// each into the placeholder of what it held (tool, call id and size kept),
// no output of the last KeepRounds rounds cleared, clearing idempotent, a
// fresh clearer's result the same, and the same results request by request
// in the three host modes.
func FuzzCleartools(f *testing.F) {
	f.Add(uint64(1), uint16(40), int8(0), int16(0), "")
	f.Add(uint64(2), uint16(120), int8(1), int16(-1), strings.Repeat("output line\n", 400))
	f.Add(uint64(3), uint16(9), int8(3), int16(300), "[abridge: the output of x (call y) was cleared to save context: 12 characters]")
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, keepRounds int8, minSaving int16, content string) {
		h := processortest.WithContent(processortest.RandomHistory(rand.New(rand.NewPCG(seed, uint64(n))), int(n%160)), content)
		if processor.Validate(h) != nil {
			t.Skip("not a valid history")
		}
		opts := cleartools.Options{KeepRounds: int(keepRounds), MinSaving: int(minSaving)}
		newClearer := func() processor.Processor { return cleartools.New(opts) }
		out, err := processortest.CheckRewrite(newClearer, h)
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			checkCleared(t, i, h[i], out[i])
		}
		checkLastRounds(t, h, out, max(int(keepRounds), 1), keepRounds == 0)
		if err := processortest.HostModes(newClearer, processortest.Prefix(h, 40)); err != nil {
			t.Fatal(err)
		}
	})
}

// checkCleared checks that out is in, or in with tool returns replaced by
// their placeholders.
func checkCleared(t *testing.T, i int, in, out processor.Message) {
	t.Helper()
	if processor.Equal(in, out) {
		return
	}
	if in.Kind != out.Kind || len(in.Parts) != len(out.Parts) || in.Meta != out.Meta {
		t.Fatalf("message %d changed beyond its tool returns", i)
	}
	for j := range in.Parts {
		if processor.Equal(processor.NewRequest(in.Parts[j]), processor.NewRequest(out.Parts[j])) {
			continue
		}
		r, ok := in.Parts[j].(processor.ToolReturn)
		c, ok2 := out.Parts[j].(processor.ToolReturn)
		if !ok || !ok2 || c.ToolCallID != r.ToolCallID || c.ToolName != r.ToolName {
			t.Fatalf("message %d part %d: a %s part changed", i, j, in.Parts[j].PartKind())
		}
		n, isPlaceholder := summary.ParsePlaceholder(c)
		if !isPlaceholder || n != processor.PartChars(r) || len(c.Content) >= processor.PartChars(r) {
			t.Fatalf("message %d part %d: %q is not the shorter placeholder of %d characters", i, j, c.Content, processor.PartChars(r))
		}
	}
}

// checkLastRounds checks that the returns of the last keep rounds are
// untouched (with the default, 3).
func checkLastRounds(t *testing.T, in, out []processor.Message, keep int, def bool) {
	t.Helper()
	if def {
		keep = cleartools.DefaultKeepRounds
	}
	rounds := 0
	for i := len(in) - 2; i >= 0 && rounds < keep; i-- {
		if in[i].HasToolCalls() {
			rounds++
		}
		if !processor.Equal(in[i], out[i]) && rounds < keep {
			t.Fatalf("message %d, in the last %d rounds, was cleared", i, keep)
		}
	}
}
