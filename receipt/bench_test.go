package receipt

import (
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// BenchmarkRequest measures what the proxy's receipts add to each request
// they process: the conversation's id (the system prompt and the task
// hashed) and the search of the forwarded history for its last marker, on
// a compacted history of 60 messages.
func BenchmarkRequest(b *testing.B) {
	h := []processor.Message{processor.SystemMessage(strings.Repeat("You are a coding agent. ", 400)),
		processor.UserMessage("Make the test suite pass."), processor.TextMessage("Looking."),
		summary.Marker(strings.Repeat("The agent ran the tests and fixed parse.go. ", 60))}
	for len(h) < 60 {
		h = append(h, processor.TextMessage(strings.Repeat("output line\n", 40)), processor.UserMessage("go on"))
	}
	b.ReportAllocs()
	for b.Loop() {
		if ConversationID("", h) == "" || LastMarkerRef(h) == "" {
			b.Fatal("no id or no marker")
		}
	}
}
