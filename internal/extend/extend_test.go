package extend

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestCacheTakePut runs sequences of Take and Put on a cache of two
// entries and checks what each Take returns.
func TestCacheTakePut(t *testing.T) {
	entries := map[string]*Entry{"e1": {From: 1}, "e2": {From: 2}, "e3": {From: 3}}
	type op struct {
		take  bool   // Take key, else Put entry under key
		key   string // the cache key
		entry string // Put: the entry to store; Take: the entry wanted, "" for nil
	}
	put := func(key, entry string) op { return op{key: key, entry: entry} }
	take := func(key, want string) op { return op{take: true, key: key, entry: want} }
	tests := []struct {
		name string
		ops  []op
	}{
		{"empty", []op{take("a", "")}},
		{"take returns what put stored", []op{put("a", "e1"), take("a", "e1")}},
		{"take removes", []op{put("a", "e1"), take("a", "e1"), take("a", "")}},
		{"keys are distinct", []op{put("a", "e1"), put("b", "e2"), take("b", "e2"), take("a", "e1")}},
		{"put replaces", []op{put("a", "e1"), put("a", "e2"), take("a", "e2"), take("a", "")}},
		{"replacing evicts nothing", []op{put("a", "e1"), put("b", "e2"), put("a", "e3"), take("b", "e2"), take("a", "e3")}},
		{"put after take", []op{put("a", "e1"), take("a", "e1"), put("a", "e2"), take("a", "e2")}},
		{"room freed by take", []op{put("a", "e1"), put("b", "e2"), take("a", "e1"), put("c", "e3"), take("b", "e2"), take("c", "e3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string](2)
			for i, o := range tt.ops {
				if !o.take {
					c.Put(o.key, entries[o.entry])
					continue
				}
				if got, want := c.Take(o.key), entries[o.entry]; got != want {
					t.Fatalf("op %d: Take(%q) = %s, want %s", i, o.key, entryName(entries, got), entryName(entries, want))
				}
			}
		})
	}
}

// entryName returns the name of e in entries, or "nil".
func entryName(entries map[string]*Entry, e *Entry) string {
	for k, v := range entries {
		if v == e {
			return k
		}
	}
	if e == nil {
		return "nil"
	}
	return fmt.Sprintf("an unknown entry %p", e)
}

// TestCacheLimit puts more keys than the limit allows and checks after
// each Put that the cache holds at most limit entries, the one just put
// among them.
func TestCacheLimit(t *testing.T) {
	tests := []struct {
		limit, want int // want: the effective limit
	}{
		{-3, 1}, {0, 1}, {1, 1}, {2, 2}, {5, 5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			c := NewCache[int](tt.limit)
			full := false
			for k := range 4 * tt.want {
				e := &Entry{From: k}
				c.Put(k, e)
				if n := len(c.items); n > tt.want {
					t.Fatalf("after %d puts: %d entries, limit %d", k+1, n, tt.want)
				}
				full = full || len(c.items) == tt.want
				if got := c.Take(k); got != e {
					t.Fatalf("put %d: the entry just put is not there", k)
				}
				c.Put(k, e)
			}
			if !full {
				t.Errorf("the cache never held %d entries", tt.want)
			}
			// Putting a key already there, when full, keeps every key.
			before := len(c.items)
			for k := range c.items {
				c.Put(k, &Entry{})
			}
			if len(c.items) != before {
				t.Errorf("replacing entries of a full cache: %d entries, want %d", len(c.items), before)
			}
		})
	}
}

// TestCacheSighted offers keys to Sighted in turn and checks each answer.
func TestCacheSighted(t *testing.T) {
	type sight struct {
		key  string
		want bool
	}
	seq := func(want bool, keys ...string) []sight {
		var s []sight
		for _, k := range keys {
			s = append(s, sight{k, want})
		}
		return s
	}
	tests := []struct {
		name  string
		limit int
		seq   []sight
	}{
		{"false, true, false", 1, concat(seq(false, "a"), seq(true, "a"), seq(false, "a"), seq(true, "a"))},
		{"keys apart", 1, concat(seq(false, "a", "b"), seq(true, "b", "a"), seq(false, "b"))},
		{"4 × limit keys remembered", 1, concat(seq(false, "a", "b", "c", "d"), seq(true, "d", "c", "b", "a"))},
		{"4 × limit keys remembered, limit 2", 2, concat(seq(false, "a", "b", "c", "d", "e", "f", "g", "h"), seq(true, "a", "h"))},
		{"limit 0 counts as 1", 0, concat(seq(false, "a", "b", "c", "d"), seq(true, "a", "d"))},
		{"forgotten past 4 × limit", 1, concat(seq(false, "a", "b", "c", "d", "e"), seq(false, "a"), seq(true, "e"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string](tt.limit)
			for i, s := range tt.seq {
				if got := c.Sighted(s.key); got != s.want {
					t.Fatalf("sighting %d: Sighted(%q) = %v, want %v", i, s.key, got, s.want)
				}
			}
		})
	}
}

