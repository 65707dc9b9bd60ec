package window

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// payingSummarizer answers with a summary naming the payer of each call
// (see Request.Payer), or fails for the payers in failing; it counts calls by
// payer.
type payingSummarizer struct {
	mu      sync.Mutex
	failing map[string]bool
	calls   map[string]int
}

func (p *payingSummarizer) Summarize(ctx context.Context, ms []processor.Message, prev, focus string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	payer := RequestOf(ctx).Payer
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	p.calls[payer]++
	if p.failing[payer] {
		return "", errors.New("401 Unauthorized: Incorrect API key provided")
	}
	return fmt.Sprintf("Summary paid by %s of %d messages.", payer, len(ms)), nil
}

func (p *payingSummarizer) set(payer string, failing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failing == nil {
		p.failing = map[string]bool{}
	}
	p.failing[payer] = failing
}

func (p *payingSummarizer) count(payer string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[payer]
}

// TestBreakerPerPayer checks that failures on one payer's credential open
// that payer's breaker only: a client whose key is refused cannot switch
// off the summaries of another.
func TestBreakerPerPayer(t *testing.T) {
	sum := &payingSummarizer{}
	sum.set("bogus", true)
	var ev events
	w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum, OnEvent: ev.on, Store: nopStore{}})
	bogus := WithRequest(context.Background(), Request{Payer: "bogus"})
	for i := range 5 {
		if _, err := w.Process(bogus, conversation(10+i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if got := sum.count("bogus"); got != DefaultBreakerFailures {
		t.Errorf("%d calls for the refused payer, want %d before its breaker opened", got, DefaultBreakerFailures)
	}
	if e := ev.last(EventFailed); e.Reason != "circuit open" {
		t.Errorf("the refused payer's last compaction: reason %q, want circuit open", e.Reason)
	}
	for _, payer := range []string{"tenant-a", ""} {
		out, err := w.Process(WithRequest(context.Background(), Request{Payer: payer}), conversation(12, 100))
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := markerOf(out); s != fmt.Sprintf("Summary paid by %s of %d messages.", payer, 16) && !strings.HasPrefix(s, "Summary paid by "+payer+" ") {
			t.Errorf("payer %q got the marker %q, want its own summary", payer, s)
		}
		if sum.count(payer) != 1 {
			t.Errorf("payer %q: %d calls, want 1", payer, sum.count(payer))
		}
	}
}

// TestBreakersBounded checks that a window remembers the failures of a
// bounded number of payers: many refused keys do not grow it without end.
func TestBreakersBounded(t *testing.T) {
	w := New(Options{Ahead: -1})
	for i := range breakerLimit + 10 {
		w.tally(fmt.Sprint(i), errors.New("refused"))
	}
	if n := len(w.breakers.m); n > breakerLimit {
		t.Errorf("%d breakers kept, want at most %d", n, breakerLimit)
	}
	w.tally("0", nil)
	w.tally(fmt.Sprint(breakerLimit+9), nil)
	if _, ok := w.breakers.m[fmt.Sprint(breakerLimit+9)]; ok {
		t.Error("a success left its payer's breaker")
	}
}

// TestFallbackSpanRetried checks that a span written by the fallback while
// the summarizer was down is marked, applied as it is while the summarizer
// stays down (asked at most once per cool-down), and replaced by the
// summarizer's summary once it is back, which is then reused.
func TestFallbackSpanRetried(t *testing.T) {
	sum := &payingSummarizer{}
	sum.set("", true)
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store := NewMemoryStore(0)
	w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum, Store: store, Now: clk.now})
	ctx := context.Background()
	h := conversation(10, 100)
	first, err := w.Process(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := markerOf(first)
	if !strings.HasPrefix(digest, summarizer.DigestHeader) {
		t.Fatalf("marker %q, want the fallback's digest", digest)
	}
	spans, _ := store.Spans(ctx, keyOf("", h[:4]), func() []Key { return lasts(h, 3) })
	if len(spans) != 1 || !spans[0].Fallback {
		t.Fatalf("spans saved: %+v, want one marked as a fallback", spans)
	}
	// Still down: applied as it is, asked once, then not within the
	// cool-down.
	for range 2 {
		out, err := w.Process(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := markerOf(out); s != digest {
			t.Errorf("while the summarizer is down, the marker is %q, want the digest again", s)
		}
	}
	if got := sum.count(""); got != 2 {
		t.Errorf("%d summarizer calls, want 2 (the compaction and one retry)", got)
	}
	// Back: the next request past the cool-down gets the summarizer's
	// summary, saved in the digest's place and reused.
	sum.set("", false)
	clk.add(DefaultBreakerCooldown)
	for range 2 {
		out, err := w.Process(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := markerOf(out); !strings.HasPrefix(s, "Summary paid by ") {
			t.Errorf("with the summarizer back, the marker is %q, want its summary", s)
		}
	}
	if got := sum.count(""); got != 3 {
		t.Errorf("%d summarizer calls, want 3 (one more, then reused)", got)
	}
	spans, _ = store.Spans(ctx, keyOf("", h[:4]), func() []Key { return lasts(h, 3) })
	if len(spans) != 1 || spans[0].Fallback {
		t.Errorf("spans saved: %+v, want one, no longer a fallback", spans)
	}
}

// TestUnpaid checks a request nobody pays for: compacted with
// the digest, the summarizer not called, nothing saved; summaries the
// store has are still applied.
func TestUnpaid(t *testing.T) {
	sum := &payingSummarizer{}
	store := NewMemoryStore(0)
	var ev events
	w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum, Store: store, OnEvent: ev.on})
	unpaidCtx := WithRequest(context.Background(), Request{Unpaid: true})
	out, err := w.Process(unpaidCtx, conversation(10, 100))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := markerOf(out); !strings.HasPrefix(s, summarizer.DigestHeader) {
		t.Errorf("marker %q, want the digest", s)
	}
	if e := ev.last(EventFailed); e.Reason != "unpaid" || !errors.Is(e.Err, ErrUnpaid) {
		t.Errorf("reported %q, %v; want unpaid", e.Reason, e.Err)
	}
	if sum.count("") != 0 || store.Len() != 0 {
		t.Errorf("%d summarizer calls, %d spans saved; want none", sum.count(""), store.Len())
	}
	paid, err := w.Process(context.Background(), conversation(10, 100))
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.Process(unpaidCtx, conversation(10, 100))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(roles(paid), roles(again)); diff != "" || sum.count("") != 1 {
		t.Errorf("an unpaid request does not get the saved summary: %d calls, (-paid +unpaid):\n%s", sum.count(""), diff)
	}
	if s, _ := markerOf(again); !strings.HasPrefix(s, "Summary paid by") {
		t.Errorf("unpaid request after a paid one: marker %q, want the saved summary", s)
	}
}

// sharedOpening returns conversation i of many that share their head and
// the message after it, then go their own ways.
func sharedOpening(i, n int) []processor.Message {
	h := conversation(0, 0)
	for j := range n {
		id := fmt.Sprintf("c%d_%d", i, j)
		h = append(h, call(id, "bash", fmt.Sprintf(`{"command":"conversation %d step %d"}`, i, j)),
			ret(id, "bash", fmt.Sprintf("output %d/%d %s", i, j, strings.Repeat("y", 100))))
	}
	return h
}

// TestStoreKeepsSharedOpenings checks that conversations beginning alike
// do not push each other's summaries out of the store, and that a
// conversation sent again from its start finds the summary made for each
// of its lengths: no summary is paid twice.
func TestStoreKeepsSharedOpenings(t *testing.T) {
	ctx := context.Background()
	t.Run("shared-opening", func(t *testing.T) {
		sum := &payingSummarizer{}
		w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum})
		for i := range 10 {
			if _, err := w.Process(ctx, sharedOpening(i, 6)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Process(ctx, sharedOpening(0, 6)); err != nil {
			t.Fatal(err)
		}
		if got := sum.count(""); got != 10 {
			t.Errorf("%d summaries for 10 conversations, conversation 0 sent twice: want 10", got)
		}
	})
	t.Run("replay", func(t *testing.T) {
		sum := &payingSummarizer{}
		w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum})
		full := conversation(60, 100)
		send := func() {
			for n := 6; n <= len(full); n += 2 {
				if _, err := w.Process(ctx, full[:n]); err != nil {
					t.Fatal(err)
				}
			}
		}
		send()
		paid := sum.count("")
		if paid < 8 {
			t.Fatalf("%d summaries for the conversation, want many", paid)
		}
		send()
		if got := sum.count(""); got != paid {
			t.Errorf("sent again from its start, the conversation paid %d more summaries, want 0", got-paid)
		}
	})
}

