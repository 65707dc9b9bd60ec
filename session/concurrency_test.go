package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abridge-go/abridge/processor"
)

// TestConcurrentWriters has two writers, each on its own store handle on
// the same database, append to one session while compacting it now and
// then. No message is lost or duplicated: the transcript holds each
// message once, each writer's in its order; and every message is either in
// the working history (once) or covered by a compaction.
func TestConcurrentWriters(t *testing.T) {
	const (
		writers   = 2
		perWriter = 60
	)
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		openSession(t, openStore(t, dsn), "busy") // create it before the race
		var (
			wg        sync.WaitGroup
			conflicts [writers]int
			errs      = make(chan error, writers)
		)
		for w := range writers {
			s := openSession(t, openStore(t, dsn), "busy")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWriter {
					m := processor.UserMessage(fmt.Sprintf("w%d m%d", w, i))
					if err := s.Append(ctx, m); err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond) // think time, as an agent waits for its model
					if i%10 != 9 {
						continue
					}
					// Compact: drop the oldest half of the working history
					// behind a marker, retrying on conflict with a fresh read.
					for {
						cur, err := s.Working(ctx)
						if err != nil {
							errs <- err
							return
						}
						time.Sleep(time.Millisecond) // widen the window for the other writer
						next := append([]processor.Message{processor.UserMessage(fmt.Sprintf("marker w%d after m%d", w, i))}, cur[len(cur)/2:]...)
						err = s.Replace(ctx, next)
						if errors.Is(err, ErrConflict) {
							conflicts[w]++
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		t.Logf("conflicts met and retried: %v", conflicts)

		s := openSession(t, openStore(t, dsn), "busy")
		tr := transcript(t, s)
		if len(tr) != writers*perWriter {
			t.Errorf("transcript holds %d messages, want %d", len(tr), writers*perWriter)
		}
		next := make([]int, writers)
		switches, last := 0, -1
		defer func() { t.Logf("the transcript switches writer %d times", switches) }()
		for _, e := range tr {
			var w, i int
			if _, err := fmt.Sscanf(e.Message.Text(), "w%d m%d", &w, &i); err != nil {
				t.Fatalf("seq %d: unexpected message %q", e.Seq, e.Message.Text())
			}
			if i != next[w] {
				t.Errorf("seq %d: writer %d's message %d, want its message %d (lost, duplicated or reordered)", e.Seq, w, i, next[w])
			}
			next[w] = i + 1
			if w != last {
				switches, last = switches+1, w
			}
		}

		// Every transcript message is in the working history or covered.
		inWorking := map[int64]bool{}
		for _, seq := range workingSeqs(t, s.st, s) {
			if inWorking[seq] {
				t.Errorf("seq %d is twice in the working history", seq)
			}
			inWorking[seq] = true
		}
		for _, e := range tr {
			if e.Compacted == inWorking[e.Seq] {
				t.Errorf("seq %d: compacted %v, in the working history %v", e.Seq, e.Compacted, inWorking[e.Seq])
			}
		}
		// The working history's markers and messages are what the last
		// compactions left: only markers are synthetic.
		for _, m := range working(t, s) {
			if text := m.Text(); !strings.HasPrefix(text, "w") && !strings.HasPrefix(text, "marker") {
				t.Errorf("unexpected working message %q", text)
			}
		}
		comps := compactions(t, s)
		if want := writers * perWriter / 10; len(comps) != want {
			t.Errorf("%d compactions, want %d", len(comps), want)
		}
		for _, c := range comps {
			if !slices.IsSorted(c.Covered) || len(c.Inserted) != 1 {
				t.Errorf("compaction %d: covered %v, inserted %d messages", c.ID, c.Covered, len(c.Inserted))
			}
		}
	})
}
