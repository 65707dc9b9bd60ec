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
// sends when a summary times out and the digest stands in, then when one
// is written.
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
	onEvent(ctx, window.Event{Type: window.EventFailed, Reason: "timeout", Err: errors.New("context deadline exceeded"),
		MessagesAfter: 23, Fallback: true})
	onEvent(ctx, window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, TokensBefore: 9120,
		TokensAfter: 4410, Summarized: 19, SummaryChars: 812, Duration: 1500 * time.Millisecond})
	fmt.Println("compactions:", compactions)
	// Output:
	// {"level":"warn","msg":"window: summary not used","reason":"timeout","error":"context deadline exceeded","messages_after":23,"fallback":true}
	// {"level":"info","msg":"window: compacted","messages_before":41,"messages_after":23,"tokens_before":9120,"tokens_after":4410,"summarized":19,"summary_chars":812,"fallback":false,"shared":false,"prepared":false,"waited":0,"duration":1.5}
	// compactions: 1
}
