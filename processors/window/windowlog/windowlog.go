// Package windowlog writes the events of a sliding window (package window)
// to a zap logger, so that the window itself depends on no logging
// library; each compaction's line names its receipt (package receipt).
// Wire it as the window's OnEvent:
//
//	window.New(window.Options{OnEvent: windowlog.Events(logger, nil)})
package windowlog

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summary"
)

// Events returns an OnEvent callback that writes each event to logger and
// then passes it to next (when next is not nil). A nil logger writes
// nothing. The lines:
//
//   - a compaction started: debug "window: compacting", with the messages
//     and tokens in (see below) and the number of messages summarized;
//   - a summary not used: warn "window: summary not used" with the reason
//     and the error (and, when the digest stood in, the receipt id of the
//     compaction), or, when the caller gave up (reason "canceled"), info
//     "window: compaction canceled", or, when the request was not to be
//     paid for (window.ErrUnpaid), debug "window: digest used, the request
//     not paid for";
//   - a compaction finished: info "window: compacted", with its receipt
//     id (receipt.ID: the id of its page on abridge serve's operator's
//     page), the messages and tokens in and out, the summary's size,
//     whether the fallback (the offline digest) wrote it and, when it
//     did, why (digest_reason), whether it was shared with a concurrent
//     request, whether it had been written ahead, how long the request
//     waited for it, and how long it took;
//   - a store failure: warn "window: summary store failed", naming the
//     store method and the error;
//   - a compaction deferred because its summary was not ready: info
//     "window: compaction deferred, its summary not ready", with the
//     messages and tokens in, sent uncompacted;
//   - a summary written ahead, in the background: debug "window: writing
//     a summary ahead" when it starts, debug "window: summary written
//     ahead" when it is ready, or warn "window: summary ahead not
//     written" with the reason, and debug "window: summary ahead
//     abandoned" with the reason when it is never used. These come from
//     the window's background workers.
//
// In and out measure the window's own view: messages_in and tokens_in the
// history it was given (after the processors before it in the chain, such
// as the tool-output trimmer, with the conversation's previous summary
// applied), messages_out and tokens_out the history it returned, both
// counted by the window's token counter. They are not the tokens_before
// and tokens_after of a proxy's or an agent's line, which count the
// history as the client or host sent it, at about 4 characters a token.
func Events(logger *zap.Logger, next func(context.Context, window.Event)) func(context.Context, window.Event) {
	if logger == nil {
		logger = zap.NewNop()
	}
	var reasons receipt.Reasons
	return func(ctx context.Context, e window.Event) {
		write(logger, e, reasons.Note(e))
		if next != nil {
			next(ctx, e)
		}
	}
}

// write writes e to logger; reason is why a digest stood in for a
// finished compaction, or "".
func write(logger *zap.Logger, e window.Event, reason string) {
	switch e.Type {
	case window.EventStarted:
		if ce := logger.Check(zap.DebugLevel, "window: compacting"); ce != nil {
			ce.Write(zap.Int("messages_in", e.MessagesBefore), zap.Int("tokens_in", e.TokensBefore),
				zap.Int("summarized", e.Summarized))
		}
	case window.EventFailed:
		if e.Reason == "canceled" || errors.Is(e.Err, context.Canceled) {
			logger.Info("window: compaction canceled", zap.Error(e.Err))
			return
		}
		if errors.Is(e.Err, window.ErrUnpaid) {
			// As asked: not a failure.
			logger.Debug("window: digest used, the request not paid for", zap.Int("messages_out", e.MessagesAfter))
			return
		}
		fields := []zap.Field{zap.String("reason", e.Reason), zap.Error(e.Err), zap.Int("messages_out", e.MessagesAfter), zap.Bool("fallback", e.Fallback)}
		if e.Fallback && e.Span != (window.Digest{}) {
			fields = append(fields, zap.String("receipt", receiptID(e)))
		}
		logger.Warn("window: summary not used", fields...)
	case window.EventFinished:
		if ce := logger.Check(zap.InfoLevel, "window: compacted"); ce != nil {
			fields := []zap.Field{zap.String("receipt", receiptID(e)),
				zap.Int("messages_in", e.MessagesBefore), zap.Int("messages_out", e.MessagesAfter),
				zap.Int("tokens_in", e.TokensBefore), zap.Int("tokens_out", e.TokensAfter),
				zap.Int("summarized", e.Summarized), zap.Int("summary_chars", e.SummaryChars), zap.Bool("fallback", e.Fallback)}
			if reason != "" {
				fields = append(fields, zap.String("digest_reason", reason))
			}
			ce.Write(append(fields, zap.Bool("shared", e.Shared), zap.Bool("prepared", e.Prepared),
				zap.Duration("waited", e.Waited), zap.Duration("duration", e.Duration))...)
		}
	case window.EventStoreFailed:
		logger.Warn("window: summary store failed", zap.String("op", e.Reason), zap.Error(e.Err))
	case window.EventDeferred:
		logger.Info("window: compaction deferred, its summary not ready", zap.Int("messages_in", e.MessagesBefore),
			zap.Int("tokens_in", e.TokensBefore))
	case window.EventAheadStarted:
		if ce := logger.Check(zap.DebugLevel, "window: writing a summary ahead"); ce != nil {
			ce.Write(zap.Int("messages_in", e.MessagesBefore), zap.Int("summarized", e.Summarized),
				zap.Stringer("span", e.Span))
		}
	case window.EventAheadFinished:
		if e.Err != nil {
			logger.Warn("window: summary ahead not written", zap.String("reason", e.Reason), zap.Error(e.Err),
				zap.Stringer("span", e.Span))
			return
		}
		if ce := logger.Check(zap.DebugLevel, "window: summary written ahead"); ce != nil {
			ce.Write(zap.Int("summary_chars", e.SummaryChars), zap.Int("summary_input", e.SummaryInput), zap.Duration("duration", e.Duration),
				zap.Stringer("span", e.Span))
		}
	case window.EventAheadWasted:
		if ce := logger.Check(zap.DebugLevel, "window: summary ahead abandoned"); ce != nil {
			ce.Write(zap.String("reason", e.Reason), zap.Int("summary_input", e.SummaryInput), zap.Stringer("span", e.Span))
		}
	}
}

// receiptID returns the id of the receipt of e's compaction.
func receiptID(e window.Event) string {
	return receipt.ID(e.Key, e.Span, summary.Ref(e.Summary))
}
