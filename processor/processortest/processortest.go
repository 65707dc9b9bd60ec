// Package processortest checks that a [processor.Processor] honours the
// processor contract, the way testing/slogtest checks a slog.Handler. [Run]
// puts a processor through a set of histories (built-in fixtures plus any
// the caller adds) and reports every breach as a test failure; [RandomHistory],
// [WithContent], [Prefix], [Clone], [Replay], [HostModes] and [CheckRewrite] are the
// building blocks other packages' tests and fuzz targets use to write their
// own invariant checks.
package processortest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// Option configures [Run].
type Option interface {
	apply(*config)
}

type config struct {
	extra         [][]processor.Message
	requireCancel bool
	goroutines    int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithHistories adds histories to the built-in fixtures [Run] checks the
// processor on. Each must be valid ([processor.Validate]); Run fails the
// test otherwise. Run never modifies them.
func WithHistories(h ...[]processor.Message) Option {
	h = append([][]processor.Message(nil), h...)
	return optionFunc(func(c *config) { c.extra = append(c.extra, h...) })
}

// RequireCancel tightens the cancelled-context check for processors that
// wait (on a model call, say). Without it, a processor given a cancelled
// context may either fail with an error matching [context.Canceled] or
// return a valid output, since a processor that never waits has nothing to
// cancel. With it, on every history the processor changes when its context
// is live, it must fail with an error matching context.Canceled when its
// context is cancelled; histories it returns unchanged (a window below its
// trigger) are held to the looser rule.
func RequireCancel() Option {
	return optionFunc(func(c *config) { c.requireCancel = true })
}

// WithGoroutines sets how many goroutines the concurrency check runs the
// processor from at once; the default is 8.
func WithGoroutines(n int) Option {
	return optionFunc(func(c *config) { c.goroutines = n })
}

// Run checks the processors newProcessor returns against the
// [processor.Processor] contract. For each history (the built-in
// [Fixtures] and those added with [WithHistories]) it runs subtests that
// check:
//
//   - input-untouched: Process modifies neither the slice it is given, nor
//     the spare capacity behind it, nor any message or part;
//   - valid-output: the output passes [processor.Validate];
//   - pairs-kept: every tool call of the output is answered exactly once,
//     by a return naming the same tool;
//   - last-request-intact: the output ends with the input's last message,
//     unchanged ([processor.Equal]);
//   - cancelled-context: with a cancelled context Process fails with an
//     error matching [context.Canceled] or returns a valid output with the
//     last request intact (see [RequireCancel] for the stricter rule);
//   - ownership: the result belongs to the caller. The processor is run
//     on the first half of the history, its result scribbled over as its
//     owner may ([Scribble]), then it is run on the whole history: the
//     result must equal a fresh processor's given the same two histories;
//   - host-modes: replayed request by request, the history gets the same
//     results whether the host stores each result, keeps its full history
//     or decodes it afresh for every request ([HostModes]).
//
// It also checks that an empty (nil or zero-length) history is an error
// and not a panic, and runs one processor from several goroutines at once
// on different histories (run the tests with -race to catch shared state).
// A panic in Process is reported as a failure of the subtest it happened
// in. newProcessor is called once per subtest.
func Run(t *testing.T, newProcessor func(t *testing.T) processor.Processor, opts ...Option) {
	t.Helper()
	cfg := config{goroutines: 8}
	for _, o := range opts {
		o.apply(&cfg)
	}
	fixtures := Fixtures()
	for i, h := range cfg.extra {
		if err := processor.Validate(h); err != nil {
			t.Fatalf("processortest: history %d given to WithHistories is invalid: %v", i, err)
		}
		fixtures = append(fixtures, Fixture{Name: fmt.Sprintf("extra-%d", i), History: Clone(h)})
	}
	for _, f := range fixtures {
		t.Run(f.Name, func(t *testing.T) {
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					if err := c.fn(newProcessor(t), f.History, cfg); err != nil {
						t.Error(err)
					}
				})
			}
			fresh := func() processor.Processor { return newProcessor(t) }
			t.Run("ownership", func(t *testing.T) {
				if err := checkOwnership(fresh, f.History); err != nil {
					t.Error(err)
				}
			})
			t.Run("host-modes", func(t *testing.T) {
				if err := HostModes(fresh, f.History); err != nil {
					t.Error(err)
				}
			})
		})
	}
	t.Run("empty-input", func(t *testing.T) {
		if err := checkEmpty(newProcessor(t)); err != nil {
			t.Error(err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		hs := make([][]processor.Message, len(fixtures))
		for i, f := range fixtures {
			hs[i] = f.History
		}
		for _, err := range checkConcurrent(newProcessor(t), hs, cfg.goroutines) {
			t.Error(err)
		}
	})
}

type check struct {
	name string
	fn   func(p processor.Processor, h []processor.Message, cfg config) error
}

var checks = []check{
	{"input-untouched", checkUntouched},
	{"valid-output", checkValid},
	{"pairs-kept", checkPairs},
	{"last-request-intact", checkLast},
	{"cancelled-context", checkCancel},
}

// process calls p, turning a panic into an error.
func process(ctx context.Context, p processor.Processor, h []processor.Message) (out []processor.Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &panicError{r}
		}
	}()
	return p.Process(ctx, h)
}

// panicError reports a panic in Process.
type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprintf("Process panicked: %v", e.v) }

// sentinel fills the spare capacity behind the input, to catch a processor
// that appends to the slice it was given.
var sentinel = processor.UserMessage("processortest: spare capacity sentinel")

