package windowlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/processors/window/windowlog"
)

// The window's events become zap lines: give windowlog.Events to the
// window as its OnEvent, with the callback the events go on to (nil for
// none). Here the callback is called by hand with the events a window
// sends when a summary times out and the digest stands in: both lines name
// the compaction's receipt, and the second says why the digest wrote it.
func ExampleEvents() {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "" // lines the same on every run
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(os.Stdout), zap.InfoLevel))

	compactions := 0
	onEvent := windowlog.Events(logger, func(_ context.Context, e window.Event) {
		if e.Type == window.EventFinished {
			compactions++
		}
	})
	_ = window.New(window.Options{OnEvent: onEvent}) // how it is wired

	ctx := context.Background()
	digest := window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, TokensBefore: 9120,
		TokensAfter: 4410, Summarized: 19, SummaryChars: 812, Duration: 1500 * time.Millisecond, Fallback: true,
		Summary: "The user asked to fix the parser.", Key: window.Key{1}, Span: window.Digest{2}}
	failed := digest
	failed.Type, failed.Reason, failed.Err = window.EventFailed, "timeout", errors.New("context deadline exceeded")
	onEvent(ctx, failed)
	onEvent(ctx, digest)
	fmt.Println("compactions:", compactions)
	// Output:
	// {"level":"warn","msg":"window: summary not used","reason":"timeout","error":"context deadline exceeded","messages_out":23,"fallback":true,"receipt":"e876c7757018d3517fc23739"}
	// {"level":"info","msg":"window: compacted","receipt":"e876c7757018d3517fc23739","messages_in":41,"messages_out":23,"tokens_in":9120,"tokens_out":4410,"summarized":19,"summary_chars":812,"fallback":true,"digest_reason":"timeout","shared":false,"prepared":false,"waited":0,"duration":1.5}
	// compactions: 1
}
