package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// countingSummarizer counts its calls and what it was given.
type countingSummarizer struct {
	mu    sync.Mutex
	calls int
	prev  []string
}

func (c *countingSummarizer) Summarize(_ context.Context, ms []processor.Message, previous string) (string, error) {
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
		win := func(st Store) *window.Window {
			return window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: st.Summaries()})
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

func (n *nulSummarizer) Summarize(ctx context.Context, ms []processor.Message, previous string) (string, error) {
	s, err := n.countingSummarizer.Summarize(ctx, ms, previous)
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
		win := func(st Store) *window.Window {
			return window.New(window.Options{MaxMessages: 12, Summarizer: sum, Store: st.Summaries(),
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

// TestSummariesStore checks the store itself: spans most recent first,
// a digest saved again replaces its span, at most SummariesPerKey kept
// per key, keys kept apart, and summaries found by reference.
func TestSummariesStore(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		s := openStore(t, newDSN(t)).Summaries()
		k1, k2 := window.Key{1}, window.Key{2}
		span := func(i int) window.Span {
			return window.Span{Head: 3, Count: i, Cleared: i % 3, Digest: window.Digest{byte(i)}, Last: window.Key{byte(i), 9}, Summary: fmt.Sprintf("summary %d", i)}
		}
		for i := 1; i <= SummariesPerKey+2; i++ {
			if err := s.Save(ctx, k1, span(i)); err != nil {
				t.Fatal(err)
			}
		}
		replaced := span(SummariesPerKey + 2)
		replaced.Summary = "summary again"
		if err := s.Save(ctx, k1, replaced); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, k2, span(1)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Spans(ctx, k1)
		if err != nil {
			t.Fatal(err)
		}
		want := []window.Span{replaced}
		for i := SummariesPerKey + 1; len(want) < SummariesPerKey; i-- {
			want = append(want, span(i))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("spans of key 1 (-want +got):\n%s", diff)
		}
		if got, _ := s.Spans(ctx, k2); len(got) != 1 || got[0] != span(1) {
			t.Errorf("spans of key 2: %+v", got)
		}
		if got, _ := s.Spans(ctx, window.Key{3}); len(got) != 0 {
			t.Errorf("spans of an unknown key: %+v", got)
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

// TestSummariesStoreClosed checks that a window whose store fails still
// answers, reporting the failure.
func TestSummariesStoreClosed(t *testing.T) {
	st, err := Open(context.Background(), sqliteDSN(t), nil)
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

// TestMigrateFromVersion2 opens a database as the previous program left
// it (version 2: the summaries table without cleared spans, compactions
// without withdrawn turns), with a session and a summary in it: it is
// migrated, both are intact, and spans that clear can be stored.
func TestMigrateFromVersion2(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		st, err := Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := openSession(t, st, "old")
		if err := s.Append(ctx, processor.UserMessage("hello")); err != nil {
			t.Fatal(err)
		}
		old := window.Span{Head: 1, Count: 2, Summary: "old"}
		if err := st.Summaries().Save(ctx, window.Key{1}, old); err != nil {
			t.Fatal(err)
		}
		// Back to version 2, as the previous program left it.
		if err := st.(*store).write(ctx, "test", func(tx tx) error {
			for _, q := range []string{
				`ALTER TABLE summaries DROP COLUMN cleared`,
				`ALTER TABLE compactions DROP COLUMN withdrawn`,
				`UPDATE schema_version SET version = 2`,
			} {
				if _, err := tx.exec(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st = openStore(t, dsn)
		h, err := openSession(t, st, "old").Transcript(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].Message.Text() != "hello" {
			t.Errorf("transcript after the migration: %d messages", len(h))
		}
		got, err := st.Summaries().Spans(ctx, window.Key{1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]window.Span{old}, got); diff != "" {
			t.Errorf("spans after the migration (-want +got):\n%s", diff)
		}
		cleared := window.Span{Head: 1, Count: 3, Cleared: 2, Summary: "new"}
		if err := st.Summaries().Save(ctx, window.Key{2}, cleared); err != nil {
			t.Fatalf("save a span that clears after the migration: %v", err)
		}
		if got, _ := st.Summaries().Spans(ctx, window.Key{2}); len(got) != 1 || got[0].Cleared != 2 {
			t.Errorf("spans of the new save: %+v", got)
		}
	})
}
