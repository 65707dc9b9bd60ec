package window

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// inline is a Runner that runs each job at once: a summary written ahead
// is ready when the request that started it returns.
type inline struct{}

func (inline) Go(_ string, run func(context.Context)) bool {
	run(context.Background())
	return true
}

// slow is a summarizer that takes d on the test's clock.
type slow struct {
	s   summarizer.Summarizer
	clk *clock
	d   time.Duration
}

func (s slow) Summarize(ctx context.Context, ms []processor.Message, prev, focus string) (string, error) {
	s.clk.add(s.d)
	return s.s.Summarize(ctx, ms, prev, focus)
}

// manual is a Runner whose jobs run when the test says: the test's clock
// for summaries written ahead.
type manual struct {
	mu   sync.Mutex
	jobs []func(context.Context)
	full bool // Go refuses every job
}

func (m *manual) Go(_ string, run func(context.Context)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.full {
		return false
	}
	m.jobs = append(m.jobs, run)
	return true
}

// runAll runs the jobs queued so far, in order, and returns how many.
func (m *manual) runAll() int {
	m.mu.Lock()
	jobs := m.jobs
	m.jobs = nil
	m.mu.Unlock()
	for _, run := range jobs {
		run(context.Background())
	}
	return len(jobs)
}

// grow replays h request by request through w as an agent keeping its
// processed history does (processortest.Replay), calling each before every
// request with the history sent.
func grow(t *testing.T, w *Window, h []processor.Message, each func(sent []processor.Message)) {
	t.Helper()
	if err := processortest.Replay(context.Background(), w, h, func(_ int, out []processor.Message) error {
		if each != nil {
			each(out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAheadNoWait grows a conversation past the count trigger with the
// summaries written ahead by a runner the test drives: the summary starts
// being written once its span is known, the compaction
// applies it at once (no summarizer call in the request), and the result
// is the one a compaction in the foreground gives.
func TestAheadNoWait(t *testing.T) {
	h := conversation(30, 120) // 64 messages
	fg, fgRec := recorder(model.RespondText("Summary one."), model.RespondText("Summary two."))
	var want [][]processor.Message
	grow(t, New(Options{MaxMessages: 20, Summarizer: fg, Ahead: -1, FactsChars: -1}), h, func(out []processor.Message) {
		want = append(want, out)
	})

	bg, bgRec := recorder(model.RespondText("Summary one."), model.RespondText("Summary two."))
	var run manual
	var ev events
	w := New(Options{MaxMessages: 20, Summarizer: bg, Background: &run, OnEvent: ev.on, FactsChars: -1})
	i, calls := 0, 0
	grow(t, w, h, func(out []processor.Message) {
		if len(bgRec.Calls()) != calls {
			t.Fatalf("request %d: the summarizer was called while the request waited", i)
		}
		run.runAll() // the model's turn: the summaries being written are ready after it
		calls = len(bgRec.Calls())
		if err := processortest.Diff(want[i], out); err != nil {
			t.Fatalf("request %d: differs from the foreground's: %v", i, err)
		}
		i++
	})
	// The last summary written ahead is for a compaction the conversation
	// ends before: the one more call.
	if got, want := len(bgRec.Calls()), len(fgRec.Calls()); got != want+1 || want != 6 {
		t.Errorf("%d summarizer calls written ahead, %d in the foreground, want 7 and 6", got, want)
	}
	if n := ev.count(EventDeferred); n != 0 {
		t.Errorf("%d requests deferred, want 0", n)
	}
	for _, e := range ev.all {
		if e.Type == EventFinished && (!e.Prepared || e.Waited != 0) {
			t.Errorf("finished: Prepared %v, Waited %v; want a summary written ahead, no wait", e.Prepared, e.Waited)
		}
		// The first compaction (at 22 messages) keeps the last 10: its
		// span is known from 13 messages on.
		if e.Type == EventAheadStarted && e.MessagesBefore < 13 {
			t.Errorf("started writing ahead at %d messages, before the span was known", e.MessagesBefore)
		}
	}
	if ev.count(EventAheadStarted) != 7 || ev.count(EventAheadFinished) != 7 || ev.count(EventFinished) != 6 || ev.count(EventAheadWasted) != 0 {
		t.Errorf("events: %v", ev.types())
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if wasted := ev.last(EventAheadWasted); wasted.Reason != "closed" || wasted.SummaryInput == 0 {
		t.Errorf("the unused summary closed: %+v", wasted)
	}
}

// TestAheadDeferred: a summary not ready when the trigger fires leaves the
// history uncompacted while it is under the hard limit, and the request
// after it is ready applies it; past the hard limit a request writes the
// summary itself, and the runner's turn then finds nothing to do.
func TestAheadDeferred(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hard    int
		readyAt int // the runner runs after the request of this many messages
		waited  bool
	}{
		{"ready after two deferred requests", 30, 24, false},
		{"never ready: past the hard limit a request waits", 24, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			llm, rec := recorder(model.RespondText("Summary."))
			clk := &clock{t: time.Unix(1e9, 0)}
			sum := slow{llm, clk, 2 * time.Second}
			var run manual
			var ev events
			w := New(Options{MaxMessages: 20, HardMessages: tc.hard, Summarizer: sum, Background: &run, OnEvent: ev.on, FactsChars: -1, Now: clk.now})
			// The trigger fires at 22 messages; the conversation ends with
			// its first compaction.
			h := conversation(11, 120)
			grow(t, w, h, func(out []processor.Message) {
				if len(out) >= tc.readyAt && ev.count(EventFinished) == 0 {
					run.runAll()
				}
			})
			calls := len(rec.Calls())
			if run.runAll(); len(rec.Calls()) != calls {
				t.Errorf("the runner wrote a summary a request had written")
			}
			if got := ev.count(EventDeferred); got != 2 {
				t.Errorf("%d requests deferred, want 2 (at 22 and 24 messages): %v", got, ev.types())
			}
			fin := ev.last(EventFinished)
			if fin.Type != EventFinished || !fin.Prepared || fin.MessagesBefore != 26 {
				t.Fatalf("no compaction at 26 messages with the summary written ahead: %+v", fin)
			}
			if want := map[bool]time.Duration{true: 2 * time.Second}[tc.waited]; fin.Waited != want {
				t.Errorf("waited %v, want %v", fin.Waited, want)
			}
			if s, _ := summary.SplitFacts(fin.Summary); s != "Summary." {
				t.Errorf("summary %q", fin.Summary)
			}
			if len(rec.Calls()) != 1 {
				t.Errorf("%d summarizer calls, want 1", len(rec.Calls()))
			}
		})
	}
}

// claims is a MemoryStore with claims that expire on a test's clock, as a
// store shared by processes has them.
type claims struct {
	*MemoryStore
	clk    *clock
	mu     sync.Mutex
	held   map[Digest]claim
	claims int // successful claims
}

type claim struct {
	holder  string
	expires time.Time
}

func newClaims(clk *clock) *claims {
	return &claims{MemoryStore: NewMemoryStore(0), clk: clk, held: map[Digest]claim{}}
}

func (c *claims) Claim(_ context.Context, d Digest, holder string, ttl time.Duration) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.now()
	if h, ok := c.held[d]; ok && h.holder != holder && now.Before(h.expires) {
		return false, nil
	}
	c.held[d] = claim{holder, now.Add(ttl)}
	c.claims++
	return true, nil
}

func (c *claims) Release(_ context.Context, d Digest, holder string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[d].holder == holder {
		delete(c.held, d)
	}
	return nil
}

// TestAheadReplicas: windows sharing a store with claims (replicas of a
// proxy), each conversation's requests spread over them in turn, call the
// summarizer as often as one window does; when the window that claimed a
// summary dies before writing it, another takes over once the claim has
// expired, and no request fails.
func TestAheadReplicas(t *testing.T) {
	h := conversation(30, 120)
	t.Run("round robin", func(t *testing.T) {
		one, oneRec := recorder(model.RespondText("S."))
		var oneRun manual
		grow(t, New(Options{MaxMessages: 20, Summarizer: one, Background: &oneRun, FactsChars: -1}), h, func([]processor.Message) { oneRun.runAll() })

		clk := &clock{t: time.Unix(1e9, 0)}
		store := newClaims(clk)
		sum, rec := recorder(model.RespondText("S."))
		var runs [3]manual
		var ws [3]*Window
		for i := range ws {
			ws[i] = New(Options{MaxMessages: 20, Summarizer: sum, Background: &runs[i], Store: store, FactsChars: -1, Now: clk.now})
		}
		for i, k := range processortest.RequestPoints(h) {
			out, err := ws[i%3].Process(context.Background(), processortest.Clone(h[:k]))
			if err != nil {
				t.Fatal(err)
			}
			if err := processor.Validate(out); err != nil {
				t.Fatal(err)
			}
			for j := range runs {
				runs[j].runAll()
			}
			clk.add(time.Second)
		}
		if got, want := len(rec.Calls()), len(oneRec.Calls()); got != want {
			t.Errorf("%d summarizer calls by three replicas, %d by one", got, want)
		}
	})
	// a claims the summary of the first span (at 14 messages) and dies
	// before writing it; b serves every request after.
	killed := func(t *testing.T, hard int, expire bool) (*events, *model.Recorder) {
		clk := &clock{t: time.Unix(1e9, 0)}
		store := newClaims(clk)
		sum, rec := recorder(model.RespondText("S."))
		var dead, live manual
		var ev events
		a := New(Options{MaxMessages: 20, HardMessages: hard, Summarizer: sum, Background: &dead, Store: store, FactsChars: -1, Now: clk.now, ClaimTTL: 30 * time.Second})
		b := New(Options{MaxMessages: 20, HardMessages: hard, Summarizer: sum, Background: &live, Store: store, FactsChars: -1, Now: clk.now, ClaimTTL: 30 * time.Second, OnEvent: ev.on})
		for _, k := range processortest.RequestPoints(h) {
			w := b
			if k <= 14 {
				w = a
			}
			out, err := w.Process(context.Background(), processortest.Clone(h[:k]))
			if err != nil {
				t.Fatalf("request at %d messages: %v", k, err)
			}
			if err := processor.Validate(out); err != nil {
				t.Fatal(err)
			}
			if ev.count(EventFinished) > 0 {
				break
			}
			live.runAll()
			if expire && k == 22 {
				clk.add(31 * time.Second) // a's claim runs out, unrenewed
			}
		}
		return &ev, rec
	}
	t.Run("claimer killed, its claim expires", func(t *testing.T) {
		ev, rec := killed(t, 40, true)
		fin := ev.last(EventFinished)
		// Deferred at 22 (a's claim runs), at 24 (b takes it over and
		// writes it), used at 26.
		if fin.Type != EventFinished || !fin.Prepared || fin.MessagesBefore != 26 || ev.count(EventDeferred) != 2 || len(rec.Calls()) != 1 {
			t.Errorf("compaction %+v after %d deferred, %d summarizer calls: want the span a claimed, written by b once the claim expired",
				fin, ev.count(EventDeferred), len(rec.Calls()))
		}
	})
	t.Run("claimer killed, past the hard limit", func(t *testing.T) {
		ev, rec := killed(t, 24, false)
		fin := ev.last(EventFinished)
		// Deferred at 22 and 24; at 26, past the hard limit, b writes the
		// summary itself rather than wait for a process that may be dead.
		if fin.Type != EventFinished || fin.Prepared || fin.MessagesBefore != 26 || ev.count(EventDeferred) != 2 || len(rec.Calls()) != 1 {
			t.Errorf("compaction %+v after %d deferred, %d summarizer calls: want one written at 26 messages in the foreground",
				fin, ev.count(EventDeferred), len(rec.Calls()))
		}
	})
}

// TestAheadFailure: a summary the summarizer could not write ahead gives
// the compaction the fallback's at once, no request waits, and the
// fallback span is written again in the background later.
func TestAheadFailure(t *testing.T) {
	sum, rec := recorder(model.Fail(errors.New("upstream down")), model.RespondText("Written again."))
	var run manual
	var ev events
	w := New(Options{MaxMessages: 20, Summarizer: sum, Background: &run, OnEvent: ev.on, FactsChars: -1})
	h := conversation(20, 120)
	grow(t, w, h, func([]processor.Message) {
		calls := len(rec.Calls())
		run.runAll()
		if ev.count(EventFinished) == 1 && len(rec.Calls()) > calls && ev.last(EventFinished).Fallback {
			return // the rewrite of the fallback, in the background
		}
	})
	fin := ev.all[slices.IndexFunc(ev.all, func(e Event) bool { return e.Type == EventFinished })]
	if !fin.Fallback || !fin.Prepared || fin.Waited != 0 || !strings.HasPrefix(fin.Summary, summarizer.DigestHeader) {
		t.Errorf("first compaction: %+v, want the digest at once", fin)
	}
	failed := ev.all[slices.IndexFunc(ev.all, func(e Event) bool { return e.Type == EventAheadFinished })]
	if failed.Err == nil || failed.Reason != "summarizer error" {
		t.Errorf("the failure written ahead: %+v", failed)
	}
	// The fallback's span was written again by the summarizer, and the
	// history sent again gets it.
	out, err := New(Options{MaxMessages: 20, Summarizer: sum, Store: w.opts.Store, Ahead: -1, FactsChars: -1}).Process(context.Background(), processortest.Clone(h[:26]))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := markerOf(out); got != "Written again." {
		t.Errorf("marker after the rewrite: %q", got)
	}
}

// TestAheadSuperseded: summaries written ahead that a compaction does not
// use are reported wasted, with what their writing cost.
func TestAheadSuperseded(t *testing.T) {
	sum, _ := recorder(model.RespondText("S."))
	var run manual
	var ev events
	w := New(Options{MaxMessages: 20, Summarizer: sum, Background: &run, OnEvent: ev.on, FactsChars: -1})
	h := conversation(20, 120)
	// A request at 16 messages starts the summary of the span a trigger
	// at 22 messages would replace; the conversation then comes back
	// grown past it by one message a request (a prompt), so the next
	// compaction cuts elsewhere and prepares again.
	if _, err := w.Process(context.Background(), processortest.Clone(h[:16])); err != nil {
		t.Fatal(err)
	}
	run.runAll()
	long := append(processortest.Clone(h[:16]), processor.TextMessage("ok"), user("more"))
	for range 12 {
		long = append(long, processor.TextMessage("ok"), user("more"))
	}
	if _, err := w.Process(context.Background(), long); err != nil {
		t.Fatal(err)
	}
	run.runAll()
	if _, err := w.Process(context.Background(), append(long, processor.TextMessage("ok"), user("again"))); err != nil {
		t.Fatal(err)
	}
	wasted := ev.last(EventAheadWasted)
	if wasted.Type != EventAheadWasted || wasted.Reason != "superseded" || wasted.SummaryInput == 0 {
		t.Errorf("wasted: %+v (events %v)", wasted, ev.types())
	}
}

// TestAheadQueueFull: a runner that takes no job leaves compactions to
// the requests past the hard limit, in the foreground.
func TestAheadQueueFull(t *testing.T) {
	sum, rec := recorder(model.RespondText("S."))
	run := manual{full: true}
	var ev events
	w := New(Options{MaxMessages: 20, HardMessages: 22, Summarizer: sum, Background: &run, OnEvent: ev.on, FactsChars: -1})
	grow(t, w, conversation(12, 120), nil)
	fin := ev.last(EventFinished)
	if fin.MessagesBefore != 24 || fin.Prepared || len(rec.Calls()) != 1 {
		t.Errorf("compaction %+v with %d calls, want one at 24 messages in the foreground", fin, len(rec.Calls()))
	}
	if ev.count(EventDeferred) != 1 || ev.last(EventAheadWasted).Reason != "queue full" {
		t.Errorf("events: %v", ev.types())
	}
}

// TestAheadTokens: with a token trigger, the summary written ahead is the
// one the compaction uses, and no request waits.
func TestAheadTokens(t *testing.T) {
	sum, rec := recorder(model.RespondText("S."))
	var run manual
	var ev events
	w := New(Options{MaxMessages: -1, TriggerTokens: 1500, Summarizer: sum, Background: &run, OnEvent: ev.on, FactsChars: -1})
	grow(t, w, conversation(40, 150), func([]processor.Message) { run.runAll() })
	n := ev.count(EventFinished)
	if n < 2 || ev.count(EventDeferred) != 0 {
		t.Fatalf("%d compactions, %d deferred: %v", n, ev.count(EventDeferred), ev.types())
	}
	for _, e := range ev.all {
		if e.Type == EventFinished && (!e.Prepared || e.TokensAfter > 1500) {
			t.Errorf("compaction %+v", e)
		}
	}
	if len(rec.Calls()) > n+1 {
		t.Errorf("%d summarizer calls for %d compactions", len(rec.Calls()), n)
	}
}

// TestAheadConcurrent grows many conversations at once through one window
// writing ahead on a real Pool, in every host mode: every result is valid
// whatever the summaries' timing, and Close leaves nothing running (run
// with -race).
func TestAheadConcurrent(t *testing.T) {
	sum, _ := recorder(model.RespondText("S."))
	w := New(Options{MaxMessages: 12, Summarizer: sum, HardMessages: 16})
	h := conversation(30, 80)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := WithRequest(context.Background(), Request{Conversation: string(rune('a' + c))})
			var stored []processor.Message
			next := 0
			for _, k := range processortest.RequestPoints(h) {
				in := processortest.Clone(h[:k]) // fresh
				if c%2 == 0 {                    // processed
					stored = append(stored, processortest.Clone(h[next:k])...)
					in = stored
				}
				next = k
				out, err := w.Process(ctx, in)
				if err == nil {
					err = processor.Validate(out)
				}
				if err == nil && (c%2 == 0) {
					stored = slices.Clone(out)
				}
				if err == nil && (len(out) > 18) {
					err = errors.New("over the hard limit")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestAheadFacts grows a conversation whose summaries carry facts (the
// files its commands read) with the summaries written ahead in the
// background, while the caller overwrites each history it passed once the
// request returns: the job summarizes its own copy of the messages and
// makes their facts when it runs. Every history sent, facts included, and
// every summarizer input are the foreground's.
func TestAheadFacts(t *testing.T) {
	h := conversation(30, 120)
	replies := []model.Reply{model.RespondText("Summary one."), model.RespondText("Summary two.")}
	fg, fgRec := recorder(replies...)
	var want [][]processor.Message
	grow(t, New(Options{MaxMessages: 20, Summarizer: fg, Ahead: -1}), h, func(out []processor.Message) {
		want = append(want, out)
	})
	facts := 0
	for _, out := range want {
		for _, m := range out {
			if s, _, ok := summary.ParseMarker(m); ok && strings.Contains(s, "file") {
				facts++
			}
		}
	}
	if facts == 0 {
		t.Fatal("no marker of the foreground's carries facts naming the files read: the test shows nothing")
	}

	bg, bgRec := recorder(replies...)
	var run manual
	w := New(Options{MaxMessages: 20, Summarizer: bg, Background: &run})
	var stored []processor.Message
	next := 0
	for i, k := range processortest.RequestPoints(h) {
		stored = append(stored, h[next:k]...)
		next = k
		in := processor.Clone(stored)
		out, err := w.Process(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		stored = processor.Clone(out)
		for _, m := range in {
			for k := range m.Parts {
				m.Parts[k] = processor.UserPrompt{Content: "overwritten by the caller"}
			}
		}
		run.runAll()
		if err := processortest.Diff(want[i], stored); err != nil {
			t.Fatalf("request %d: differs from the foreground's: %v", i, err)
		}
	}
	fgCalls, bgCalls := fgRec.Calls(), bgRec.Calls()
	if len(bgCalls) != len(fgCalls)+1 {
		t.Fatalf("%d summarizer calls written ahead, %d in the foreground, want one more", len(bgCalls), len(fgCalls))
	}
	for i := range fgCalls {
		if err := processortest.Diff(fgCalls[i].Messages, bgCalls[i].Messages); err != nil {
			t.Errorf("summarizer call %d: input differs from the foreground's: %v", i, err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Error(err)
	}
}
