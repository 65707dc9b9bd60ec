package window

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPoolFair queues many jobs of one payer, then one of another, on a
// pool of one worker kept busy meanwhile: the other's runs second, not
// after the first payer's backlog.
func TestPoolFair(t *testing.T) {
	p := NewPool(PoolOptions{Workers: 1})
	defer p.Close(context.Background())
	busy, started := make(chan struct{}), make(chan struct{})
	if !p.Go("x", func(context.Context) { close(started); <-busy }) {
		t.Fatal("the first job refused")
	}
	<-started // the worker is taken: the jobs below all wait in the queue
	var mu sync.Mutex
	var order []string
	var done sync.WaitGroup
	add := func(payer, name string) {
		done.Add(1)
		if !p.Go(payer, func(context.Context) {
			defer done.Done()
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}) {
			t.Fatalf("%s refused", name)
		}
	}
	for i := range 5 {
		add("a", "a"+string(rune('0'+i)))
	}
	add("b", "b0")
	close(busy)
	done.Wait()
	if diff := cmp.Diff([]string{"a0", "b0", "a1", "a2", "a3", "a4"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestPoolBounds: the queue and each payer's share of it are bounded, and a
// closed pool takes nothing.
func TestPoolBounds(t *testing.T) {
	p := NewPool(PoolOptions{Workers: 1, Queue: 3, QueuePerPayer: 2})
	block := make(chan struct{})
	started := make(chan struct{})
	if !p.Go("a", func(context.Context) { close(started); <-block }) {
		t.Fatal("first job refused")
	}
	<-started // the worker is busy: the rest waits
	var got []bool
	for _, payer := range []string{"a", "a", "a", "b", "c"} {
		got = append(got, p.Go(payer, func(context.Context) {}))
	}
	if diff := cmp.Diff([]bool{true, true, false, true, false}, got); diff != "" {
		t.Errorf("taken (-want +got):\n%s", diff)
	}
	close(block)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Go("a", func(context.Context) {}) {
		t.Error("a closed pool took a job")
	}
}

// TestPoolClose: Close gives the jobs still waiting an ended context,
// waits for a running one until its context ends, then ends the running
// job's context.
func TestPoolClose(t *testing.T) {
	p := NewPool(PoolOptions{Workers: 1})
	running := make(chan struct{})
	var stopped error
	if !p.Go("a", func(ctx context.Context) { close(running); <-ctx.Done(); stopped = ctx.Err() }) {
		t.Fatal("refused")
	}
	<-running
	var waiting error
	p.Go("a", func(ctx context.Context) { waiting = ctx.Err() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the deadline: the running job had to be stopped", err)
	}
	if waiting == nil || stopped == nil {
		t.Errorf("waiting job's context: %v; running job's: %v; want both ended", waiting, stopped)
	}
}