func checkUntouched(p processor.Processor, h []processor.Message, _ config) error {
	n := len(h)
	in := make([]processor.Message, n, n+1)
	copy(in, Clone(h))
	in[:n+1][n] = Clone([]processor.Message{sentinel})[0]
	if _, err := process(context.Background(), p, in); err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if err := Diff(h, in); err != nil {
		return fmt.Errorf("input modified: %w", err)
	}
	if !processor.Equal(in[:n+1][n], sentinel) {
		return errors.New("input modified: Process wrote into the spare capacity of the slice it was given")
	}
	return nil
}

func checkValid(p processor.Processor, h []processor.Message, _ config) error {
	out, err := process(context.Background(), p, Clone(h))
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if err := processor.Validate(out); err != nil {
		return fmt.Errorf("invalid output: %w", err)
	}
	return nil
}

func checkPairs(p processor.Processor, h []processor.Message, _ config) error {
	out, err := process(context.Background(), p, Clone(h))
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	return Pairs(out)
}

func checkLast(p processor.Processor, h []processor.Message, _ config) error {
	out, err := process(context.Background(), p, Clone(h))
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	return lastIntact(h, out)
}

func lastIntact(in, out []processor.Message) error {
	if len(out) == 0 {
		return errors.New("output is empty")
	}
	if !processor.Equal(in[len(in)-1], out[len(out)-1]) {
		return fmt.Errorf("last request altered: input ends with %s, output ends with %s",
			describe(in[len(in)-1]), describe(out[len(out)-1]))
	}
	return nil
}

func checkCancel(p processor.Processor, h []processor.Message, cfg config) error {
	require := false
	if cfg.requireCancel {
		live, err := process(context.Background(), p, Clone(h))
		if err != nil {
			return fmt.Errorf("process with a live context: %w", err)
		}
		require = Diff(h, live) != nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := process(ctx, p, Clone(h))
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return nil
	case err != nil:
		return fmt.Errorf("process with a cancelled context: error does not match context.Canceled: %w", err)
	case require:
		return errors.New("process with a cancelled context returned no error, and RequireCancel is set (the processor changes this history when its context is live)")
	}
	if err := processor.Validate(out); err != nil {
		return fmt.Errorf("process with a cancelled context: invalid output: %w", err)
	}
	return lastIntact(h, out)
}

func checkEmpty(p processor.Processor) error {
	var errs []error
	for _, h := range [][]processor.Message{nil, {}} {
		out, err := process(context.Background(), p, h)
		var pe *panicError
		if errors.As(err, &pe) {
			errs = append(errs, fmt.Errorf("Process(%#v): %w", h, err))
		} else if err == nil {
			errs = append(errs, fmt.Errorf("Process(%#v) returned %d messages and no error; an empty history is an error", h, len(out)))
		} else if len(out) > 0 {
			errs = append(errs, fmt.Errorf("Process(%#v) returned an error and %d messages", h, len(out)))
		}
	}
	return errors.Join(errs...)
}

// checkConcurrent runs one processor from n goroutines at once, each on
// every history in turn starting at a different one, and returns what went
// wrong.
func checkConcurrent(p processor.Processor, hs [][]processor.Message, n int) []error {
	n = max(n, 2)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range n {
		wg.Go(func() {
			for k := range hs {
				h := hs[(g+k)%len(hs)]
				in := Clone(h)
				out, err := process(context.Background(), p, in)
				if err == nil {
					err = processor.Validate(out)
				}
				if err == nil {
					err = lastIntact(h, out)
				}
				if err == nil {
					err = Diff(h, in)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("goroutine %d, history %d: %w", g, (g+k)%len(hs), err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// Pairs reports whether every tool call of history is answered exactly
// once, by a tool return (or retry prompt) carrying its ID in the requests
// that follow its response before the next response, and whether each
// answer that names a tool names the call's tool. It returns nil or an
// error naming the first offending message.
func Pairs(history []processor.Message) error {
	for i, m := range history {
		for _, c := range m.ToolCalls() {
			answers := 0
			for j := i + 1; j < len(history) && history[j].Kind == processor.Request; j++ {
				for _, p := range history[j].Parts {
					id, name := answer(p)
					if id != c.ToolCallID {
						continue
					}
					answers++
					if name != "" && c.ToolName != "" && name != c.ToolName {
						return fmt.Errorf("message %d: call %q is to %q but message %d answers it as %q", i, c.ToolCallID, c.ToolName, j, name)
					}
				}
			}
			if answers != 1 {
				return fmt.Errorf("message %d: call %q (%s) is answered %d times, want 1", i, c.ToolCallID, c.ToolName, answers)
			}
		}
	}
	return nil
}

func answer(p processor.Part) (id, tool string) {
	switch p := p.(type) {
	case processor.ToolReturn:
		return p.ToolCallID, p.ToolName
	case processor.RetryPrompt:
		return p.ToolCallID, p.ToolName
	}
	return "", ""
}

// Diff returns nil when got holds the same messages as want (same length,
// each message [processor.Equal]), and otherwise an error naming the first
// difference.
func Diff(want, got []processor.Message) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if !processor.Equal(want[i], got[i]) {
			return fmt.Errorf("message %d is %s, want %s", i, describe(got[i]), describe(want[i]))
		}
	}
	return nil
}

// describe summarizes a message for an error: kind, part kinds, and the
// start of its text.
func describe(m processor.Message) string {
	s := m.Kind.String() + "["
	for i, p := range m.Parts {
		if i > 0 {
			s += " "
		}
		if p == nil {
			s += "nil"
			continue
		}
		s += p.PartKind()
	}
	s += "]"
	if t := m.Text(); t != "" {
		const max = 40
		r := []rune(t)
		if len(r) > max {
			t = string(r[:max]) + "…"
		}
		s += fmt.Sprintf(" %q", t)
	}
	return s
}
