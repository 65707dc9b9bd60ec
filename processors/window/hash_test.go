package window

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestKeyerOne checks that the key of one message the keyer remembers is
// the one computed anew, the first time and every time after, for
// messages of every part and one too long to remember; and that messages
// fed differently get different keys.
func TestKeyerOne(t *testing.T) {
	long := strings.Repeat("x", 500)
	var many []processor.Part
	for i := range 300 {
		many = append(many, processor.ToolCall{ToolCallID: strings.Repeat("i", i%40), ToolName: "bash", Args: long})
	}
	msgs := []processor.Message{
		processor.UserMessage("hello"),
		processor.UserMessage("hellp"),
		processor.SystemMessage(long),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: long + "a"}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", JSON: []byte(`{"a":1}`)}),
		processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "a"}, {Type: "image", Data: []byte(`{}`)}}}),
		processor.NewResponse(processor.Text{Content: "b"}, processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
		processor.NewResponse(processor.Thinking{Content: "t", Signature: "s", API: "messages", Raw: long}),
		processor.NewResponse(many...),
	}
	var k keyer
	var got, want []Key
	for range 3 {
		for i := range msgs {
			got = append(got, k.key("", msgs[i:i+1]))
			want = append(want, newHasher(true).cheapKey("", msgs[i:i+1]))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys (-computed anew +keyer):\n%s", diff)
	}
	seen := map[Key]int{}
	for i, key := range got[:len(msgs)] {
		if j, dup := seen[key]; dup {
			t.Errorf("messages %d and %d have the same key", j, i)
		}
		seen[key] = i
	}
	if lasts := k.lasts(msgs, 2); !cmp.Equal(lasts, want[2:len(msgs)-1]) {
		t.Errorf("lasts: %v, want %v", lasts, want[2:len(msgs)-1])
	}
}

// TestKeyerHeads checks that the key of several messages in a scope the
// keyer remembers (a history's head, taken with every request) is the one
// computed anew, the first time and every time after, and that heads of
// other lengths or scopes get other keys.
func TestKeyerHeads(t *testing.T) {
	msgs := []processor.Message{
		processor.SystemMessage(strings.Repeat("s", 300)),
		processor.UserMessage("fix the parser"),
		processor.UserMessage("[abridge: summary of the earlier conversation]\n" + strings.Repeat("m", 3000)),
		processor.TextMessage("on it"),
	}
	var k keyer
	seen := map[Key]string{}
	for round := range 3 {
		for _, scope := range []string{"", "conversation-1", "conversation-2"} {
			for n := 1; n <= len(msgs); n++ {
				got, want := k.key(scope, msgs[:n]), newHasher(true).cheapKey(scope, msgs[:n])
				if got != want {
					t.Errorf("round %d, scope %q, %d messages: key %v, computed anew %v", round, scope, n, got, want)
				}
				name := scope + "/" + strings.Repeat("m", n)
				if other, dup := seen[got]; dup && other != name {
					t.Errorf("%s and %s have the same key", other, name)
				}
				seen[got] = name
			}
		}
	}
}

// TestKeyerLasts checks lasts, which takes the keys of the messages a
// history shares with the one it was given before for the same head from
// then, against keys computed anew: a history growing request by request,
// one with a message of the middle changed, one shorter, one with another
// head, one too large to remember.
func TestKeyerLasts(t *testing.T) {
	var h []processor.Message
	h = append(h, processor.SystemMessage("sys"), processor.UserMessage("task"))
	for i := range 20 {
		h = append(h, processor.NewResponse(processor.ToolCall{ToolCallID: "c" + strings.Repeat("x", i), ToolName: "ls", Args: "{}"}),
			processor.NewRequest(processor.ToolReturn{ToolCallID: "c" + strings.Repeat("x", i), Content: strings.Repeat("out ", i)}))
	}
	changed := slices.Clone(h)
	changed[15] = processor.NewRequest(processor.ToolReturn{ToolCallID: "c", Content: "other"})
	otherHead := slices.Clone(h)
	otherHead[1] = processor.UserMessage("another task")
	huge := slices.Clone(h)
	huge[5] = processor.NewRequest(processor.ToolReturn{ToolCallID: "c", Content: strings.Repeat("x", maxPrevBytes/16)})
	tests := []struct {
		name string
		msgs []processor.Message
	}{
		{"first", h[:6]},
		{"grown", h[:10]},
		{"grown more", h},
		{"changed in the middle", changed},
		{"the same again", h},
		{"shorter", h[:8]},
		{"another head", otherHead},
		{"too large to remember", huge},
		{"too large, again", huge},
		{"after it", h},
	}
	var k keyer
	for _, tt := range tests {
		var want []Key
		for i := 1; i < len(tt.msgs)-1; i++ {
			want = append(want, newHasher(true).cheapKey("", tt.msgs[i:i+1]))
		}
		if diff := cmp.Diff(want, k.lasts(tt.msgs, 1)); diff != "" {
			t.Errorf("%s: lasts (-computed anew +keyer):\n%s", tt.name, diff)
		}
	}
}

// savingStore is a MemoryStore that records the spans saved.
type savingStore struct {
	*MemoryStore
	mu    sync.Mutex
	saved []Span
}

func (s *savingStore) Save(ctx context.Context, k Key, span Span) error {
	s.mu.Lock()
	s.saved = append(s.saved, span)
	s.mu.Unlock()
	return s.MemoryStore.Save(ctx, k, span)
}

// The digest of every span saved is the hash of its content, when the
// window goes on from the hash state after a head it remembered (agents
// that store the processed history, compacted again and again) and for
// two conversations whose heads have the same key (their system prompts
// differ only where a cheap key does not read) but not the same content.
func TestSpanDigestsFromHead(t *testing.T) {
	store := &savingStore{MemoryStore: NewMemoryStore(0)}
	w := New(Options{Ahead: -1, MaxMessages: 12, Store: store})
	prompt := func(c byte) string {
		return "You are a coding agent. " + strings.Repeat("r", 100) + string(c) + strings.Repeat("r", 100) + " Be brief."
	}
	stored := map[byte][]processor.Message{}
	rounds := map[byte]int{}
	// Each conversation compacted several times in a row (the window goes
	// on from its head), then the other, whose head has the same key.
	for _, c := range []byte("aaaabbbbaa") {
		round := rounds[c]
		rounds[c]++
		h := stored[c]
		if h == nil {
			h = []processor.Message{processor.SystemMessage(prompt(c)), user("Fix the failing test in pkg/x."),
				text("I'll look at the package first."), user("Go ahead.")}
		}
		h = append(slices.Clone(h), toolLoop(10*round, 5, 300)...)
		store.saved = nil
		out, err := w.Process(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if round > 0 && len(store.saved) == 0 {
			t.Fatalf("round %d, conversation %c: no compaction", round, c)
		}
		for _, s := range store.saved {
			f := newHasher(false)
			for i := range s.Head + s.Count + s.Cleared {
				f.message(&h[i])
			}
			if want := f.sum(); s.Digest != want {
				t.Errorf("round %d, conversation %c: span digest %v, the hash of its content %v", round, c, s.Digest, want)
			}
		}
		stored[c] = out
	}
	if a, b := stored['a'], stored['b']; w.keys.key("", a[:3]) != w.keys.key("", b[:3]) {
		t.Errorf("the two heads have different keys: the test no longer tries heads of the same key")
	}
}
