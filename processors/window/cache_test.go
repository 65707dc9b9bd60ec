package window

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// TestFullHistoryHashesEachMessageOnce replays transcripts keeping the full
// history: the remembered cut is checked on every request, yet each message
// is hashed about once over the whole conversation, not once per request.
func TestFullHistoryHashesEachMessageOnce(t *testing.T) {
	files := append(transcripts.Shipped(t), transcripts.Largest(t))
	for _, file := range files {
		msgs, err := model.LoadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(baseName(file), func(t *testing.T) {
			var ev events
			w := New(Options{MaxMessages: 10, Summarizer: constSummary{}, OnEvent: ev.on})
			points := requestPoints(msgs)
			for _, i := range points {
				if _, err := w.Process(context.Background(), msgs[:i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if len(ev.all) == 0 {
				t.Skipf("%d messages: no compaction", len(msgs))
			}
			hashed := w.cache.hashed.Load()
			t.Logf("%d messages, %d requests, %d events, %d messages hashed", len(msgs), len(points), len(ev.all), hashed)
			if hashed > int64(len(msgs)) {
				t.Errorf("%d messages hashed for a %d-message conversation: more than once each", hashed, len(msgs))
			}
		})
	}
}

// TestFullHistoryNoticesChanges edits the history in place after a
// compaction: any change of content inside the compacted span must make
// the window drop the remembered cut, and a change of metadata alone must
// not.
func TestFullHistoryNoticesChanges(t *testing.T) {
	base := conversation(12, 100)
	base[7] = processor.NewRequest(processor.ToolReturn{ToolCallID: "call_1", ToolName: "bash", JSON: []byte(`{"out":"ok"}`)})
	for _, tc := range []struct {
		name   string
		edit   func(h []processor.Message)
		reused bool
	}{
		{"nothing", func([]processor.Message) {}, true},
		{"copies of the same messages", func(h []processor.Message) {
			copy(h, processortest.Clone(h))
		}, true},
		{"metadata only", func(h []processor.Message) { h[6] = h[6].WithMeta(processor.Meta{ModelName: "other-model"}) }, true},
		{"a part replaced in place", func(h []processor.Message) {
			h[10].Parts[0] = processor.ToolReturn{ToolCallID: "call_3", ToolName: "bash", Content: "changed"}
		}, false},
		{"a JSON payload changed in place", func(h []processor.Message) {
			h[7].Parts[0].(processor.ToolReturn).JSON[2] = 'O'
		}, false},
		{"a message replaced", func(h []processor.Message) {
			h[4] = call("call_0", "bash", `{"command":"rm -rf /"}`)
		}, false},
		{"the head changed", func(h []processor.Message) { h[1] = user("Another task.") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := processortest.Clone(base)
			var ev events
			w := New(Options{MaxMessages: 12, Summarizer: constSummary{}, OnEvent: ev.on})
			if _, err := w.Process(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			if len(ev.all) == 0 {
				t.Fatalf("no compaction of %s", roles(h))
			}
			tc.edit(h)
			v := w.view(h)
			if got := v.reused > 0; got != tc.reused {
				t.Errorf("remembered cut reused = %v, want %v", got, tc.reused)
			}
		})
	}
}

func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}

// TestKeyMemo computes the key of a history, then of the same history
// changed, and checks that every key is the one computed afresh: a key
// remembered from the very same messages is used only while they are
// unchanged, and never for messages with metadata.
func TestKeyMemo(t *testing.T) {
	base := conversation(4, 100)
	head := headEnd(base, 10)
	end := head + 1
	tests := []struct {
		name   string
		change func(h []processor.Message)
	}{
		{"unchanged", func([]processor.Message) {}},
		{"copies of the same messages", func(h []processor.Message) { copy(h, processortest.Clone(h)) }},
		{"a part replaced in place", func(h []processor.Message) { h[0].Parts[0] = processor.SystemPrompt{Content: "Be a poet."} }},
		{"the message after the head replaced", func(h []processor.Message) { h[head] = user("Stop.") }},
		{"a kind changed", func(h []processor.Message) { h[head].Kind = processor.Response }},
		{"metadata added", func(h []processor.Message) { h[1] = h[1].WithMeta(processor.Meta{Name: "ann"}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache(4)
			h := processortest.Clone(base)
			if got, want := c.key(h, head), c.hashKey(h[:end]); got != want {
				t.Fatalf("key = %x, want %x", got, want)
			}
			m := c.memo(uintptr(unsafe.Pointer(unsafe.SliceData(h[0].Parts))))
			if m == nil || !m.holds(h[:end]) {
				t.Fatal("the key computed is not remembered")
			}
			tc.change(h)
			if got, want := c.key(h, head), c.hashKey(h[:end]); got != want {
				t.Errorf("after the change: key = %x, want %x", got, want)
			}
			if got := c.key(h, head); got != c.hashKey(h[:end]) {
				t.Errorf("asked again: key = %x, want %x", got, c.hashKey(h[:end]))
			}
		})
	}
}

// TestFullHistoryOutputs replays the largest transcript keeping the full
// history, as TestReplayCost does, and checks each result against that of
// a window given an equal copy of the history on every request (whose
// results are never extended): the same messages, and the tail of the
// result holding history's very messages. Half-way through, the host
// swaps a recent message for an equal copy, which a result extended from
// the previous one would miss. Results are extended in place between
// compactions, yet none changes after it is returned.
func TestFullHistoryOutputs(t *testing.T) {
	msgs, err := model.LoadFile(transcripts.Largest(t))
	if err != nil {
		t.Fatal(err)
	}
	points := requestPoints(msgs)
	ctx := context.Background()
	w, ref := New(Options{Summarizer: constSummary{}}), New(Options{Summarizer: constSummary{}})
	type kept struct{ out, copy []processor.Message }
	var ks []kept
	var prev []processor.Message
	extended := 0
	for n, i := range points {
		if n == len(points)/2 {
			msgs[i-2] = processortest.Clone(msgs[i-2 : i-1])[0]
		}
		got, err := w.Process(ctx, msgs[:i+1])
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Process(ctx, processortest.Clone(msgs[:i+1]))
		if err != nil {
			t.Fatal(err)
		}
		if err := processortest.Diff(want, got); err != nil {
			t.Fatalf("request at message %d: %v", i, err)
		}
		if unsafe.SliceData(got) != unsafe.SliceData(msgs) && cap(got) != len(got) {
			t.Fatalf("request at message %d: result of length %d has capacity %d", i, len(got), cap(got))
		}
		m := slices.IndexFunc(got, isMarker)
		if tail := got[m+1:]; m >= 0 && !sameValues(tail, msgs[i+1-len(tail):i+1]) {
			t.Fatalf("request at message %d: the tail does not hold the history's messages", i)
		}
		if prev != nil && len(got) > len(prev) && unsafe.SliceData(got) == unsafe.SliceData(prev) {
			extended++
		}
		ks = append(ks, kept{got, processortest.Clone(got)})
		prev = got
	}
	for k, r := range ks {
		if err := processortest.Diff(r.copy, r.out); err != nil {
			t.Fatalf("result %d changed after it was returned: %v", k, err)
		}
	}
	t.Logf("%d requests, %d results extended in place", len(points), extended)
	if extended == 0 {
		t.Error("no result was extended in place")
	}
}

// TestFullHistoryConcurrent has goroutines replay the largest transcript
// at once through one window, keeping the full history (the same array):
// every result must be the history's head, a marker and the history's
// tail (its very messages), and none may change after it was returned,
// though results are extended in place. Run it with -race.
func TestFullHistoryConcurrent(t *testing.T) {
	msgs, err := model.LoadFile(transcripts.Largest(t))
	if err != nil {
		t.Fatal(err)
	}
	points := requestPoints(msgs)
	w := New(Options{Summarizer: constSummary{}, MaxMessages: 20})
	const goroutines = 4
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			type kept struct{ out, copy []processor.Message }
			var ks []kept
			for k := range points {
				i := points[(k+g*len(points)/goroutines)%len(points)]
				h := msgs[:i+1]
				out, err := w.Process(context.Background(), h)
				if err != nil {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
				if m := slices.IndexFunc(out, isMarker); m >= 0 {
					tail := out[m+1:]
					if !sameValues(out[:m], h[:m]) || !sameValues(tail, h[len(h)-len(tail):]) {
						t.Errorf("goroutine %d, request at message %d: not the history's head, a marker and its tail", g, i)
						return
					}
				}
				ks = append(ks, kept{out, processortest.Clone(out)})
			}
			for k, r := range ks {
				if err := processortest.Diff(r.copy, r.out); err != nil {
					t.Errorf("goroutine %d: result %d changed after it was returned: %v", g, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
