package processortest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

var identity = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
	if len(h) == 0 {
		return nil, processor.ErrEmptyHistory
	}
	return h, nil
})

func TestRunIdentity(t *testing.T) {
	Run(t, func(*testing.T) processor.Processor { return identity })
}

func TestRunEmptyChainWithExtraHistories(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	Run(t, func(*testing.T) processor.Processor { return processor.Chain() },
		WithHistories(RandomHistory(r, 30), RandomHistory(r, 5)), WithGoroutines(3))
}

func TestFixturesAreValid(t *testing.T) {
	// CodingSession ends with the agent's answer: valid once the next
	// request follows.
	coding := append(CodingSession(), processor.UserMessage("Fix the test."))
	for _, f := range append(Fixtures(), Fixture{"coding-session", coding}) {
		if err := processor.Validate(f.History); err != nil {
			t.Errorf("fixture %s: %v", f.Name, err)
		}
		if err := Pairs(f.History); err != nil {
			t.Errorf("fixture %s: %v", f.Name, err)
		}
	}
}

// broken processors, each breaking one rule.
var (
	mutator = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) == 0 {
			return nil, processor.ErrEmptyHistory
		}
		h[0].Parts[0] = processor.UserPrompt{Content: "mutated"}
		return h, nil
	})
	appender = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) == 0 {
			return nil, processor.ErrEmptyHistory
		}
		scratch := append(h, processor.UserMessage("scratch"))
		return scratch[:len(h)], nil
	})
	// returnDropper drops the first request holding a tool return.
	returnDropper = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) == 0 {
			return nil, processor.ErrEmptyHistory
		}
		for i, m := range h[:len(h)-1] {
			for _, p := range m.Parts {
				if _, ok := p.(processor.ToolReturn); ok {
					return append(append([]processor.Message(nil), h[:i]...), h[i+1:]...), nil
				}
			}
		}
		return h, nil
	})
	lastReplacer = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) == 0 {
			return nil, processor.ErrEmptyHistory
		}
		out := append([]processor.Message(nil), h...)
		out[len(out)-1] = processor.UserMessage("replaced")
		return out, nil
	})
	panicker = processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		panic("boom")
	})
	cancelBreaker = processor.Func(func(ctx context.Context, h []processor.Message) ([]processor.Message, error) {
		if ctx.Err() != nil {
			return nil, errors.New("gave up")
		}
		return identity(ctx, h)
	})
	emptyAccepter = processor.Func(func(_ context.Context, h []processor.Message) ([]processor.Message, error) {
		return h, nil
	})
)

// rewriter changes the first message of histories longer than one message
// and honours cancellation only when honour is set.
func rewriter(honour bool) processor.Processor {
	return processor.Func(func(ctx context.Context, h []processor.Message) ([]processor.Message, error) {
		if len(h) == 0 {
			return nil, processor.ErrEmptyHistory
		}
		if honour {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("rewrite: %w", err)
			}
		}
		if len(h) == 1 {
			return h, nil
		}
		out := append([]processor.Message(nil), h...)
		out[0] = processor.UserMessage("rewritten")
		return out, nil
	})
}

func TestChecksCatchBrokenProcessors(t *testing.T) {
	loop := longToolLoop()
	tests := []struct {
		name    string
		p       processor.Processor
		check   func(processor.Processor, []processor.Message, config) error
		cfg     config
		wantErr string // substring of the error; "" means no error
	}{
		{"identity untouched", identity, checkUntouched, config{}, ""},
		{"mutator", mutator, checkUntouched, config{}, "input modified: message 0"},
		{"appender", appender, checkUntouched, config{}, "spare capacity"},
		{"dropper valid", returnDropper, checkValid, config{}, "tool call without a tool return"},
		{"dropper pairs", returnDropper, checkPairs, config{}, "answered 0 times"},
		{"last replaced", lastReplacer, checkLast, config{}, "last request altered"},
		{"panic", panicker, checkValid, config{}, "Process panicked: boom"},
		{"cancel other error", cancelBreaker, checkCancel, config{}, "does not match context.Canceled"},
		{"cancel identity loose", identity, checkCancel, config{}, ""},
		{"cancel identity required", identity, checkCancel, config{requireCancel: true}, ""},
		{"cancel ignored required", rewriter(false), checkCancel, config{requireCancel: true}, "RequireCancel is set"},
		{"cancel ignored loose", rewriter(false), checkCancel, config{}, ""},
		{"cancel honoured required", rewriter(true), checkCancel, config{requireCancel: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.p, loop, tt.cfg)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Errorf("error = %q, want one containing %q", got, tt.wantErr)
			}
		})
	}
}

func TestCheckEmpty(t *testing.T) {
	if err := checkEmpty(identity); err != nil {
		t.Errorf("identity: %v", err)
	}
	if err := checkEmpty(emptyAccepter); err == nil {
		t.Error("a processor accepting an empty history passed")
	}
	if err := checkEmpty(panicker); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("panicker: error = %v, want a panic report", err)
	}
}

