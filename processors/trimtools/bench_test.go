package trimtools_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// The benchmarks simulate an agent's request on the longest transcript:
// one op is one run of the processor (or chain) over the whole history
// before a model request.
//
//   - raw: the host keeps the unprocessed history, so every old long tool
//     return is trimmed again on every request (the worst case);
//   - stored: the host stores the processed history, as the agent does, so
//     old returns are already trimmed and only new ones need work.

func benchHistories(b *testing.B, p processor.Processor) map[string][]processor.Message {
	b.Helper()
	name, raw := longest(b)
	stored, err := p.Process(context.Background(), raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d messages", name, len(raw))
	return map[string][]processor.Message{"raw": raw, "stored": stored}
}

func runBench(b *testing.B, p processor.Processor) {
	hs := benchHistories(b, p)
	for _, name := range []string{"raw", "stored"} {
		h := hs[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := p.Process(ctx, h); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared, loaded machine wall time overstates the cost;
			// the process's CPU time per op (GC included) does not.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func BenchmarkTrimtools(b *testing.B) {
	runBench(b, trimtools.New(trimtools.Options{}))
}

// BenchmarkChain runs trimtools and a second processor in a chain, which
// also validates the history after each of them.
func BenchmarkChain(b *testing.B) {
	b.Run("trimtools+func", func(b *testing.B) {
		// A small custom processor: drops Thinking parts from old responses.
		dropThinking := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
			var out []processor.Message
			for i, m := range h[:len(h)-1] {
				if m.Kind != processor.Response {
					continue
				}
				var parts []processor.Part
				for j, p := range m.Parts {
					if _, ok := p.(processor.Thinking); ok && parts == nil {
						parts = append(make([]processor.Part, 0, len(m.Parts)), m.Parts[:j]...)
					} else if !ok && parts != nil {
						parts = append(parts, p)
					}
				}
				if parts == nil {
					continue
				}
				if out == nil {
					out = append([]processor.Message(nil), h...)
				}
				out[i].Parts = parts
			}
			if out == nil {
				return h, nil
			}
			return out, nil
		})
		runBench(b, processor.Chain(trimtools.New(trimtools.Options{}), dropThinking))
	})
	b.Run("trimtools+trimtools", func(b *testing.B) {
		runBench(b, processor.Chain(
			trimtools.New(trimtools.Options{}),
			trimtools.New(trimtools.Options{MaxChars: 500, KeepLast: 40}),
		))
	})
}

// cpuTime returns the user and system CPU time the process has used, in
// nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
