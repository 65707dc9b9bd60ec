package middleware

import "github.com/abridge-go/abridge/processor"

// TestAnchors gives the benchmarks the middleware's anchors.
type TestAnchors struct{ a *anchors }

// NewTestAnchors returns anchors remembering n conversations.
func NewTestAnchors(n int) TestAnchors { return TestAnchors{newAnchors(n)} }

// Keys hashes history.
func (t TestAnchors) Keys(history []processor.Message) {
	t.a.keys("chat", "gpt-test", "", history)
}

// Anchor hashes history and anchors its last response.
func (t TestAnchors) Anchor(history []processor.Message) bool {
	return t.a.anchor(history, t.a.keys("chat", "gpt-test", "", history))
}

// Put remembers u for a request of history that forwarded it whole.
func (t TestAnchors) Put(history []processor.Message, u processor.Usage) {
	t.a.put(t.a.keys("chat", "gpt-test", "", history).whole, len(history), u)
}
