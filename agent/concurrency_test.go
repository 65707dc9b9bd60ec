package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/agent"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
)

// gate is a tool that counts the calls in flight and blocks each one until
// the test releases it, so that a test can see how many run at once
// without measuring time.
type gate struct {
	entered chan string   // receives each call's argument as it starts
	release chan struct{} // one value lets one call return
	mu      sync.Mutex
	running int
	most    int
}

func newGate() *gate {
	return &gate{entered: make(chan string, 16), release: make(chan struct{}, 16)}
}

func (g *gate) tool() agent.Tool {
	return agent.Tool{Name: "wait", Func: func(ctx context.Context, args json.RawMessage) (string, error) {
		g.mu.Lock()
		g.running++
		g.most = max(g.most, g.running)
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.running--
			g.mu.Unlock()
		}()
		g.entered <- string(args)
		select {
		case <-g.release:
			return "done " + string(args), nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
}

// calls returns n calls of the gate tool, with IDs c0… and arguments "0"….
func gateCalls(n int) processor.Message {
	cs := make([]processor.ToolCall, n)
	for i := range cs {
		cs[i] = call(fmt.Sprintf("c%d", i), "wait", fmt.Sprint(i))
	}
	return callsResponse(cs...)
}

// TestToolConcurrency runs five calls of one response with several limits:
// the calls in flight reach the limit and never pass it, and the answers
// come back in the order of the calls whatever the order they finish in.
func TestToolConcurrency(t *testing.T) {
	const calls = 5
	for _, limit := range []int{0, 1, 2, 5, 8} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			g := newGate()
			rec := model.NewRecorder(model.Respond(gateCalls(calls)), model.RespondText("all done"))
			a := agent.New(rec, agent.WithTools(g.tool()), agent.WithToolConcurrency(limit))
			type result struct {
				res *agent.Result
				err error
			}
			done := make(chan result)
			go func() {
				res, err := a.Run(context.Background(), nil, "go")
				done <- result{res, err}
			}()
			// Let the calls finish in reverse order of starting, a batch
			// at a time: wait until as many as may run have started.
			want := min(max(limit, 1), calls)
			started := 0
			for started < calls {
				batch := min(want, calls-started)
				for k := range batch {
					select {
					case <-g.entered:
					case <-time.After(10 * time.Second): // a deadlock guard, not a measure
						t.Fatalf("only %d of %d calls started while %d were running", started+k, calls, k)
					}
				}
				started += batch
				for range batch {
					g.release <- struct{}{}
				}
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if g.most != want {
				t.Errorf("at most %d calls ran at once, want %d", g.most, want)
			}
			var parts []processor.Part
			for i := range calls {
				parts = append(parts, processor.ToolReturn{ToolName: "wait", ToolCallID: fmt.Sprintf("c%d", i), Content: fmt.Sprintf("done %d", i)})
			}
			// The answers are the third message: prompt, calls, answers, text.
			if diff := cmp.Diff(processor.NewRequest(parts...), r.res.History[2]); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if err := processor.Validate(r.res.History[:3]); err != nil {
				t.Errorf("history up to the answers is invalid: %v", err)
			}
		})
	}
}

// TestToolConcurrencyCancel cancels the turn while two of four calls run:
// the running ones see the cancellation, the others are answered as not
// run, and the history stays valid.
func TestToolConcurrencyCancel(t *testing.T) {
	g := newGate()
	rec := model.NewRecorder(model.Respond(gateCalls(4)))
	a := agent.New(rec, agent.WithTools(g.tool()), agent.WithToolConcurrency(2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res *agent.Result
	var err error
	done := make(chan struct{})
	go func() {
		res, err = a.Run(ctx, nil, "go")
		close(done)
	}()
	<-g.entered
	<-g.entered
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	last := res.History[len(res.History)-1]
	var got []string
	for _, p := range last.Parts {
		r, ok := p.(processor.RetryPrompt)
		if !ok {
			t.Fatalf("answer %#v, want a retry prompt", p)
		}
		got = append(got, r.ToolCallID+": "+r.Content)
	}
	want := []string{
		"c0: tool wait: context canceled",
		"c1: tool wait: context canceled",
		"c2: Tool wait was not run: context canceled.",
		"c3: Tool wait was not run: context canceled.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if err := processor.Validate(res.History); err != nil {
		t.Errorf("history is invalid: %v", err)
	}
}

// TestToolConcurrencyPanic checks that a tool's panic reaches the caller
// of Run, after the other calls have returned.
func TestToolConcurrencyPanic(t *testing.T) {
	var finished atomic.Int32
	tools := []agent.Tool{
		{Name: "boom", Func: func(context.Context, json.RawMessage) (string, error) { panic("tool bug") }},
		{Name: "ok", Func: func(context.Context, json.RawMessage) (string, error) {
			finished.Add(1)
			return "fine", nil
		}},
	}
	rec := model.NewRecorder(model.Respond(callsResponse(call("c1", "ok", "{}"), call("c2", "boom", "{}"), call("c3", "ok", "{}"))))
	a := agent.New(rec, agent.WithTools(tools...), agent.WithToolConcurrency(3))
	defer func() {
		if r := recover(); r != "tool bug" {
			t.Errorf("recovered %v, want the tool's panic", r)
		}
		if n := finished.Load(); n != 2 {
			t.Errorf("%d other calls finished before the panic was raised, want 2", n)
		}
	}()
	_, _ = a.Run(context.Background(), nil, "go")
	t.Error("Run returned; want the tool's panic")
}
