package window

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// FuzzWindow runs the window, with the LLM summarizer over a recording
// model, on random histories and random settings (facts, the
// summarizer's clip, and summaries written in the foreground or ahead
// included), and checks the
// invariants: the output is valid, the head and the last request are
// intact, no tool call is separated from its returns, and the input is
// untouched. It checks the results against fresh windows too: the same
// history passed again gets what a fresh window gives it once the first
// result has been scribbled over by its owner, and the history replayed
// request by request gets the same results in the three host modes
// (processortest.HostModes).
func FuzzWindow(f *testing.F) {
	for i := range uint64(8) {
		f.Add(i, i*7919, uint8(10+i*7), int8(i%4-1), uint8(i%3), false)
		f.Add(i+100, i, uint8(60+i), int8(6), uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, size uint8, maxMessages int8, turns uint8, compact bool) {
		r := rand.New(rand.NewPCG(seed1, seed2))
		h := processortest.RandomHistory(r, int(size))
		if err := processor.Validate(h); err != nil {
			t.Skip("generator gave an invalid history")
		}
		sum, _ := recorder(model.RespondText("S."))
		// The facts' bound and the summarizer's clip vary with the seed
		// (the corpus keeps its shape).
		opts := Options{MaxMessages: int(maxMessages), KeepUserTurns: int(turns % 3), Summarizer: sum,
			FactsChars: []int{0, -1, 250, 5000}[seed2%4], SummaryClip: []int{0, -1, 40}[seed2/4%3]}
		if maxMessages == 0 {
			opts.ContextWindow = 200 + int(size)*10
		}
		// Summaries written in the foreground, or ahead by a runner that
		// writes them at once (so every host mode sees them ready).
		switch seed1 % 3 {
		case 0:
			opts.Ahead = -1
		case 1:
			opts.Background = inline{}
		case 2:
			opts.Background, opts.Ahead = inline{}, 60
		}
		w := New(opts)
		in := processortest.Clone(h)
		check := func(in, out []processor.Message, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("Process: %v", err)
			}
			if err := processor.Validate(out); err != nil {
				t.Fatalf("invalid output: %v", err)
			}
			if err := processortest.Pairs(out); err != nil {
				t.Fatalf("pairs: %v", err)
			}
			if !processor.Equal(out[len(out)-1], h[len(h)-1]) {
				t.Fatal("last request altered")
			}
			head := w.split(h, false).head
			if head > len(out) {
				t.Fatalf("output of %d messages shorter than the head %d", len(out), head)
			}
			if err := processortest.Diff(h[:head], out[:head]); err != nil {
				t.Fatalf("head altered: %v", err)
			}
			if err := processortest.Diff(h, in); err != nil {
				t.Fatalf("input modified: %v", err)
			}
		}
		process := w.Process
		if compact {
			process = w.Compact
		}
		out, err := process(context.Background(), in)
		check(in, out, err)
		// Again on the same history, decoded afresh, once the owner of the
		// first result has scribbled over it (and over the input it
		// shares messages with): the result is the one a fresh window
		// gives the same two histories, left alone.
		want := processortest.Clone(out)
		processortest.Scribble(out)
		out = want
		again := processortest.Clone(h)
		out2, err := process(context.Background(), again)
		check(again, out2, err)
		ref := New(opts)
		refProcess := ref.Process
		if compact {
			refProcess = ref.Compact
		}
		if _, err := refProcess(context.Background(), processortest.Clone(h)); err != nil {
			t.Fatal(err)
		}
		want2, err := refProcess(context.Background(), processortest.Clone(h))
		if err != nil {
			t.Fatal(err)
		}
		if err := processortest.Diff(want2, out2); err != nil {
			t.Fatalf("the same history again differs from a fresh window's result: %v", err)
		}
		if len(out) > 1 {
			grown := append(processortest.Clone(out), processor.TextMessage("ok"), processor.UserMessage("next"))
			out3, err := w.Process(context.Background(), grown)
			if err != nil {
				t.Fatal(err)
			}
			if err := processor.Validate(out3); err != nil {
				t.Fatalf("invalid output on the grown history: %v", err)
			}
		}
		if err := processortest.HostModes(func() processor.Processor {
			s, _ := recorder(model.RespondText("S."))
			o := opts
			o.Summarizer = s
			return New(o)
		}, h); err != nil {
			t.Fatal(err)
		}
	})
}
