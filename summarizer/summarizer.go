// Package summarizer holds the one [Summarizer] interface that writes the
// summaries replacing compacted history: the window, on-demand compaction
// and the configuration take it, and [Func] makes one of a function.
// [Digest] summarizes offline, without a model: it is the window's fallback
// and the default when no model is configured. The summarizer that asks a
// language model is package summarizer/llm's, so that what takes the
// interface (the window, compact) links neither a model nor a logging
// library. What a summary is made of (the marker, the facts, the
// placeholder) is package summary's.
package summarizer

import (
	"context"

	"github.com/abridge-go/abridge/processor"
)

// Summarizer writes the summary that replaces compacted messages.
//
// Summarize returns a summary of messages that merges previous (the
// summary of earlier compactions, "" when none) into it, so a conversation
// compacted many times carries one rolling summary. focus is the user's
// instruction on what to keep above all (an on-demand compaction's, as in
// "/compact focus on the failing tests"), "" when none; the window always
// passes "". messages are read-only and not kept. A summary that holds
// nothing but white space is reported as summary.ErrEmpty.
//
// Summarize must honour ctx (the window sets a deadline) and be safe for
// concurrent use: one summarizer serves every conversation of a window.
type Summarizer interface {
	Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error)
}

// Func adapts a function to the [Summarizer] interface.
type Func func(ctx context.Context, messages []processor.Message, previous, focus string) (string, error)

// Summarize calls f(ctx, messages, previous, focus).
func (f Func) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	return f(ctx, messages, previous, focus)
}

var (
	_ Summarizer = (*Digest)(nil)
	_ Summarizer = Func(nil)
)
