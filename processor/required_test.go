package processor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

func TestIsRequired(t *testing.T) {
	var rs recorders
	a, b := rs.new("a", nil), rs.new("b", nil)
	for _, tc := range []struct {
		name string
		p    processor.Processor
		want bool
	}{
		{"nil", nil, false},
		{"a processor", a, false},
		{"a chain", processor.Chain(a, b), false},
		{"a marked processor", processor.Required(a), true},
		{"a chain holding a marked processor", processor.Chain(a, processor.Required(b)), true},
		{"a marked chain", processor.Required(processor.Chain(a, b)), true},
		{"a chain holding a marked chain", processor.Chain(a, processor.Chain(processor.Required(b))), true},
		{"marked twice", processor.Required(processor.Required(a)), true},
		// When wraps it: the mark is hidden, as documented.
		{"a marked processor inside When", processor.When(func(context.Context, []processor.Message) bool { return true }, processor.Required(a)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := processor.IsRequired(tc.p); got != tc.want {
				t.Errorf("IsRequired = %v, want %v", got, tc.want)
			}
		})
	}
	if processor.Required(nil) != nil {
		t.Error("Required(nil) is not nil")
	}
	// Marking a chain marks each of its processors, in their places.
	ps := processor.Unchain(processor.Required(processor.Chain(a, b)))
	if len(ps) != 2 || !processor.IsRequired(ps[0]) || !processor.IsRequired(ps[1]) {
		t.Errorf("Unchain(Required(Chain(a, b))) = %v, want a and b each marked", ps)
	}
	if m := processor.Required(a); processor.Required(m) != m {
		t.Error("Required of a marked processor marks it again")
	}
}

// A marked processor runs as the one it marks, and a chain's error names
// that one.
func TestRequiredRuns(t *testing.T) {
	var rs recorders
	boom := errors.New("boom")
	fail := func([]processor.Message) ([]processor.Message, error) { return nil, boom }
	c := processor.Chain(processor.Required(rs.new("a", nil)), processor.Required(rs.new("b", fail)))
	_, err := c.Process(context.Background(), []processor.Message{user})
	if diff := cmp.Diff([]string{"a(1)", "b(1)"}, rs.log); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	var ce *processor.ChainError
	if !errors.As(err, &ce) || ce.Position != 1 || ce.Processor != "*processor_test.recorder" || !errors.Is(err, boom) {
		t.Errorf("error = %#v, want a *ChainError at position 1 naming *processor_test.recorder and wrapping boom", err)
	}
}

func TestRequiredConformance(t *testing.T) {
	processortest.Run(t, func(*testing.T) processor.Processor {
		return processor.Required(trimtools.New(trimtools.Options{}))
	})
}

// compactor is a processor that is also a compactor, as the window is.
type compactor struct{ name string }

func (c *compactor) Process(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	return h, nil
}

func (c *compactor) Compact(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	return h, nil
}

type compactorI interface {
	Compact(ctx context.Context, h []processor.Message) ([]processor.Message, error)
}

func TestLast(t *testing.T) {
	var rs recorders
	a := rs.new("a", nil)
	first, second := &compactor{"first"}, &compactor{"second"}
	for _, tc := range []struct {
		name string
		p    processor.Processor
		want *compactor
	}{
		{"nil", nil, nil},
		{"none", processor.Chain(a, a), nil},
		{"the processor itself", first, first},
		{"in a chain", processor.Chain(a, first, a), first},
		{"the last of two", processor.Chain(first, a, processor.Chain(second)), second},
		{"marked required", processor.Chain(a, processor.Required(first)), first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := processor.Last[compactorI](tc.p)
			if ok != (tc.want != nil) {
				t.Fatalf("found = %v, want %v", ok, tc.want != nil)
			}
			if ok && got.(*compactor) != tc.want {
				t.Errorf("found %s, want %s", got.(*compactor).name, tc.want.name)
			}
		})
	}
}
