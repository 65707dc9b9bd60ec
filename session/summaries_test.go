package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// countingSummarizer counts its calls and what it was given.
type countingSummarizer struct {
	mu    sync.Mutex
	calls int
	prev  []string
}

func (c *countingSummarizer) Summarize(_ context.Context, ms []processor.Message, previous, focus string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.prev = append(c.prev, previous)
	return fmt.Sprintf("Summary %d of %d messages.", c.calls, len(ms)), nil
}

func (c *countingSummarizer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// conversation returns a tool-using conversation of n rounds, a new copy
// each call, as a proxy decodes each request afresh.
func conversation(n int) []processor.Message {
	h := []processor.Message{
		processor.SystemMessage("You are a coding agent."),
		processor.UserMessage("Fix the failing test in pkg/x."),
		processor.TextMessage("Looking at it."),
		processor.UserMessage("Go ahead."),
	}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: fmt.Sprintf(`{"command":"cat pkg/x/f%d.go"}`, i)}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: fmt.Sprintf("f%d: %s", i, strings.Repeat("x", 200))}))
	}
	return processortest.Clone(h)
}

// TestSummariesShared runs two windows over one database, each through its
// own store as two processes would, on the same conversation decoded
// afresh: the summarizer is called once. A window opened after a restart
// finds the summary too, and when the conversation grows, the next
// compaction merges the first summary (trusted: the database knows it).
func TestSummariesShared(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		dsn := newDSN(t)
		ctx := context.Background()
		sum := &countingSummarizer{}
		win := func(st *Store) *window.Window {
			return window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: st.Summaries(), Ahead: -1})
		}
		a, b := win(openStore(t, dsn)), win(openStore(t, dsn))
		outA, err := a.Process(ctx, conversation(10))
		if err != nil {
			t.Fatal(err)
		}
		outB, err := b.Process(ctx, conversation(10))
		if err != nil {
			t.Fatal(err)
		}
		if sum.count() != 1 {
			t.Fatalf("%d summarizer calls for one conversation on two windows sharing a database, want 1", sum.count())
		}
		if err := processortest.Diff(outA, outB); err != nil {
			t.Errorf("the second window sends another history: %v", err)
		}
		// A restart: a new store on the same database.
		st := openStore(t, dsn)
		outC, err := win(st).Process(ctx, conversation(11))
		if err != nil {
			t.Fatal(err)
		}
		if sum.count() != 1 {
			t.Errorf("%d summarizer calls after a restart, want still 1", sum.count())
		}
		if err := processortest.Diff(outA, outC[:len(outA)]); err != nil {
			t.Errorf("after a restart, the same cut and marker are not applied: %v", err)
		}
		// Grown past the trigger again: the next summary merges the first.
		if _, err := win(st).Process(ctx, conversation(20)); err != nil {
			t.Fatal(err)
		}
		if sum.count() != 2 || sum.prev[1] != "Summary 1 of 15 messages." {
			t.Errorf("%d calls, previous summaries %q: want the second to merge the first", sum.count(), sum.prev)
		}
	})
}

// nulSummarizer writes a summary holding a NUL, as one that quotes a
// message holding one may.
type nulSummarizer struct{ countingSummarizer }

func (n *nulSummarizer) Summarize(ctx context.Context, ms []processor.Message, previous, focus string) (string, error) {
	s, err := n.countingSummarizer.Summarize(ctx, ms, previous, focus)
	return s + " The file began with \x00 and \xff.", err
}

