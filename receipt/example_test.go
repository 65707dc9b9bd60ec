package receipt_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summarizer"
)

// A host gives each request a Recorder, as the window's per-request
// OnEvent: the compactions made while the request was processed come back
// as receipts.
func ExampleRecorder() {
	w := window.New(window.Options{MaxMessages: 6, KeepMessages: 2, Summarizer: summarizer.NewDigest(summarizer.DigestOptions{})})
	long := strings.Repeat("I read parse.go line by line. ", 40)
	history := []processor.Message{processor.SystemMessage("You fix bugs."), processor.UserMessage("Fix the failing test."),
		processor.TextMessage("Looking."), processor.UserMessage("It is in parse.go."), processor.TextMessage(long),
		processor.UserMessage("Go on."), processor.TextMessage(long), processor.UserMessage("Run the tests.")}

	var rec receipt.Recorder
	ctx := window.WithRequest(context.Background(), window.Request{OnEvent: rec.Observe})
	if _, err := w.Process(ctx, history); err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rec.Take(receipt.WriterDigest) {
		fmt.Printf("messages %d → %d, replaced %d (%s … %s), written by the %s\n",
			r.Before.Messages, r.After.Messages, len(r.Replaced), r.Replaced[0].Role, r.Replaced[len(r.Replaced)-1].Role, r.Writer)
		fmt.Println("valid id:", receipt.ValidID(r.ID))
	}
	// Output:
	// messages 8 → 6, replaced 3 (user … user), written by the digest
	// valid id: true
}
