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
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summary"
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
			[]line{{"debug", "window: compacting", map[string]any{"messages_in": int64(41), "tokens_in": int64(9000), "summarized": int64(19)}}}},
		{"failed", window.Event{Type: window.EventFailed, Reason: "timeout", Err: boom, MessagesAfter: 23, Fallback: true},
			[]line{{"warn", "window: summary not used", map[string]any{"reason": "timeout", "error": "boom", "messages_out": int64(23), "fallback": true}}}},
		{"canceled", window.Event{Type: window.EventFailed, Reason: "canceled", Err: context.Canceled},
			[]line{{"info", "window: compaction canceled", map[string]any{"error": "context canceled"}}}},
		{"unpaid", window.Event{Type: window.EventFailed, Reason: "unpaid", Err: window.ErrUnpaid, MessagesAfter: 7, Fallback: true},
			[]line{{"debug", "window: digest used, the request not paid for", map[string]any{"messages_out": int64(7)}}}},
		{"store", window.Event{Type: window.EventStoreFailed, Reason: "save", Err: boom},
			[]line{{"warn", "window: summary store failed", map[string]any{"op": "save", "error": "boom"}}}},
		{"finished", window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, SummaryChars: 800, Shared: true},
			[]line{{"info", "window: compacted", map[string]any{"receipt": receipt.ID(window.Key{}, window.Digest{}, summary.Ref("")),
				"messages_in": int64(41), "messages_out": int64(23),
				"tokens_in": int64(0), "tokens_out": int64(0), "summarized": int64(0), "summary_chars": int64(800),
				"fallback": false, "shared": true, "prepared": false, "waited": "0s", "duration": "0s"}}}},
		{"finished ahead", window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, SummaryChars: 800, Prepared: true},
			[]line{{"info", "window: compacted", map[string]any{"receipt": receipt.ID(window.Key{}, window.Digest{}, summary.Ref("")),
				"messages_in": int64(41), "messages_out": int64(23),
				"tokens_in": int64(0), "tokens_out": int64(0), "summarized": int64(0), "summary_chars": int64(800),
				"fallback": false, "shared": false, "prepared": true, "waited": "0s", "duration": "0s"}}}},
		{"deferred", window.Event{Type: window.EventDeferred, MessagesBefore: 42, TokensBefore: 9100},
			[]line{{"info", "window: compaction deferred, its summary not ready", map[string]any{"messages_in": int64(42), "tokens_in": int64(9100)}}}},
		{"ahead started", window.Event{Type: window.EventAheadStarted, MessagesBefore: 36, Summarized: 17, Span: window.Digest{1}},
			[]line{{"debug", "window: writing a summary ahead", map[string]any{"messages_in": int64(36), "summarized": int64(17),
				"span": window.Digest{1}.String()}}}},
		{"ahead finished", window.Event{Type: window.EventAheadFinished, SummaryChars: 700, SummaryInput: 5000, Span: window.Digest{1}},
			[]line{{"debug", "window: summary written ahead", map[string]any{"summary_chars": int64(700), "summary_input": int64(5000), "duration": "0s", "span": window.Digest{1}.String()}}}},
		{"ahead failed", window.Event{Type: window.EventAheadFinished, Reason: "timeout", Err: boom, Span: window.Digest{1}},
			[]line{{"warn", "window: summary ahead not written", map[string]any{"reason": "timeout", "error": "boom", "span": window.Digest{1}.String()}}}},
		{"ahead wasted", window.Event{Type: window.EventAheadWasted, Reason: "superseded", SummaryInput: 5000, Span: window.Digest{1}},
			[]line{{"debug", "window: summary ahead abandoned", map[string]any{"reason": "superseded", "summary_input": int64(5000), "span": window.Digest{1}.String()}}}},
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
				for _, k := range []string{"duration", "waited", "span"} {
					if d, ok := fields[k].(interface{ String() string }); ok {
						fields[k] = d.String()
					}
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

// TestEventsDigestReason: when the digest stood in, the compaction's info
// line says why, and it and the warning name the same receipt, the one
// package receipt makes of the compaction.
func TestEventsDigestReason(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	on := windowlog.Events(zap.New(core), nil)
	ctx := context.Background()
	finished := window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, Summary: "digest of it",
		Key: window.Key{7}, Span: window.Digest{8}, Fallback: true}
	failed := finished
	failed.Type, failed.Reason, failed.Err = window.EventFailed, "timeout", errors.New("deadline")
	other := finished
	other.Span, other.Fallback = window.Digest{9}, false
	for _, e := range []window.Event{failed, other, finished, finished} {
		on(ctx, e)
	}
	want := receipt.New(finished, "timeout", "").ID
	type brief struct{ Message, Receipt, Reason string }
	var got []brief
	for _, l := range logs.All() {
		f := l.ContextMap()
		r, _ := f["receipt"].(string)
		reason, _ := f["digest_reason"].(string)
		got = append(got, brief{l.Message, r, reason})
	}
	wantLines := []brief{
		{"window: summary not used", want, ""},
		{"window: compacted", receipt.New(other, "", "").ID, ""},
		{"window: compacted", want, "timeout"},
		{"window: compacted", want, ""},
	}
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}