// concat returns the elements of parts, in order, in one slice.
func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestCacheConcurrent has goroutines take and put back a few entries and
// checks that no entry is ever held by two goroutines at once. Run it
// with -race.
func TestCacheConcurrent(t *testing.T) {
	const keys, goroutines, rounds = 3, 8, 2000
	c := NewCache[int](keys)
	holders := map[*Entry]*atomic.Int32{}
	for k := range keys {
		e := &Entry{From: k}
		holders[e] = new(atomic.Int32)
		c.Put(k, e)
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				k := (g + r) % keys
				c.Sighted(k)
				e := c.Take(k)
				if e == nil {
					continue
				}
				if n := holders[e].Add(1); n != 1 {
					t.Errorf("entry %d held by %d goroutines at once", e.From, n)
				}
				e.Out = append(e.Out[:0], processor.UserMessage("x"))
				holders[e].Add(-1)
				c.Put(k, e)
			}
		})
	}
	wg.Wait()
}

// history returns a history whose parts hold each kind of slice.
func history() []processor.Message {
	return []processor.Message{
		processor.SystemMessage("be brief"),
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{
			{Type: "text", Text: "look"},
			{Type: "image_url", Data: json.RawMessage(`{"url":"data:image/png;base64,iVBORw0KGgo="}`)},
		}}),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "api"}, processor.ToolCall{ToolCallID: "c2", ToolName: "bash"}),
		processor.NewRequest(
			processor.ToolReturn{ToolName: "api", ToolCallID: "c1", JSON: json.RawMessage(`{"ok":true}`)},
			processor.ToolReturn{ToolName: "bash", ToolCallID: "c2", Contents: []string{"out", "err"}},
		),
		processor.TextMessage("done"),
		processor.UserMessage("next"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c3", ToolName: "bash"}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c3", Content: "plain"}),
	}
}