// TestSummaryWithNUL checks that a summary holding a NUL (or invalid
// UTF-8) is saved on every backend (PostgreSQL refuses NUL in text), sent
// as it was saved, and found again by another window on the database.
func TestSummaryWithNUL(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		dsn := newDSN(t)
		ctx := context.Background()
		sum := &nulSummarizer{}
		var failures []string
		var mu sync.Mutex
		win := func(st *Store) *window.Window {
			return window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: st.Summaries(), Ahead: -1,
				OnEvent: func(_ context.Context, e window.Event) {
					if e.Type == window.EventStoreFailed {
						mu.Lock()
						failures = append(failures, e.Err.Error())
						mu.Unlock()
					}
				}})
		}
		outA, err := win(openStore(t, dsn)).Process(ctx, conversation(10))
		if err != nil {
			t.Fatal(err)
		}
		outB, err := win(openStore(t, dsn)).Process(ctx, conversation(10))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(failures) != 0 {
			t.Errorf("store failures: %q", failures)
		}
		if sum.count() != 1 {
			t.Errorf("%d summarizer calls, want 1: the summary was not saved", sum.count())
		}
		if err := processortest.Diff(outA, outB); err != nil {
			t.Errorf("the second window sends another history: %v", err)
		}
		for _, m := range outA {
			if text := m.Text(); strings.ContainsRune(text, 0) || !utf8.ValidString(text) {
				t.Errorf("sent a message holding NUL or invalid UTF-8: %q", text)
			}
		}
	})
}

// TestSummariesStore checks the store itself: spans found by key and the
// message they end with, most recent first; a digest saved again replaces
// its span, but a fallback never replaces a summarizer's summary; every
// span of a key is kept however many share it; keys kept apart; summaries
// found by reference.
func TestSummariesStore(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		s := openStore(t, newDSN(t)).Summaries()
		k1, k2 := window.Key{1}, window.Key{2}
		span := func(i int) window.Span {
			return window.Span{Head: 3, Count: i, Cleared: i % 3, Digest: window.Digest{byte(i)}, Last: window.Key{byte(i), 9}, Summary: fmt.Sprintf("summary %d", i)}
		}
		const n = 40 // far more than any count a key could be limited to
		var lasts []window.Key
		for i := 1; i <= n; i++ {
			if err := s.Save(ctx, k1, span(i)); err != nil {
				t.Fatal(err)
			}
			lasts = append(lasts, span(i).Last)
		}
		replaced := span(n)
		replaced.Summary = "summary again"
		if err := s.Save(ctx, k1, replaced); err != nil {
			t.Fatal(err)
		}
		fallback := span(n - 1)
		fallback.Summary, fallback.Fallback = "a digest", true
		if err := s.Save(ctx, k1, fallback); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, k2, span(1)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Spans(ctx, k1, ends(lasts...))
		if err != nil {
			t.Fatal(err)
		}
		want := []window.Span{replaced}
		for i := n - 1; i >= 1; i-- {
			want = append(want, span(i))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("spans of key 1 (-want +got):\n%s", diff)
		}
		if got, _ := s.Spans(ctx, k1, ends(span(2).Last, window.Key{7, 7})); len(got) != 1 || got[0] != span(2) {
			t.Errorf("spans of key 1 ending with message 2: %+v", got)
		}
		if got, _ := s.Spans(ctx, k2, ends(lasts...)); len(got) != 1 || got[0] != span(1) {
			t.Errorf("spans of key 2: %+v", got)
		}
		if got, _ := s.Spans(ctx, window.Key{3}, ends(lasts...)); len(got) != 0 {
			t.Errorf("spans of an unknown key: %+v", got)
		}
		// A fallback saved first is replaced by the summarizer's summary.
		fb := span(50)
		fb.Fallback, fb.Summary = true, "a digest"
		again := span(50)
		for _, sp := range []window.Span{fb, again} {
			if err := s.Save(ctx, k2, sp); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.Spans(ctx, k2, ends(fb.Last)); len(got) != 1 || got[0] != again {
			t.Errorf("a fallback span saved again with a summary: %+v", got)
		}
		// A prepared span is replaced by the span that uses it, never the
		// other way round.
		prepared := span(60)
		prepared.Prepared, prepared.Summary = true, "prose written ahead"
		used := span(60)
		for _, sp := range []window.Span{prepared, used, prepared} {
			if err := s.Save(ctx, k2, sp); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.Spans(ctx, k2, ends(used.Last)); len(got) != 1 || got[0] != used {
			t.Errorf("a used span saved again as prepared: %+v", got)
		}
		if err := s.Save(ctx, k2, prepared); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, k1, prepared); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Spans(ctx, k1, ends(prepared.Last)); len(got) != 1 || got[0] != prepared {
			t.Errorf("a prepared span read back: %+v", got)
		}
		text, ok, err := s.Summary(ctx, summary.Ref("summary again"))
		if err != nil || !ok || text != "summary again" {
			t.Errorf("Summary by reference = %q, %v, %v", text, ok, err)
		}
		if _, ok, err := s.Summary(ctx, summary.Ref("never written")); ok || err != nil {
			t.Errorf("Summary of an unknown reference = %v, %v", ok, err)
		}
	})
}

