package summarizer_test

import (
	"context"
	"fmt"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/summarizer"
)

// The offline digest needs no model.
func ExampleDigest() {
	d := summarizer.NewDigest(summarizer.DigestOptions{})
	s, _ := d.Summarize(context.Background(), processortest.OneEdit(), "", "")
	fmt.Println(s)
	// Output:
	// Digest of earlier messages (written offline, without a model).
	// Messages covered: 4.
	// Files written: cmd/tool/main.go
	// User requests:
	// - Add a --verbose flag to cmd/tool/main.go.
	// Tool calls:
	// 1 call: Edit x1
	// - Edit: cmd/tool/main.go
	// Last assistant text:
	// Added the flag.
}

// Any function is a Summarizer (the window, compact and config take one);
// here one that only counts.
func ExampleFunc() {
	var s summarizer.Summarizer = summarizer.Func(func(_ context.Context, ms []processor.Message, previous, focus string) (string, error) {
		return fmt.Sprintf("%d messages; focus %q", len(ms), focus), nil
	})
	out, _ := s.Summarize(context.Background(), processortest.OneEdit(), "", "the flag")
	fmt.Println(out)
	// Output:
	// 4 messages; focus "the flag"
}
