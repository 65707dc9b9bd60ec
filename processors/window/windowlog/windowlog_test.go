package windowlog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/processors/window/windowlog"
)

func TestEvents(t *testing.T) {
	type line struct {
		Level   string
		Message string
		Fields  map[string]any
	}
	boom := errors.New("boom")
	tests := []struct {
		name string
		e    window.Event
		want []line
	}{
		{"started", window.Event{Type: window.EventStarted, MessagesBefore: 41, TokensBefore: 9000, Summarized: 19},
			[]line{{"debug", "window: compacting", map[string]any{"messages_before": int64(41), "tokens_before": int64(9000), "summarized": int64(19)}}}},
		{"failed", window.Event{Type: window.EventFailed, Reason: "timeout", Err: boom, MessagesAfter: 23, Fallback: true},
			[]line{{"warn", "window: summary not used", map[string]any{"reason": "timeout", "error": "boom", "messages_after": int64(23), "fallback": true}}}},
		{"canceled", window.Event{Type: window.EventFailed, Reason: "canceled", Err: context.Canceled},
			[]line{{"info", "window: compaction canceled", map[string]any{"error": "context canceled"}}}},
		{"unpaid", window.Event{Type: window.EventFailed, Reason: "unpaid", Err: window.ErrUnpaid, MessagesAfter: 7, Fallback: true},
			[]line{{"debug", "window: digest used, the request not paid for", map[string]any{"messages_after": int64(7)}}}},
		{"store", window.Event{Type: window.EventStoreFailed, Reason: "save", Err: boom},
			[]line{{"warn", "window: summary store failed", map[string]any{"op": "save", "error": "boom"}}}},
		{"finished", window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, SummaryChars: 800, Shared: true},
			[]line{{"info", "window: compacted", map[string]any{"messages_before": int64(41), "messages_after": int64(23),
				"tokens_before": int64(0), "tokens_after": int64(0), "summarized": int64(0), "summary_chars": int64(800),
				"fallback": false, "shared": true, "duration": "0s"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			var passed []window.Event
			on := windowlog.Events(zap.New(core), func(_ context.Context, e window.Event) { passed = append(passed, e) })
			on(context.Background(), tc.e)
			var got []line
			for _, l := range logs.All() {
				fields := l.ContextMap()
				if d, ok := fields["duration"]; ok {
					fields["duration"] = d.(interface{ String() string }).String()
				}
				got = append(got, line{l.Level.String(), l.Message, fields})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("log lines (-want +got):\n%s", diff)
			}
			if len(passed) != 1 || passed[0].Type != tc.e.Type {
				t.Errorf("next got %v, want the event", passed)
			}
		})
	}
}