// TestSummariesRetention checks what the store forgets: spans not used
// for the retention's age, then the least recently used beyond its size,
// whatever their keys; a span read is used.
func TestSummariesRetention(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		st.maxSpans = 3
		s := summaries{st}
		span := func(i int) window.Span {
			return window.Span{Head: 1, Count: 2, Digest: window.Digest{byte(i)}, Last: window.Key{byte(i)}, Summary: fmt.Sprintf("summary %d", i)}
		}
		lasts := func(is ...int) []window.Key {
			var out []window.Key
			for _, i := range is {
				out = append(out, span(i).Last)
			}
			return out
		}
		// Spans 1 to 4 under one key, 5 under another; span 1 was used an
		// hour and more ago, the others not since they were saved, 6 was
		// last used beyond the age.
		for i := 1; i <= 6; i++ {
			k := window.Key{1}
			if i >= 5 {
				k = window.Key{2}
			}
			if err := s.Save(ctx, k, span(i)); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-2 * time.Hour).UnixNano()
		expired := time.Now().Add(-SummaryMaxAge - time.Hour).UnixNano()
		if err := st.write(ctx, "test", func(t backend.Tx) error {
			for i, used := range map[int]int64{1: old, 2: old + 1, 3: old + 2, 4: old + 3, 5: old + 4, 6: expired} {
				if _, err := t.Exec(ctx, `UPDATE summaries SET used = $1 WHERE digest = $2`, used, span(i).Digest.String()); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Reading span 1 uses it.
		if got, err := s.Spans(ctx, window.Key{1}, ends(lasts(1)...)); err != nil || len(got) != 1 {
			t.Fatalf("Spans = %+v, %v", got, err)
		}
		if err := s.prune(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		var kept []int
		for i := 1; i <= 6; i++ {
			k := window.Key{1}
			if i >= 5 {
				k = window.Key{2}
			}
			if got, _ := s.Spans(ctx, k, ends(lasts(i)...)); len(got) == 1 {
				kept = append(kept, i)
			}
		}
		if diff := cmp.Diff([]int{1, 4, 5}, kept); diff != "" {
			t.Errorf("spans kept (-want +got):\n%s", diff)
		}
	})
}

// TestSummariesStoreClosed checks that a window whose store fails still
// answers, reporting the failure.
func TestSummariesStoreClosed(t *testing.T) {
	st, err := Open(context.Background(), driver(sqliteDSN(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var failed []window.Event
	var mu sync.Mutex
	w := window.New(window.Options{MaxMessages: 12, Store: st.Summaries(), OnEvent: func(_ context.Context, e window.Event) {
		if e.Type == window.EventStoreFailed {
			mu.Lock()
			failed = append(failed, e)
			mu.Unlock()
		}
	}})
	out, err := w.Process(context.Background(), conversation(10))
	if err != nil {
		t.Fatalf("a failing store failed the request: %v", err)
	}
	if !containsMarker(out) {
		t.Errorf("not compacted: %d messages", len(out))
	}
	if len(failed) == 0 || failed[0].Err == nil || errors.Is(failed[0].Err, context.Canceled) {
		t.Errorf("store failures reported: %+v", failed)
	}
}

func containsMarker(h []processor.Message) bool {
	for _, m := range h {
		if summary.IsMarker(m) {
			return true
		}
	}
	return false
}

// downgrade takes the database of st back to version (2, 3 or 4), as the
// previous programs left it, and closes st.
func downgrade(t *testing.T, st *Store, version int) {
	t.Helper()
	ctx := context.Background()
	steps := map[int][]string{
		5: {
			`DROP TABLE receipts`,
			`DROP TABLE requests`,
		},
		4: {
			`DROP TABLE summary_claims`,
			`ALTER TABLE summaries DROP COLUMN prepared`,
		},
		3: {
			`DROP INDEX summaries_last`,
			`DROP INDEX summaries_used`,
			`ALTER TABLE summaries DROP COLUMN fallback`,
			`ALTER TABLE summaries DROP COLUMN used`,
		},
		2: {
			`ALTER TABLE summaries DROP COLUMN cleared`,
			`ALTER TABLE compactions DROP COLUMN withdrawn`,
		},
	}
	if err := st.write(ctx, "test", func(tx backend.Tx) error {
		for v := schemaVersion - 1; v >= version; v-- {
			for _, q := range steps[v] {
				if _, err := tx.Exec(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
		}
		_, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1`, int64(version))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMigrate opens a database as a previous program left it (version 2:
// the summaries table without cleared spans, compactions without withdrawn
// turns; version 3: spans without fallback or use), with a session and a
// summary in it (version 4: spans never prepared, no claims; version 5:
// no receipts): it is migrated, both are intact (the span counts as used
// when it was saved, and is no fallback), spans that clear or hold a
// fallback can be stored, and so can receipts and requests.
func TestMigrate(t *testing.T) {
	for _, from := range []int{2, 3, 4, 5} {
		t.Run(fmt.Sprintf("from-%d", from), func(t *testing.T) {
			backends(t, func(t *testing.T, newDSN newDSN) {
				ctx := context.Background()
				dsn := newDSN(t)
				st := openToClose(t, dsn)
				s := openSession(t, st, "old")
				if err := s.Append(ctx, processor.UserMessage("hello")); err != nil {
					t.Fatal(err)
				}
				old := window.Span{Head: 1, Count: 2, Last: window.Key{4}, Summary: "old"}
				if err := st.Summaries().Save(ctx, window.Key{1}, old); err != nil {
					t.Fatal(err)
				}
				downgrade(t, st, from)
				st = openStore(t, dsn)
				h, err := openSession(t, st, "old").Transcript(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(h) != 1 || h[0].Message.Text() != "hello" {
					t.Errorf("transcript after the migration: %d messages", len(h))
				}
				got, err := st.Summaries().Spans(ctx, window.Key{1}, ends(window.Key{4}))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]window.Span{old}, got); diff != "" {
					t.Errorf("spans after the migration (-want +got):\n%s", diff)
				}
				var created, used int64
				if err := st.readOne(ctx, "test", func(t backend.Tx) error {
					return queryRow(ctx, t, `SELECT created, used FROM summaries`).Scan(&created, &used)
				}); err != nil {
					t.Fatal(err)
				}
				if created == 0 || used != created {
					t.Errorf("after the migration, a span saved at %d was used at %d, want then", created, used)
				}
				fresh := window.Span{Head: 1, Count: 3, Cleared: 2, Last: window.Key{5}, Summary: "new", Fallback: true}
				if err := st.Summaries().Save(ctx, window.Key{2}, fresh); err != nil {
					t.Fatalf("save a span that clears after the migration: %v", err)
				}
				if got, _ := st.Summaries().Spans(ctx, window.Key{2}, ends(window.Key{5})); len(got) != 1 || got[0] != fresh {
					t.Errorf("spans of the new save: %+v", got)
				}
				checkReceiptsWork(t, st)
			})
		})
	}
}

// TestSummariesSharedOpening runs a window over the database on
// conversations that share their first messages, then sends each from its
// start again: no summary is paid twice, however many conversations begin
// alike and however many summaries one conversation made.
func TestSummariesSharedOpening(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		sum := &countingSummarizer{}
		w := window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: st.Summaries(), Ahead: -1})
		variant := func(i, n int) []processor.Message {
			h := conversation(n)
			for j := 4; j < len(h); j++ {
				if r, ok := h[j].Parts[0].(processor.ToolReturn); ok {
					r.Content = fmt.Sprintf("conversation %d: %s", i, r.Content)
					h[j].Parts = []processor.Part{r}
				}
			}
			return h
		}
		send := func(i int) {
			full := variant(i, 40)
			for n := 6; n <= len(full); n += 2 {
				if _, err := w.Process(ctx, full[:n]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 10 {
			send(i)
		}
		paid := sum.count()
		if paid < 10*8 {
			t.Fatalf("%d summaries for 10 conversations, want more", paid)
		}
		for i := range 10 {
			send(i)
		}
		if got := sum.count(); got != paid {
			t.Errorf("sent again from their start, the conversations paid %d more summaries, want 0", got-paid)
		}
	})
}

// flakySummarizer fails while down is set, and counts its calls.
type flakySummarizer struct {
	countingSummarizer
	down bool
}

func (f *flakySummarizer) Summarize(ctx context.Context, ms []processor.Message, previous, focus string) (string, error) {
	if f.down {
		f.mu.Lock()
		f.calls++
		f.mu.Unlock()
		return "", errors.New("503 Service Unavailable")
	}
	return f.countingSummarizer.Summarize(ctx, ms, previous, focus)
}

// TestSummariesFallbackRetried checks that a fallback's summary saved in
// the database while the summarizer was down is not reused for good: after
// a restart, with the summarizer back, the next request gets the model's
// summary, saved in its place and reused by the processes after.
func TestSummariesFallbackRetried(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		sum := &flakySummarizer{down: true}
		win := func() *window.Window {
			return window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: openStore(t, dsn).Summaries(), Ahead: -1})
		}
		out, err := win().Process(ctx, conversation(10))
		if err != nil {
			t.Fatal(err)
		}
		if s := markerText(out); !strings.Contains(s, summarizer.DigestHeader) {
			t.Fatalf("marker %q, want the fallback's digest", s)
		}
		sum.down = false
		for i := range 2 { // after a restart, twice
			out, err := win().Process(ctx, conversation(10))
			if err != nil {
				t.Fatal(err)
			}
			if s := markerText(out); !strings.Contains(s, "Summary 2 of") {
				t.Errorf("request %d after the summarizer came back: marker %q, want its summary", i, s)
			}
		}
		if sum.count() != 2 {
			t.Errorf("%d summarizer calls, want 2 (the failure, then one summary reused)", sum.count())
		}
	})
}

// markerText returns the text of the first marker of h, or "".
func markerText(h []processor.Message) string {
	for _, m := range h {
		if summary.IsMarker(m) {
			return m.Text()
		}
	}
	return ""
}

// ends returns keys as Store.Spans asks for them.
func ends(keys ...window.Key) func() []window.Key {
	return func() []window.Key { return keys }
}

// TestSummaryClaims: one holder at a time claims a span's summary, renews
// its claim, releases it; another takes over a claim that expired.
func TestSummaryClaims(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		a := openStore(t, dsn).Summaries().(window.Claimer)
		b := openStore(t, dsn).Summaries().(window.Claimer) // another process
		d := window.Digest{7}
		steps := []struct {
			name   string
			c      window.Claimer
			holder string
			ttl    time.Duration
			want   bool
		}{
			{"first claim", a, "a", time.Hour, true},
			{"another holder while it runs", b, "b", time.Hour, false},
			{"renewed by its holder", a, "a", time.Millisecond, true},
		}
		for _, st := range steps {
			got, err := st.c.Claim(ctx, d, st.holder, st.ttl)
			if err != nil || got != st.want {
				t.Fatalf("%s: Claim = %v, %v; want %v", st.name, got, err, st.want)
			}
		}
		time.Sleep(5 * time.Millisecond) // the renewed claim (1ms) expires
		if got, err := b.Claim(ctx, d, "b", time.Hour); err != nil || !got {
			t.Fatalf("taking over an expired claim = %v, %v", got, err)
		}
		if got, _ := a.Claim(ctx, d, "a", time.Hour); got {
			t.Fatal("the expired holder claimed it back")
		}
		if err := a.Release(ctx, d, "a"); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.Claim(ctx, d, "a", time.Hour); got {
			t.Fatal("a release by a holder that lost the claim ended the other's")
		}
		if err := b.Release(ctx, d, "b"); err != nil {
			t.Fatal(err)
		}
		if got, err := a.Claim(ctx, d, "a", time.Hour); err != nil || !got {
			t.Fatalf("claim after release = %v, %v", got, err)
		}
	})
}
