// Package compact compacts a whole conversation on demand, as a chat
// application's /compact command does: it summarizes the history with a
// model (optionally steered by the user's focus, as in "/compact focus on
// the failing tests") and returns a minimal history made of the history's
// leading system prompts, the summary marker and an acknowledging response,
// with a [Report] of what it replaced. It works on abridge's message model;
// openai.Compact (package model/openai) does the same on openai-go message
// params.
//
// The summary request is a marker (summary.Marker), so a later compaction
// on demand recognises it (summary.ParseMarker) and merges the old summary
// into the new one instead of summarizing a summary.
//
// [Compactor] is the other compaction on demand: the one the agent and the
// middleware force after the provider refused a request as too long, a
// window's Compact method or any function wrapped in [Func].
package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// Errors returned by [Compact], besides summary.ErrEmpty for a summary
// that holds nothing but white space.
var (
	// ErrTooShort: the history holds too little to be worth compacting:
	// fewer than [MinMessages] messages, or fewer than two besides its
	// leading system prompts and an earlier summary with its
	// acknowledgement.
	ErrTooShort = errors.New("history too short to compact")
	// ErrNoGain: the compacted history would not be smaller than the
	// history, in estimated tokens (a summary as long as what it
	// replaces); the history is left as it is.
	ErrNoGain = errors.New("compaction would not shrink the history")
)

// MinMessages is the smallest history [Compact] accepts.
const MinMessages = 3

// Acknowledgement is the text of the response that follows the summary in
// a compacted history.
const Acknowledgement = "Understood. I have the summary of our conversation so far and will continue from there."

// Report describes a compaction: the history's size before and after, in
// messages and in prompt tokens estimated from the messages alone
// (processor.ContentTokens, the same basis before and after), and the
// summary's length.
type Report struct {
	MessagesBefore, MessagesAfter, TokensBefore, TokensAfter int
	// SummaryBytes is the summary's length in bytes of UTF-8 (the unit
	// of processor.Chars).
	SummaryBytes int
}

// Compact summarizes history with s, following focus when it is not empty,
// and returns the compacted history: the history's leading system prompts
// (kept first and verbatim: they are the agent's instructions, and are not
// sent to the summarizer), then the summary marker (a request), then a
// response with the text [Acknowledgement]. Without system prompts that is
// the two messages [marker, acknowledgement].
//
// The compacted history ends with a response, not a request, so it is not
// yet something to send: the host appends the next user prompt (an agent's
// Run does) before the next model request.
//
// A summary marker already in the history is not summarized again: its
// summary is passed to s as previous (the summaries of several markers
// joined by blank lines, in order), and the acknowledgement right after it
// is left out. A history too short to compact fails with [ErrTooShort]
// before s is called; a summary that would leave the history no smaller
// in estimated tokens fails with [ErrNoGain]. On any error the Report
// holds the sizes before (and, for ErrNoGain, the summary's length). The
// history is not modified.
func Compact(ctx context.Context, s summarizer.Summarizer, history []processor.Message, focus string) ([]processor.Message, Report, error) {
	rep := Report{MessagesBefore: len(history), TokensBefore: processor.ContentTokens(history)}
	if s == nil {
		return nil, rep, errors.New("compact: no summarizer")
	}
	head, body := splitSystem(history)
	previous, body := dropMarkers(body)
	if len(history) < MinMessages || len(body) < 2 {
		return nil, rep, fmt.Errorf("%d messages, %d to summarize: %w", len(history), len(body), ErrTooShort)
	}
	sum, err := s.Summarize(ctx, body, previous, strings.TrimSpace(focus))
	if err != nil {
		return nil, rep, fmt.Errorf("summarize %d messages: %w", len(body), err)
	}
	sum = strings.TrimSpace(sum)
	if sum == "" {
		return nil, rep, fmt.Errorf("summarize %d messages: %w", len(body), summary.ErrEmpty)
	}
	out := make([]processor.Message, 0, len(head)+2)
	out = append(out, head...)
	out = append(out, summary.Marker(sum), processor.TextMessage(Acknowledgement))
	after := processor.ContentTokens(out)
	rep.SummaryBytes = len(sum)
	if after >= rep.TokensBefore {
		return nil, rep, fmt.Errorf("%w: %d estimated tokens before, %d after, with a %d-byte summary", ErrNoGain, rep.TokensBefore, after, len(sum))
	}
	rep.MessagesAfter = len(out)
	rep.TokensAfter = after
	return out, rep, nil
}

// splitSystem returns the leading system prompts of history (whole
// system-only requests, and the system parts that open the first request
// holding anything else) and the rest.
func splitSystem(history []processor.Message) (head, body []processor.Message) {
	for i, m := range history {
		if m.Kind != processor.Request {
			return head, history[i:]
		}
		k := 0
		for k < len(m.Parts) {
			if _, ok := m.Parts[k].(processor.SystemPrompt); !ok {
				break
			}
			k++
		}
		switch {
		case k == 0:
			return head, history[i:]
		case k == len(m.Parts):
			head = append(head, m)
			continue
		}
		sys, rest := m, m
		sys.Parts = slices.Clone(m.Parts[:k])
		rest.Parts = slices.Clone(m.Parts[k:])
		head = append(head, sys)
		body = make([]processor.Message, 0, len(history)-i)
		body = append(body, rest)
		return head, append(body, history[i+1:]...)
	}
	return head, nil
}

// dropMarkers returns the summaries of the markers in body, in order and
// joined by blank lines as the window joins them ("" when there is none),
// and body without its markers and their acknowledgements.
func dropMarkers(body []processor.Message) (previous string, rest []processor.Message) {
	rest = make([]processor.Message, 0, len(body))
	var summaries []string
	afterMarker := false
	for _, m := range body {
		if s, _, ok := summary.ParseMarker(m); ok {
			if s = strings.TrimSpace(s); s != "" {
				summaries = append(summaries, s)
			}
			afterMarker = true
			continue
		}
		if afterMarker && m.Kind == processor.Response && !m.HasToolCalls() && strings.TrimSpace(m.Text()) == Acknowledgement {
			afterMarker = false
			continue
		}
		afterMarker = false
		rest = append(rest, m)
	}
	return strings.Join(summaries, "\n\n"), rest
}