// TestEntryExtends remembers the first remembered messages of a history,
// then changes a copy of it and checks whether the entry still extends to
// it.
func TestEntryExtends(t *testing.T) {
	const remembered = 5 // messages the entry remembers
	tests := []struct {
		name   string
		change func(h []processor.Message) []processor.Message
		want   bool
	}{
		{"same messages", func(h []processor.Message) []processor.Message { return h[:remembered] }, true},
		{"grown by one", func(h []processor.Message) []processor.Message { return h[:remembered+1] }, true},
		{"grown by three", func(h []processor.Message) []processor.Message { return h }, true},
		{"equal copies", func(h []processor.Message) []processor.Message { return processor.Clone(h) }, true},
		{"shorter by one", func(h []processor.Message) []processor.Message { return h[:remembered-1] }, false},
		{"empty", func(h []processor.Message) []processor.Message { return h[:0] }, false},
		{"message replaced", func(h []processor.Message) []processor.Message {
			h[1] = processor.UserMessage("look")
			return h
		}, false},
		{"first message replaced", func(h []processor.Message) []processor.Message {
			h[0] = processor.SystemMessage("be verbose")
			return h
		}, false},
		{"last remembered message replaced", func(h []processor.Message) []processor.Message {
			h[remembered-1] = processor.TextMessage("done!")
			return h
		}, false},
		{"message replaced by an equal one", func(h []processor.Message) []processor.Message {
			h[0] = processor.SystemMessage("be brief")
			return h
		}, true},
		{"message past the remembered ones replaced", func(h []processor.Message) []processor.Message {
			h[remembered] = processor.UserMessage("other")
			return h
		}, true},
		{"part replaced in place", func(h []processor.Message) []processor.Message {
			h[3].Parts[1] = processor.ToolReturn{ToolName: "bash", ToolCallID: "c2", Contents: []string{"out", "ERR"}}
			return h
		}, false},
		{"part added", func(h []processor.Message) []processor.Message {
			h[4].Parts = append(h[4].Parts, processor.Text{Content: "more"})
			return h
		}, false},
		{"JSON bytes changed in place", func(h []processor.Message) []processor.Message {
			h[3].Parts[0].(processor.ToolReturn).JSON[2] = 'O'
			return h
		}, false},
		{"multi-part string changed in place", func(h []processor.Message) []processor.Message {
			h[3].Parts[1].(processor.ToolReturn).Contents[1] = "ERR"
			return h
		}, false},
		{"user content data changed in place", func(h []processor.Message) []processor.Message {
			h[1].Parts[0].(processor.UserPrompt).Contents[1].Data[2] = 'U'
			return h
		}, false},
		{"user content text changed in place", func(h []processor.Message) []processor.Message {
			h[1].Parts[0].(processor.UserPrompt).Contents[0].Text = "LOOK"
			return h
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history()
			e := &Entry{}
			if !e.Extends(h[:0]) || !e.Extends(h) {
				t.Fatal("an empty entry does not extend to every history")
			}
			e.Remember(h[:remembered])
			if got := e.Extends(tt.change(h)); got != tt.want {
				t.Errorf("Extends = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEntryExtendsFrom checks that an entry whose From is past 0 compares
// only the messages from From on.
func TestEntryExtendsFrom(t *testing.T) {
	h := history()
	e := &Entry{From: 2}
	e.Remember(h[:5])
	if e.End() != 5 {
		t.Fatalf("End = %d, want 5", e.End())
	}
	if !e.Extends(h) {
		t.Fatal("Extends(the history remembered) = false")
	}
	h[0] = processor.SystemMessage("another")
	if !e.Extends(h) {
		t.Error("a message before From changed: Extends = false, want true")
	}
	h[2] = processor.TextMessage("another")
	if e.Extends(h) {
		t.Error("the message at From changed: Extends = true, want false")
	}
}

// TestEntryRemember checks that Remember copies only the messages past
// those the entry has, in a new chunk, and leaves the chunks it had alone.
func TestEntryRemember(t *testing.T) {
	h := history()
	tests := []struct {
		n          int   // Remember(h[:n])
		wantChunks []int // lengths of the chunks after it
	}{
		{0, nil},
		{2, []int{2}},
		{2, []int{2}},
		{1, []int{2}},
		{3, []int{2, 1}},
		{7, []int{2, 1, 4}},
		{5, []int{2, 1, 4}},
		{8, []int{2, 1, 4, 1}},
	}
	e := &Entry{}
	var firsts []*processor.Message // the first message of each chunk
	for i, tt := range tests {
		e.Remember(h[:tt.n])
		var got []int
		for _, ch := range e.seen {
			got = append(got, len(ch))
		}
		if diff := cmp.Diff(tt.wantChunks, got); diff != "" {
			t.Fatalf("step %d, Remember(%d messages): chunk lengths (-want +got):\n%s", i, tt.n, diff)
		}
		if want := sum(tt.wantChunks); e.End() != want || e.n != want {
			t.Fatalf("step %d: End = %d, n = %d, want %d", i, e.End(), e.n, want)
		}
		for k := range firsts {
			if &e.seen[k][0] != firsts[k] {
				t.Fatalf("step %d: chunk %d was copied again", i, k)
			}
		}
		for k := len(firsts); k < len(e.seen); k++ {
			firsts = append(firsts, &e.seen[k][0])
		}
	}
	if diff := seenDiff(e, h); diff != "" {
		t.Error(diff)
	}
}

func sum(s []int) int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// seenDiff returns "" when the messages e remembers equal those of want
// from e.From on, and else the first difference.
func seenDiff(e *Entry, want []processor.Message) string {
	i := e.From
	for _, ch := range e.seen {
		for _, m := range ch {
			if !processor.Equal(want[i], m) {
				return fmt.Sprintf("remembered message %d (-want +got):\n%s", i, cmp.Diff(want[i], m))
			}
			i++
		}
	}
	return ""
}

// TestEntryCopies checks that the messages an entry remembers do not
// change when the host changes its messages in place, and that the entry
// sees the change.
func TestEntryCopies(t *testing.T) {
	h := history()
	pristine := history()
	e := &Entry{}
	e.Remember(h[:4])
	e.Remember(h)
	// Change, in place, every slice the history holds.
	h[1].Parts[0].(processor.UserPrompt).Contents[0].Text = "changed"
	h[1].Parts[0].(processor.UserPrompt).Contents[1].Data[0] = '['
	h[3].Parts[0].(processor.ToolReturn).JSON[1] = '['
	h[3].Parts[1].(processor.ToolReturn).Contents[0] = "changed"
	h[7].Parts[0] = processor.ToolReturn{ToolName: "bash", ToolCallID: "c3", Content: "changed"}
	h[5] = processor.UserMessage("changed")
	if diff := seenDiff(e, pristine); diff != "" {
		t.Errorf("the copies changed with the host's history: %s", diff)
	}
	if e.Extends(h) {
		t.Error("Extends = true after the host changed its history")
	}
	if !e.Extends(pristine) {
		t.Error("Extends(the history as remembered) = false")
	}
}

// TestSpareAndClip checks the two small helpers.
func TestSpareAndClip(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 100, 1000} {
		if s := Spare(n); s < 1 || s < n/4 {
			t.Errorf("Spare(%d) = %d, want at least max(1, n/4)", n, s)
		}
	}
	s := make([]processor.Message, 3, 10)
	c := Clip(s)
	if len(c) != 3 || cap(c) != 3 || &c[0] != &s[0] {
		t.Errorf("Clip: len %d cap %d, same array %v; want 3, 3, true", len(c), cap(c), &c[0] == &s[0])
	}
}

// TestEntryCurrent builds an entry whose Out holds a history's messages,
// one of them (index 3) replaced by a message of the processor's own, and
// checks whether Out is current for the history after a change.
func TestEntryCurrent(t *testing.T) {
	const own = 3
	tests := []struct {
		name   string
		change func(h []processor.Message)
		want   bool
	}{
		{"unchanged", func([]processor.Message) {}, true},
		{"parts swapped for an equal copy", func(h []processor.Message) { h[1].Parts = append([]processor.Part(nil), h[1].Parts...) }, false},
		{"parts of a message of its own swapped", func(h []processor.Message) { h[own].Parts = append([]processor.Part(nil), h[own].Parts...) }, true},
		{"metadata added", func(h []processor.Message) { h[2] = h[2].WithMeta(processor.Meta{ModelName: "m"}) }, false},
		{"metadata added to a message of its own", func(h []processor.Message) { h[own] = h[own].WithMeta(processor.Meta{Name: "n"}) }, false},
		{"a message past those remembered", func(h []processor.Message) { h[6].Parts = nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := history()
			e := &Entry{Out: append([]processor.Message(nil), h[:6]...)}
			e.Remember(h[:6])
			e.Out[own].Parts = []processor.Part{processor.ToolReturn{ToolName: "api", ToolCallID: "c1", Content: "trimmed"}}
			e.Own(own)
			tt.change(h)
			if got := e.Current(h); got != tt.want {
				t.Errorf("Current = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("result was the input", func(t *testing.T) {
		e := &Entry{}
		e.Remember(history())
		if !e.Current(history()) {
			t.Error("an entry without Out is not current")
		}
	})
}

// TestEntryOwnsFar checks ownership bits far apart (several words).
func TestEntryOwnsFar(t *testing.T) {
	var e Entry
	marks := []int{0, 63, 64, 200}
	for _, j := range marks {
		e.Own(j)
	}
	var got []int
	for j := range 300 {
		if e.Owns(j) {
			got = append(got, j)
		}
	}
	if diff := cmp.Diff(marks, got); diff != "" {
		t.Errorf("owned positions (-want +got):\n%s", diff)
	}
}

// TestCacheMark checks that a marked key counts as sighted once.
func TestCacheMark(t *testing.T) {
	c := NewCache[int](2)
	c.Mark(7)
	got := []bool{c.Sighted(7), c.Sighted(7), c.Sighted(7)}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("Sighted after Mark (-want +got):\n%s", diff)
	}
	for k := range 8 { // 4 × limit keys: the next one clears them
		c.Mark(100 + k)
	}
	c.Mark(200)
	if c.Sighted(100) {
		t.Error("a key marked before the candidates were cleared is still sighted")
	}
	if !c.Sighted(200) {
		t.Error("the key marked last is not sighted")
	}
}

// plainHistory returns a history whose parts hold no slice: the copies an
// entry keeps share its parts.
func plainHistory() []processor.Message {
	return []processor.Message{
		processor.SystemMessage("be brief"),
		processor.UserMessage("look"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "api"}),
		processor.NewRequest(processor.ToolReturn{ToolName: "api", ToolCallID: "c1", Content: "ok"}),
		processor.TextMessage("done"),
		processor.UserMessage("next"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c3", ToolName: "bash"}),
		processor.NewRequest(processor.ToolReturn{ToolName: "bash", ToolCallID: "c3", Content: "plain"}),
	}
}

// TestEntryReuses builds entries as TestEntryCurrent does, on a history
// whose parts hold slices and on one whose parts do not, changes the
// history, and checks that Reuses agrees with Extends and Current
// together; but for a Meta changed in place, which only the copies tell
// from the one seen and which a result shares with history (so reusing
// it is right), Reuses may answer from the very messages alone.
func TestEntryReuses(t *testing.T) {
	const own, remembered = 3, 6
	tests := []struct {
		name   string
		n      int // the history passed is h[:n] after the change
		change func(h []processor.Message)
		fast   bool // Reuses answers true for the plain history while Extends does not
	}{
		{"unchanged", remembered, func([]processor.Message) {}, false},
		{"grown", remembered + 1, func([]processor.Message) {}, false},
		{"shorter", remembered - 1, func([]processor.Message) {}, false},
		{"equal copies", remembered, func(h []processor.Message) { copy(h, processor.Clone(h)) }, false},
		{"message replaced", remembered, func(h []processor.Message) { h[1] = processor.UserMessage("other") }, false},
		{"message replaced by an equal one", remembered, func(h []processor.Message) { h[0] = processor.SystemMessage("be brief") }, false},
		{"kind changed", remembered, func(h []processor.Message) { h[4].Kind = processor.Request }, false},
		{"part replaced in place", remembered, func(h []processor.Message) {
			h[own].Parts[0] = processor.ToolReturn{ToolName: "api", ToolCallID: "c1", Content: "changed"}
		}, false},
		{"parts swapped for an equal copy", remembered, func(h []processor.Message) { h[1].Parts = slices.Clone(h[1].Parts) }, false},
		{"parts of a message of its own swapped", remembered, func(h []processor.Message) { h[own].Parts = slices.Clone(h[own].Parts) }, false},
		{"metadata added", remembered, func(h []processor.Message) { h[1] = h[1].WithMeta(processor.Meta{ModelName: "m"}) }, false},
		{"metadata replaced by an equal one", remembered, func(h []processor.Message) { h[2] = h[2].WithMeta(h[2].Info()) }, false},
		{"metadata changed in place", remembered, func(h []processor.Message) { h[2].Meta.ModelName = "changed" }, true},
	}
	for _, hist := range []struct {
		name string
		make func() []processor.Message
	}{{"slices", history}, {"plain", plainHistory}} {
		for _, tt := range tests {
			t.Run(hist.name+"/"+tt.name, func(t *testing.T) {
				h := hist.make()
				h[2] = h[2].WithMeta(processor.Meta{ModelName: "m"})
				e := &Entry{Out: append([]processor.Message(nil), h[:remembered]...)}
				e.Remember(h[:remembered])
				e.Out[own].Parts = []processor.Part{processor.ToolReturn{ToolName: "api", ToolCallID: "c1", Content: "trimmed"}}
				e.Own(own)
				tt.change(h)
				h = h[:tt.n]
				want := e.Extends(h) && e.Current(h)
				if tt.fast && hist.name == "plain" {
					want = true
				}
				if got := e.Reuses(h); got != want {
					t.Errorf("Reuses = %v, want %v (Extends %v, Current %v)", got, want, e.Extends(h), e.Current(h))
				}
				if very := tt.name == "unchanged" || tt.name == "grown"; hist.name == "plain" && very && !e.same(h) {
					t.Error("history holds the very messages seen, yet same = false")
				}
			})
		}
	}
}