// errContent is a failure caused by what a request held.
var errContent = errors.New("400: the request was refused by the content filter")

// contentSummarizer fails for histories holding "forbidden", and writes a
// summary for the others.
type contentSummarizer struct{ calls int }

func (c *contentSummarizer) Summarize(_ context.Context, ms []processor.Message, _, _ string) (string, error) {
	c.calls++
	for _, m := range ms {
		if strings.Contains(m.Text(), "forbidden") {
			return "", errContent
		}
	}
	return "A summary.", nil
}

// TestRequestFault checks that failures Options.RequestFault blames on the
// request do not open the breaker that requests share: after many of them,
// another conversation still gets the summarizer's summary.
func TestRequestFault(t *testing.T) {
	sum := &contentSummarizer{}
	w := New(Options{Ahead: -1, MaxMessages: 10, Summarizer: sum, Store: nopStore{},
		RequestFault: func(err error) bool { return errors.Is(err, errContent) }})
	ctx := context.Background()
	for i := range 5 {
		h := conversation(10+i, 100)
		h[3] = user("Say something forbidden.")
		if _, err := w.Process(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	out, err := w.Process(ctx, conversation(10, 100))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := markerOf(out); s != "A summary." {
		t.Errorf("after requests refused for their content, another got %q, want the summarizer's summary", s)
	}
	if sum.calls != 6 {
		t.Errorf("%d summarizer calls, want 6", sum.calls)
	}
}
