// Package windowlog writes the events of a sliding window (package window)
// to a zap logger, so that the window itself depends on no logging
// library. Wire it as the window's OnEvent:
//
//	window.New(window.Options{OnEvent: windowlog.Events(logger, nil)})
package windowlog

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processors/window"
)

// Events returns an OnEvent callback that writes each event to logger and
// then passes it to next (when next is not nil). A nil logger writes
// nothing. The lines:
//
//   - a compaction started: debug "window: compacting", with the messages
//     and tokens before and the number of messages summarized;
//   - a summary not used: warn "window: summary not used" with the reason
//     and the error, or, when the caller gave up (reason "canceled"),
//     info "window: compaction canceled", or, when the request was not
//     to be paid for (window.ErrUnpaid), debug "window: digest used, the
//     request not paid for";
//   - a compaction finished: info "window: compacted", with the sizes
//     before and after, the summary's size, whether the fallback wrote it,
//     whether it was shared with a concurrent request, whether it had been
//     written ahead, how long the request waited for it and how long it
//     took;
//   - a store failure: warn "window: summary store failed", naming the
//     store method and the error;
//   - a compaction deferred because its summary was not ready: info
//     "window: compaction deferred, its summary not ready", with the size
//     sent uncompacted;
//   - a summary written ahead, in the background: debug "window: writing
//     a summary ahead" when it starts, debug "window: summary written
//     ahead" when it is ready, or warn "window: summary ahead not
//     written" with the reason, and debug "window: summary ahead
//     abandoned" with the reason when it is never used. These come from
//     the window's background workers.
func Events(logger *zap.Logger, next func(context.Context, window.Event)) func(context.Context, window.Event) {
	if logger == nil {
		logger = zap.NewNop()
	}
	return func(ctx context.Context, e window.Event) {
		Log(logger, e)
		if next != nil {
			next(ctx, e)
		}
	}
}

// Log writes one event to logger, as [Events] does.
func Log(logger *zap.Logger, e window.Event) {
	switch e.Type {
	case window.EventStarted:
		if ce := logger.Check(zap.DebugLevel, "window: compacting"); ce != nil {
			ce.Write(zap.Int("messages_before", e.MessagesBefore), zap.Int("tokens_before", e.TokensBefore),
				zap.Int("summarized", e.Summarized))
		}
	case window.EventFailed:
		if e.Reason == "canceled" || errors.Is(e.Err, context.Canceled) {
			logger.Info("window: compaction canceled", zap.Error(e.Err))
			return
		}
		if errors.Is(e.Err, window.ErrUnpaid) {
			// As asked: not a failure.
			logger.Debug("window: digest used, the request not paid for", zap.Int("messages_after", e.MessagesAfter))
			return
		}
		logger.Warn("window: summary not used", zap.String("reason", e.Reason), zap.Error(e.Err),
			zap.Int("messages_after", e.MessagesAfter), zap.Bool("fallback", e.Fallback))
	case window.EventFinished:
		if ce := logger.Check(zap.InfoLevel, "window: compacted"); ce != nil {
			ce.Write(zap.Int("messages_before", e.MessagesBefore), zap.Int("messages_after", e.MessagesAfter),
				zap.Int("tokens_before", e.TokensBefore), zap.Int("tokens_after", e.TokensAfter),
				zap.Int("summarized", e.Summarized), zap.Int("summary_chars", e.SummaryChars),
				zap.Bool("fallback", e.Fallback), zap.Bool("shared", e.Shared), zap.Bool("prepared", e.Prepared),
				zap.Duration("waited", e.Waited), zap.Duration("duration", e.Duration))
		}
	case window.EventStoreFailed:
		logger.Warn("window: summary store failed", zap.String("op", e.Reason), zap.Error(e.Err))
	case window.EventDeferred:
		logger.Info("window: compaction deferred, its summary not ready", zap.Int("messages", e.MessagesBefore),
			zap.Int("tokens", e.TokensBefore))
	case window.EventAheadStarted:
		if ce := logger.Check(zap.DebugLevel, "window: writing a summary ahead"); ce != nil {
			ce.Write(zap.Int("messages", e.MessagesBefore), zap.Int("summarized", e.Summarized),
				zap.Int("summary_input", e.SummaryInput), zap.Stringer("span", e.Span))
		}
	case window.EventAheadFinished:
		if e.Err != nil {
			logger.Warn("window: summary ahead not written", zap.String("reason", e.Reason), zap.Error(e.Err),
				zap.Stringer("span", e.Span))
			return
		}
		if ce := logger.Check(zap.DebugLevel, "window: summary written ahead"); ce != nil {
			ce.Write(zap.Int("summary_chars", e.SummaryChars), zap.Duration("duration", e.Duration),
				zap.Stringer("span", e.Span))
		}
	case window.EventAheadWasted:
		if ce := logger.Check(zap.DebugLevel, "window: summary ahead abandoned"); ce != nil {
			ce.Write(zap.String("reason", e.Reason), zap.Int("summary_input", e.SummaryInput), zap.Stringer("span", e.Span))
		}
	}
}
