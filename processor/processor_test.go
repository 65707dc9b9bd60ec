package processor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// recorder is a processor that records its calls in a shared log and
// returns its input, or what change returns.
type recorder struct {
	name   string
	log    *[]string
	mu     *sync.Mutex
	change func([]processor.Message) ([]processor.Message, error)
}

func (r *recorder) Process(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	r.mu.Lock()
	*r.log = append(*r.log, fmt.Sprintf("%s(%d)", r.name, len(h)))
	r.mu.Unlock()
	if r.change != nil {
		return r.change(h)
	}
	return h, nil
}

type recorders struct {
	log []string
	mu  sync.Mutex
}

func (rs *recorders) new(name string, change func([]processor.Message) ([]processor.Message, error)) *recorder {
	return &recorder{name: name, log: &rs.log, mu: &rs.mu, change: change}
}

func TestChainOrderAndFlattening(t *testing.T) {
	var rs recorders
	// b drops the first exchange, so c sees its output.
	dropFirst := func(h []processor.Message) ([]processor.Message, error) { return h[2:], nil }
	c := processor.Chain(rs.new("a", nil), processor.Chain(rs.new("b", dropFirst), processor.Chain(rs.new("c", nil))), nil, processor.Chain(), rs.new("d", nil))
	h := []processor.Message{user, text, user}
	out, err := c.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a(3)", "b(3)", "c(1)", "d(1)"}, rs.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(h[2:], out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestUnchain(t *testing.T) {
	var rs recorders
	a, b, c := rs.new("a", nil), rs.new("b", nil), rs.new("c", nil)
	tests := []struct {
		name string
		p    processor.Processor
		want []processor.Processor
	}{
		{"nil", nil, nil},
		{"one processor", a, []processor.Processor{a}},
		{"a chain, nested chains flattened", processor.Chain(a, processor.Chain(b, c)), []processor.Processor{a, b, c}},
		{"an empty chain", processor.Chain(), []processor.Processor{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := processor.Unchain(tt.p)
			if len(got) != len(tt.want) {
				t.Fatalf("Unchain = %d processors, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("processor %d is %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
	// The result is the caller's: changing it leaves the chain as it was.
	ch := processor.Chain(a, b)
	processor.Unchain(ch)[0] = c
	if got := processor.Unchain(ch)[0]; got != a {
		t.Errorf("after a change to Unchain's result, the chain's first processor is %v, want a", got)
	}
}

func TestChainPositionIsFlattened(t *testing.T) {
	var rs recorders
	boom := errors.New("boom")
	fail := func([]processor.Message) ([]processor.Message, error) { return nil, boom }
	c := processor.Chain(rs.new("a", nil), processor.Chain(rs.new("b", nil), rs.new("c", nil)), processor.Chain(processor.Chain(rs.new("d", fail))))
	_, err := c.Process(context.Background(), []processor.Message{user})
	var ce *processor.ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *ChainError", err)
	}
	if diff := cmp.Diff(processor.ChainError{Position: 3, Processor: "*processor_test.recorder", Err: boom}, *ce, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("ChainError (-want +got):\n%s", diff)
	}
	if !errors.Is(err, boom) {
		t.Error("errors.Is(err, boom) = false")
	}
	if got, want := err.Error(), "processor 3 (*processor_test.recorder): boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestChainIdentity(t *testing.T) {
	c := processor.Chain()
	h := []processor.Message{user, text, user}
	out, err := c.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(h) || &out[0] != &h[0] {
		t.Error("Chain() did not return its input as is")
	}
	_, err = c.Process(context.Background(), []processor.Message{user, text})
	var ce *processor.ChainError
	if !errors.As(err, &ce) || ce.Position != -1 || !errors.Is(err, processor.ErrNoFinalRequest) {
		t.Errorf("Chain() on an invalid history: error = %v, want a *ChainError at -1 matching ErrNoFinalRequest", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "chain input: ") {
		t.Errorf("Error() = %q, want it to start with %q", err.Error(), "chain input: ")
	}
	_, err = processor.Chain(nil, processor.Chain()).Process(context.Background(), nil)
	if !errors.Is(err, processor.ErrEmptyHistory) {
		t.Errorf("Chain(nil, Chain()) on nil: error = %v, want ErrEmptyHistory", err)
	}
}

func TestChainOfOneIsItself(t *testing.T) {
	var rs recorders
	p := rs.new("p", nil)
	for _, c := range []processor.Processor{processor.Chain(p), processor.Chain(nil, p), processor.Chain(processor.Chain(p)), processor.Chain(processor.Chain(), p, nil)} {
		if c != processor.Processor(p) {
			t.Errorf("got %T %p, want the processor itself", c, c)
		}
	}
}

func TestChainCopiesItsArguments(t *testing.T) {
	var rs recorders
	ps := []processor.Processor{rs.new("a", nil), rs.new("b", nil)}
	c := processor.Chain(ps...)
	ps[0] = rs.new("x", nil)
	ps[1] = nil
	if _, err := c.Process(context.Background(), []processor.Message{user}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a(1)", "b(1)"}, rs.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestChainChecksEachProcessor(t *testing.T) {
	loop := []processor.Message{user, call("a"), rets("a"), text, processor.UserMessage("next")}
	tests := []struct {
		name   string
		change func([]processor.Message) ([]processor.Message, error)
		want   error
	}{
		{"empty output", func([]processor.Message) ([]processor.Message, error) { return nil, nil }, processor.ErrEmptyHistory},
		{"ends with a response", func(h []processor.Message) ([]processor.Message, error) { return h[:len(h)-1], nil }, processor.ErrNoFinalRequest},
		{"drops the returns", func(h []processor.Message) ([]processor.Message, error) {
			return []processor.Message{h[0], h[1], h[3], h[4]}, nil
		}, processor.ErrUnansweredToolCall},
		{"drops the call", func(h []processor.Message) ([]processor.Message, error) {
			return []processor.Message{h[0], h[2], h[3], h[4]}, nil
		}, processor.ErrOrphanToolReturn},
		{"malformed", func(h []processor.Message) ([]processor.Message, error) {
			return append([]processor.Message{{Kind: 9, Parts: []processor.Part{processor.Text{}}}}, h...), nil
		}, processor.ErrMalformed},
		{"alters the last request", func(h []processor.Message) ([]processor.Message, error) {
			out := append([]processor.Message(nil), h...)
			out[len(out)-1] = processor.UserMessage("changed")
			return out, nil
		}, processor.ErrLastRequestAltered},
		{"drops the last request", func(h []processor.Message) ([]processor.Message, error) { return h[:3], nil }, processor.ErrLastRequestAltered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs recorders
			c := processor.Chain(rs.new("ok", nil), rs.new("bad", tt.change), rs.new("after", nil))
			out, err := c.Process(context.Background(), loop)
			var ce *processor.ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v, want a *ChainError", err)
			}
			if ce.Position != 1 || !errors.Is(err, tt.want) || out != nil {
				t.Errorf("got position %d, error %v, %d messages; want position 1, an error matching %v, no messages", ce.Position, err, len(out), tt.want)
			}
			if diff := cmp.Diff([]string{"ok(5)", "bad(5)"}, rs.log); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChainInvalidInput(t *testing.T) {
	tests := []struct {
		name string
		h    []processor.Message
		want error
	}{
		{"empty", nil, processor.ErrEmptyHistory},
		{"ends with a response", []processor.Message{user, text}, processor.ErrNoFinalRequest},
		{"orphan return", []processor.Message{user, text, rets("a")}, processor.ErrOrphanToolReturn},
		{"unanswered call", []processor.Message{user, call("a"), user}, processor.ErrUnansweredToolCall},
		{"malformed", []processor.Message{processor.NewRequest()}, processor.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs recorders
			_, err := processor.Chain(rs.new("a", nil), rs.new("b", nil)).Process(context.Background(), tt.h)
			var ce *processor.ChainError
			if !errors.As(err, &ce) || ce.Position != -1 || !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want a *ChainError at position -1 matching %v", err, tt.want)
			}
		})
	}
}

func TestChainCancelled(t *testing.T) {
	var rs recorders
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := processor.Chain(rs.new("a", nil), rs.new("b", nil)).Process(ctx, []processor.Message{user})
	var ce *processor.ChainError
	if !errors.As(err, &ce) || ce.Position != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want a *ChainError at position 0 matching context.Canceled", err)
	}
	if len(rs.log) != 0 {
		t.Errorf("processors ran on a cancelled context: %v", rs.log)
	}
}

func TestChainCancelledMidway(t *testing.T) {
	var rs recorders
	ctx, cancel := context.WithCancel(context.Background())
	c := processor.Chain(rs.new("a", func(h []processor.Message) ([]processor.Message, error) { cancel(); return h, nil }), rs.new("b", nil))
	_, err := c.Process(ctx, []processor.Message{user})
	var ce *processor.ChainError
	if !errors.As(err, &ce) || ce.Position != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want a *ChainError at position 1 matching context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"a(1)"}, rs.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestWhen(t *testing.T) {
	long := func(_ context.Context, h []processor.Message) bool { return len(h) > 2 }
	tests := []struct {
		name      string
		h         []processor.Message
		wantCalls []string
	}{
		{"applies", []processor.Message{user, text, user}, []string{"p(3)"}},
		{"skips", []processor.Message{user}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs recorders
			out, err := processor.When(long, rs.new("p", nil)).Process(context.Background(), tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if &out[0] != &tt.h[0] || len(out) != len(tt.h) {
				t.Error("output is not the input")
			}
			if diff := cmp.Diff(tt.wantCalls, rs.log); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunc(t *testing.T) {
	var got []processor.Message
	f := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		got = h
		return h[len(h)-1:], nil
	})
	h := []processor.Message{user, text, processor.UserMessage("last")}
	out, err := f.Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h, got); diff != "" {
		t.Errorf("function got (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(h[2:], out); diff != "" {
		t.Errorf("Process returned (-want +got):\n%s", diff)
	}
}

func TestChainConformance(t *testing.T) {
	always := func(context.Context, []processor.Message) bool { return true }
	keep := processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) { return h, nil })
	processortest.Run(t, func(*testing.T) processor.Processor {
		return processor.Chain(&processor.Repair{}, processor.When(always, keep), trimtools.New(trimtools.Options{}))
	})
}