func TestCheckConcurrent(t *testing.T) {
	hs := [][]processor.Message{longToolLoop(), parallelCalls(), short()}
	if errs := checkConcurrent(identity, hs, 4); len(errs) != 0 {
		t.Errorf("identity: %v", errors.Join(errs...))
	}
	errs := checkConcurrent(lastReplacer, hs, 4)
	if len(errs) != 4*len(hs) {
		t.Errorf("lastReplacer: %d errors, want %d", len(errs), 4*len(hs))
	}
}

func TestPairs(t *testing.T) {
	resp := processor.NewResponse(call("x", "bash", "{}"))
	tests := []struct {
		name    string
		h       []processor.Message
		wantErr string
	}{
		{"answered", []processor.Message{resp, processor.NewRequest(ret("x", "bash", "ok"))}, ""},
		{"answered by retry", []processor.Message{resp, processor.NewRequest(processor.RetryPrompt{ToolCallID: "x", Content: "no"})}, ""},
		{"unanswered", []processor.Message{resp, processor.UserMessage("hi")}, "answered 0 times"},
		{"answered twice", []processor.Message{resp, processor.NewRequest(ret("x", "bash", "1")), processor.NewRequest(ret("x", "bash", "2"))}, "answered 2 times"},
		{"answer after next response", []processor.Message{resp, processor.NewResponse(processor.Text{Content: "t"}), processor.NewRequest(ret("x", "bash", "1"))}, "answered 0 times"},
		{"wrong tool", []processor.Message{resp, processor.NewRequest(ret("x", "python", "1"))}, `answers it as "python"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Pairs(tt.h)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Errorf("Pairs = %q, want an error containing %q", got, tt.wantErr)
			}
		})
	}
}

func TestRandomHistory(t *testing.T) {
	var long, multibyte, jsonReturns, multiPart, retries, system int
	for seed := range uint64(200) {
		n := int(seed % 90)
		h := RandomHistory(rand.New(rand.NewPCG(seed, 1)), n)
		if err := processor.Validate(h); err != nil {
			t.Fatalf("seed %d: invalid history: %v", seed, err)
		}
		if len(h) < max(n, 1) || len(h) > max(n, 1)+4 {
			t.Errorf("seed %d: %d messages, want about %d", seed, len(h), n)
		}
		if again := RandomHistory(rand.New(rand.NewPCG(seed, 1)), n); Diff(h, again) != nil {
			t.Errorf("seed %d: not deterministic: %v", seed, Diff(h, again))
		}
		for _, m := range h {
			if processor.Chars(m) > 5000 {
				long++
			}
			if utf8.RuneCountInString(m.Text()) < len(m.Text()) {
				multibyte++
			}
			for _, p := range m.Parts {
				switch p := p.(type) {
				case processor.ToolReturn:
					if p.JSON != nil {
						jsonReturns++
					}
					if p.Contents != nil {
						multiPart++
					}
				case processor.UserPrompt:
					if p.Contents != nil {
						multiPart++
					}
				case processor.RetryPrompt:
					retries++
				case processor.SystemPrompt:
					system++
				}
			}
		}
	}
	for name, n := range map[string]int{"long": long, "multibyte": multibyte, "json": jsonReturns, "multi-part": multiPart, "retry": retries, "system": system} {
		if n == 0 {
			t.Errorf("no %s content in 200 random histories", name)
		}
	}
}

func TestClone(t *testing.T) {
	h := append(jsonReturns(), multiPart()...)
	h = append(h, processor.NewRequest(
		processor.ToolReturn{ToolCallID: "e", JSON: json0(), Contents: []string{}},
		processor.UserPrompt{Contents: []processor.UserContent{}},
	), processor.Message{Kind: processor.Request})
	c := Clone(h)
	if diff := cmp.Diff(h, c); diff != "" {
		t.Fatalf("Clone differs (-want +got):\n%s", diff)
	}
	if err := Diff(h, c); err != nil {
		t.Fatal(err)
	}
	// Writing through the copy must not reach the original.
	c[2].Parts[0].(processor.ToolReturn).JSON[0] = 'X'
	c[9].Parts[0].(processor.ToolReturn).Contents[0] = "changed"
	c[7].Parts[0].(processor.UserPrompt).Contents[1].Data[0] = 'X'
	c[0].Parts[0] = processor.UserPrompt{Content: "changed"}
	if err := Diff(jsonReturns(), h[:7]); err != nil {
		t.Errorf("original changed through the clone: %v", err)
	}
	if err := Diff(multiPart(), h[7:12]); err != nil {
		t.Errorf("original changed through the clone: %v", err)
	}
	if Clone(nil) != nil {
		t.Error("Clone(nil) != nil")
	}
}

func json0() []byte { return []byte{} }
