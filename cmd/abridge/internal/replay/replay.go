// Package replay measures abridge on recorded agent conversations. It
// replays a transcript from the agent's point of view: before each
// assistant message of the transcript it runs the tool-return trimmer and
// the sliding window on the history the agent would hold at that moment,
// checks that what would be sent is a valid request, and records the
// figures that matter for a context-window manager: prompt size before and
// after processing, compactions, how much text the summarizer was given,
// how much of each request repeats the previous one's prefix (what a
// provider's prompt cache can reuse), the processors' own time, how many
// of the file paths that were compacted away the summaries still name, and
// how much of what each reply went on to use its request still showed
// ([Result.NeededKept]).
// [Run] replays many transcripts into a [Report] that prints as a table,
// as JSON, or as a chart (SVG or PNG).
package replay

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/abridge-go/abridge/cmd/abridge/internal/replay/internal/fidelity"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/transcript"
)

// Mode says what history the processors run on at each request.
type Mode int

const (
	// ModeProcessed replays what an agent does: the processed history
	// replaces the stored one, and the transcript's next assistant message
	// and the requests after it are appended to it.
	ModeProcessed Mode = iota + 1
	// ModeFull keeps the full history: the processors run on the whole
	// transcript prefix at every request, the same messages in the same
	// memory each time (a host that keeps its history in abridge's
	// message model).
	ModeFull
	// ModeFresh keeps the full history as a proxy or an HTTP middleware
	// sees it: at every request the transcript prefix is encoded as a
	// request's JSON "messages" and decoded into new memory
	// (transcript.Load), then processed. The decoding is timed apart
	// ([Result.DecodeTime]).
	ModeFresh
)

// String returns "processed", "full" or "mode(N)".
func (m Mode) String() string {
	switch m {
	case ModeProcessed:
		return "processed"
	case ModeFull:
		return "full"
	case ModeFresh:
		return "fresh"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode returns the Mode named "processed", "full" or "fresh".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "processed":
		return ModeProcessed, nil
	case "full":
		return ModeFull, nil
	case "fresh":
		return ModeFresh, nil
	}
	return 0, fmt.Errorf("replay mode %q: want processed, full or fresh", s)
}

// Summarizer names accepted in [Options.Summarizer].
const (
	// SummarizerDigest is the offline deterministic digest (the default).
	SummarizerDigest = "digest"
	// SummarizerRecorder is the LLM summarizer talking to a recording
	// model that answers with a short deterministic summary built from
	// the request, so the summarizer's prompt, clipping and chunking run
	// and what it sends is counted exactly.
	SummarizerRecorder = "recorder"
	// SummarizerModel is the LLM summarizer talking to [Options.Model].
	SummarizerModel = "model"
)

// Billed returns the input tokens billed per request when cached input
// costs cached times the full price (see BilledAt10).
func (r Result) Billed(cached float64) float64 {
	if r.Requests == 0 {
		return 0
	}
	summ := float64(r.SummarizerInputChars) / processor.CharsPerToken
	return (r.sumUncachedTokens + cached*r.sumCachedTokens + summ) / float64(r.Requests)
}

// WaitShare returns the share of the requests that waited for a summary.
func (r Result) WaitShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Waits) / float64(r.Requests)
}

// WastedShare returns the share of the summarizer's input spent on
// summaries written ahead and never used.
func (r Result) WastedShare() float64 {
	if r.SummarizerInputChars == 0 {
		return 0
	}
	return float64(r.WastedInputChars) / float64(r.SummarizerInputChars)
}

// DecodeRatio returns, for a ModeFresh replay, the processors' CPU time
// over the CPU time of decoding the same requests with transcript.Load
// (wall times where CPU time is not measured); 0 in the other modes.
func (r Result) DecodeRatio() float64 {
	switch {
	case r.DecodeCPU > 0:
		return float64(r.ProcessorCPU) / float64(r.DecodeCPU)
	case r.DecodeTime > 0:
		return float64(r.ProcessorTime) / float64(r.DecodeTime)
	}
	return 0
}

// ErrNoModel is returned when [Options.Summarizer] is "model" and
// [Options.Model] is nil.
var ErrNoModel = errors.New("replay: summarizer \"model\" needs Options.Model")

// Options configure a replay. The zero value replays in [ModeProcessed]
// with the window's and the trimmer's defaults and the digest summarizer.
type Options struct {
	// Mode is ModeProcessed (the default when zero), ModeFull or
	// ModeFresh.
	Mode Mode
	// Window holds the window's settings. Its Summarizer and Fallback,
	// when nil, are set by the replay (see Summarizer; the fallback is
	// the digest); OnEvent, when set, is called after the replay's own
	// event handler. Whatever summarizers are used are wrapped so their
	// calls, input and time are measured. Default: all window defaults.
	Window window.Options
	// Trim holds the tool-return trimmer's settings. Default: the
	// trimmer's defaults.
	Trim trimtools.Options
	// Summarizer is "digest" (the default when empty), "recorder" or
	// "model". It is ignored when Window.Summarizer is set.
	Summarizer string
	// Model is the model the LLM summarizer calls when Summarizer is
	// "model" (a real endpoint). Its requests are counted.
	Model model.Model
	// LLM holds the LLM summarizer's options when Summarizer is
	// "recorder" or "model". Default: the summarizer's defaults.
	LLM llm.Options
	// Progress, when set, is called by [Run] after each transcript with
	// the file's path and how many of the total are done.
	Progress func(file string, done, total int)
	// Strategy names the strategy (package strategy) the Window and Trim
	// settings come from, for the report; "" names none.
	Strategy string
	// Turn is the virtual time between two requests (the model's answer,
	// the tools' run); 0 means DefaultTurn (0.5s). The replay never
	// waits: its clock only tells which summaries written ahead would be
	// ready at each request.
	Turn time.Duration
	// SummaryLatency is the virtual time a summary takes to write; 0
	// means DefaultSummaryLatency (2s). A request that needs a summary
	// not written by then waits for it (see Result.Waits).
	SummaryLatency time.Duration
	// Receipts, when set, keeps the receipt of each compaction in
	// Result.Receipts (for the HTML report). The figures are the same
	// either way: the window's events are kept as they come and made into
	// receipts after the replay.
	Receipts bool
}

// Settings is the part of [Options] a [Report] records.
type Settings struct {
	// Mode is "processed", "full" or "fresh".
	Mode string `json:"mode"`
	// Summarizer is the summarizer's name ("digest", "recorder",
	// "model", or "custom" when Window.Summarizer was given).
	Summarizer string `json:"summarizer"`
	// Strategy is Options.Strategy, the name of the strategy the settings
	// come from ("" when none was named).
	Strategy string `json:"strategy,omitempty"`
	// MaxMessages is Window.MaxMessages as given (0 means the window's
	// default).
	MaxMessages int `json:"max_messages"`
	// ContextWindow is Window.ContextWindow in tokens (0: no token trigger).
	ContextWindow int `json:"context_window"`
	// TriggerPercent is Window.TriggerPercent as given (0 means the
	// window's default).
	TriggerPercent int `json:"trigger_percent"`
	// TriggerTokens is Window.TriggerTokens (0: no token trigger of its
	// own).
	TriggerTokens int `json:"trigger_tokens"`
	// KeepMessages is Window.KeepMessages as given (0 means the window's
	// default, max(4, MaxMessages/2)).
	KeepMessages int `json:"keep_messages"`
	// KeepUserTurns is Window.KeepUserTurns.
	KeepUserTurns int `json:"keep_user_turns"`
	// TailOutputs is Window.TailOutputs (0: the tail's tool outputs are
	// kept).
	TailOutputs int `json:"tail_outputs"`
	// TrimMaxChars is Trim.MaxChars as given (0 means the trimmer's
	// default).
	TrimMaxChars int `json:"trim_max_chars"`
	// TrimKeepLast is Trim.KeepLast as given (0 means the trimmer's
	// default).
	TrimKeepLast int `json:"trim_keep_last"`
	// Ahead is Window.Ahead as given (0 means the window's default; -1:
	// each summary written when its compaction is due).
	Ahead int `json:"ahead"`
	// Turn and SummaryLatency are the virtual time between requests and
	// of a summary (Options.Turn, Options.SummaryLatency, defaults
	// filled in).
	Turn           time.Duration `json:"turn_ns"`
	SummaryLatency time.Duration `json:"summary_latency_ns"`
}

// Point is one request of a replay, for plotting.
type Point struct {
	// Request is the request's number, from 1.
	Request int `json:"request"`
	// CharsBefore is the size of the transcript prefix the request stands
	// for (the prompt without abridge), in characters.
	CharsBefore int `json:"chars_before"`
	// CharsAfter is the size of what is sent, in characters.
	CharsAfter int `json:"chars_after"`
	// TokensBefore estimates the prompt tokens without abridge.
	TokensBefore int `json:"tokens_before"`
	// TokensAfter estimates the prompt tokens of what is sent.
	TokensAfter int `json:"tokens_after"`
	// Compaction reports that this request sent a new summary.
	Compaction bool `json:"compaction,omitempty"`
	// JSONChars is the length of the request's OpenAI JSON.
	JSONChars int `json:"json_chars"`
	// ReusedChars is the length of its common prefix with the previous
	// request's JSON.
	ReusedChars int `json:"reused_chars"`
	// CeilingChars is the most of the request's JSON any trimming and any
	// summary text could have reused with the same compaction points (see
	// [Result.CacheReuseCeiling]); never below ReusedChars.
	CeilingChars int `json:"ceiling_chars"`
}

// Result holds the figures of one replayed transcript, or their totals
// over many (see [Report.Total]). Characters are bytes of UTF-8 text as
// [processor.Chars] counts them, except for prompt-cache reuse, which
// counts bytes of the requests' OpenAI JSON.
type Result struct {
	// File is the transcript's path ("total" in a report's total).
	File string `json:"file"`
	// Messages is the number of messages in the transcript.
	Messages int `json:"messages"`
	// Requests is the number of requests replayed: one before each
	// assistant message that follows a request.
	Requests int `json:"requests"`
	// Skipped counts assistant messages that follow another assistant
	// message (or start the transcript): no request precedes them, so
	// none is replayed.
	Skipped int `json:"skipped,omitempty"`
	// Compactions counts requests that sent a new summary: a marker whose
	// text differs from the one sent before.
	Compactions int `json:"compactions"`
	// SummarizerCalls counts calls of the window's summarizer.
	SummarizerCalls int `json:"summarizer_calls"`
	// Waits counts the requests that waited for a summary, in virtual
	// time (Options.Turn, Options.SummaryLatency): those whose summary
	// was written while they waited, because it had not been written
	// ahead or they were past the window's hard limits.
	Waits int `json:"waits"`
	// WaitTime is the virtual time those requests waited, a summary's
	// latency for each summary written while a request waited (an upper
	// bound when it had been started ahead).
	WaitTime time.Duration `json:"wait_time_ns"`
	// Deferred counts the requests sent uncompacted because the summary
	// their compaction needed was not ready yet (window.EventDeferred):
	// billed in full rather than waiting.
	Deferred int `json:"deferred"`
	// AheadSummaries counts the summaries started ahead of their
	// compaction.
	AheadSummaries int `json:"ahead_summaries"`
	// WastedInputChars is the summarizer input of the summaries written
	// ahead and never used (their conversation ended, or was compacted
	// otherwise), counted as the window gives it to the summarizer.
	WastedInputChars int64 `json:"wasted_input_chars"`
	// FallbackCalls counts calls of the window's fallback summarizer.
	FallbackCalls int `json:"fallback_calls"`
	// Failures counts, by the window's reason ("timeout", "summary too
	// large", ...), the compactions whose summary could not be used and
	// were written by the fallback. Nil when there were none.
	Failures map[string]int `json:"failures,omitempty"`
	// SummarizerInputChars is what the summarizer was given: for the LLM
	// summarizer, the characters of every message it sent to its model
	// (counted from the requests themselves); for the digest or a custom
	// summarizer, the characters of the messages and previous summary
	// the window handed it.
	SummarizerInputChars int64 `json:"summarizer_input_chars"`
	// TranscriptChars is the characters of the whole transcript.
	TranscriptChars int64 `json:"transcript_chars"`
	// NaiveSummarizerChars is the baseline: the characters a summarizer
	// would be given if, at every request that sends a summary marker,
	// everything of the transcript prefix outside the head and the tail
	// were summarized again, as the transcript holds it.
	NaiveSummarizerChars int64 `json:"naive_summarizer_chars"`
	// NaiveTrimmedChars is NaiveSummarizerChars counted after tool-return
	// trimming.
	NaiveTrimmedChars int64 `json:"naive_trimmed_chars"`
	// CompactedMessages counts the transcript messages that were replaced
	// by a summary at least once.
	CompactedMessages int `json:"compacted_messages"`
	// Unsummarized counts compacted messages that never reached a
	// summarizer (must be 0).
	Unsummarized int `json:"unsummarized"`
	// UnsentMessages counts, with the recording model only, messages the
	// LLM summarizer was given but did not send to its model, not even
	// clipped (must be 0).
	UnsentMessages int `json:"unsent_messages"`
	// MaxPromptCharsBefore is the largest prompt without abridge.
	MaxPromptCharsBefore int `json:"max_prompt_chars_before"`
	// MaxPromptCharsAfter is the largest prompt sent.
	MaxPromptCharsAfter int `json:"max_prompt_chars_after"`
	// MeanPromptCharsBefore is the mean prompt without abridge.
	MeanPromptCharsBefore float64 `json:"mean_prompt_chars_before"`
	// MeanPromptCharsAfter is the mean prompt sent.
	MeanPromptCharsAfter float64 `json:"mean_prompt_chars_after"`
	// MaxTokensBefore is the largest estimated prompt without abridge.
	MaxTokensBefore int `json:"max_tokens_before"`
	// MaxTokensAfter is the largest estimated prompt sent.
	MaxTokensAfter int `json:"max_tokens_after"`
	// MeanTokensBefore is the mean estimated prompt without abridge.
	MeanTokensBefore float64 `json:"mean_tokens_before"`
	// MeanTokensAfter is the mean estimated prompt sent.
	MeanTokensAfter float64 `json:"mean_tokens_after"`
	// CacheReuse is the share of the requests' JSON bytes that repeat the
	// previous request's prefix: ReusedChars / RequestChars.
	CacheReuse float64 `json:"cache_reuse"`
	// ReusedChars is the sum over requests of the length of the common
	// prefix with the previous request's JSON.
	ReusedChars int64 `json:"reused_chars"`
	// RequestChars is the sum of the requests' JSON lengths.
	RequestChars int64 `json:"request_chars"`
	// CacheReuseCeiling is CeilingChars / RequestChars: the prompt-cache
	// reuse the window's compaction points allow. It counts every message
	// a request sends in the same place as the previous request as reused,
	// whatever form the trimmer gave it in either, and a new summary marker
	// as reusing as much as the marker it replaces (as if each summary
	// began with the whole previous one). What it still misses is each
	// request's new messages and, at a compaction, everything after the
	// head: the gap between CacheReuse and it is all that a trimmer or a
	// summarizer could win back.
	CacheReuseCeiling float64 `json:"cache_reuse_ceiling"`
	// CeilingChars is the sum of the requests' CeilingChars.
	CeilingChars int64 `json:"ceiling_chars"`
	// BilledAt10 and BilledAt25 are the input tokens billed per request
	// when the provider bills cached input at 10% of the full price
	// (GPT-5 class) and at 25% (GPT-4.1 class): each request's estimated
	// prompt tokens, the share its prompt-cache reuse covers at the cached
	// price and the rest at the full price, plus the summarizer's input
	// (its characters over 4) at the full price, over the requests.
	BilledAt10 float64 `json:"billed_at_10"`
	BilledAt25 float64 `json:"billed_at_25"`
	// ProcessorTime is the trimmer's and the window's time over all
	// requests, without the summarizers' own time.
	ProcessorTime time.Duration `json:"processor_time_ns"`
	// PerRequest is ProcessorTime divided by Requests.
	PerRequest time.Duration `json:"per_request_ns"`
	// ProcessorCPU is ProcessorTime measured as CPU time of the replaying
	// thread (Linux only; 0 elsewhere), which other load on the machine
	// does not inflate.
	ProcessorCPU time.Duration `json:"processor_cpu_ns"`
	// PerRequestCPU is ProcessorCPU divided by Requests.
	PerRequestCPU time.Duration `json:"per_request_cpu_ns"`
	// DecodeTime is, in ModeFresh, the time spent decoding the requests'
	// JSON into new memory with transcript.Load, apart from
	// ProcessorTime; zero in the other modes.
	DecodeTime time.Duration `json:"decode_time_ns,omitempty"`
	// DecodeCPU is DecodeTime measured as CPU time of the replaying
	// thread (Linux; 0 elsewhere).
	DecodeCPU time.Duration `json:"decode_cpu_ns,omitempty"`
	// PerRequestDecodeCPU is DecodeCPU divided by Requests.
	PerRequestDecodeCPU time.Duration `json:"per_request_decode_cpu_ns,omitempty"`
	// SummarizerTime is the summarizers' own time over all requests.
	SummarizerTime time.Duration `json:"summarizer_time_ns"`
	// Fidelity is PathsKept / PathsCompacted, or 1 when no path was
	// compacted.
	Fidelity float64 `json:"fidelity"`
	// PathsCompacted counts, summed over the requests that sent a new
	// summary, the distinct file paths named by the transcript messages
	// compacted so far.
	PathsCompacted int64 `json:"paths_compacted"`
	// PathsKept counts how many of those the new summary names.
	PathsKept int64 `json:"paths_kept"`
	// WrittenFidelity is Fidelity restricted to the paths the compacted
	// messages wrote (edited, created, moved to):
	// PathsWrittenKept / PathsWrittenCompacted, or 1 when none.
	WrittenFidelity float64 `json:"written_fidelity"`
	// PathsWrittenCompacted is PathsCompacted for written paths.
	PathsWrittenCompacted int64 `json:"paths_written_compacted"`
	// PathsWrittenKept is PathsKept for written paths.
	PathsWrittenKept int64 `json:"paths_written_kept"`
	// NeededKept is the share of what each reply went on to use that its
	// request still showed: NeededKeptTokens / NeededTokens, or 1 when
	// nothing was needed. The needed tokens of a request are the
	// distinctive tokens (paths, qualified names, identifiers, numbers of 4
	// digits or more, quoted strings) that the transcript's reply uses in
	// its text or its tool calls' arguments and that occurred earlier in
	// the transcript as recorded, outside system messages; a needed token
	// is kept when it is a token of what the request sent. The same
	// definition as the peers harness's needed_kept.
	NeededKept float64 `json:"needed_kept"`
	// NeededKeptFar is NeededKept for the needed tokens last seen more
	// than 20 messages before the reply, where compaction acts:
	// NeededFarKeptTokens / NeededFarTokens, or 1 when none.
	NeededKeptFar float64 `json:"needed_kept_far"`
	// NeededTokens counts the needed tokens, summed over the requests.
	NeededTokens int64 `json:"needed_tokens"`
	// NeededKeptTokens counts those the requests sent.
	NeededKeptTokens int64 `json:"needed_kept_tokens"`
	// NeededFarTokens counts the far ones among NeededTokens.
	NeededFarTokens int64 `json:"needed_far_tokens"`
	// NeededFarKeptTokens counts the far ones among NeededKeptTokens.
	NeededFarKeptTokens int64 `json:"needed_far_kept_tokens"`
	// InvalidRequests counts requests the processors failed on or whose
	// result fails processor.Validate or openai.ToParams (must be 0).
	InvalidRequests int `json:"invalid_requests"`
	// FirstError describes the first invalid request, if any.
	FirstError string `json:"first_error,omitempty"`
	// Series holds one point per request.
	Series []Point `json:"series,omitempty"`
	// Receipts holds the receipt of each compaction, in order, when
	// Options.Receipts was set; each names the transcript as its
	// conversation and the request it was made for.
	Receipts []receipt.Receipt `json:"receipts,omitempty"`

	sumCharsBefore, sumCharsAfter   int64
	sumTokensBefore, sumTokensAfter int64
	// The requests' estimated prompt tokens split by their reuse: the
	// cached share and the rest.
	sumCachedTokens, sumUncachedTokens float64
}

// SummarizerRatio returns SummarizerInputChars / TranscriptChars.
func (r Result) SummarizerRatio() float64 {
	return ratio(r.SummarizerInputChars, r.TranscriptChars)
}

// NaiveRatio returns NaiveSummarizerChars / TranscriptChars.
func (r Result) NaiveRatio() float64 {
	return ratio(r.NaiveSummarizerChars, r.TranscriptChars)
}

// NaiveTrimmedRatio returns NaiveTrimmedChars / TranscriptChars.
func (r Result) NaiveTrimmedRatio() float64 {
	return ratio(r.NaiveTrimmedChars, r.TranscriptChars)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// finish computes the derived figures from the sums.
func (r *Result) finish() {
	if r.Requests > 0 {
		n := float64(r.Requests)
		r.MeanPromptCharsBefore = float64(r.sumCharsBefore) / n
		r.MeanPromptCharsAfter = float64(r.sumCharsAfter) / n
		r.MeanTokensBefore = float64(r.sumTokensBefore) / n
		r.MeanTokensAfter = float64(r.sumTokensAfter) / n
		r.PerRequest = r.ProcessorTime / time.Duration(r.Requests)
		r.PerRequestCPU = r.ProcessorCPU / time.Duration(r.Requests)
		r.PerRequestDecodeCPU = r.DecodeCPU / time.Duration(r.Requests)
		r.BilledAt10 = r.Billed(0.10)
		r.BilledAt25 = r.Billed(0.25)
	}
	r.CacheReuse = ratio(r.ReusedChars, r.RequestChars)
	r.CacheReuseCeiling = ratio(r.CeilingChars, r.RequestChars)
	r.Fidelity = 1
	if r.PathsCompacted > 0 {
		r.Fidelity = ratio(r.PathsKept, r.PathsCompacted)
	}
	r.WrittenFidelity = 1
	if r.PathsWrittenCompacted > 0 {
		r.WrittenFidelity = ratio(r.PathsWrittenKept, r.PathsWrittenCompacted)
	}
	f := r.fidelityFigures()
	r.NeededKept, r.NeededKeptFar = f.NeededKept(), f.NeededKeptFar()
}

// fidelityFigures returns the needed tokens' counts.
func (r *Result) fidelityFigures() fidelity.Figures {
	return fidelity.Figures{Needed: r.NeededTokens, Kept: r.NeededKeptTokens, Far: r.NeededFarTokens, FarKept: r.NeededFarKeptTokens}
}

// setFidelity sets the needed tokens' counts.
func (r *Result) setFidelity(f fidelity.Figures) {
	r.NeededTokens, r.NeededKeptTokens = f.Needed, f.Kept
	r.NeededFarTokens, r.NeededFarKeptTokens = f.Far, f.FarKept
}

// add accumulates o into the total r.
func (r *Result) add(o Result) {
	r.Messages += o.Messages
	r.Requests += o.Requests
	r.Skipped += o.Skipped
	r.Compactions += o.Compactions
	r.SummarizerCalls += o.SummarizerCalls
	r.Waits += o.Waits
	r.WaitTime += o.WaitTime
	r.Deferred += o.Deferred
	r.AheadSummaries += o.AheadSummaries
	r.WastedInputChars += o.WastedInputChars
	r.FallbackCalls += o.FallbackCalls
	for k, v := range o.Failures {
		if r.Failures == nil {
			r.Failures = map[string]int{}
		}
		r.Failures[k] += v
	}
	r.SummarizerInputChars += o.SummarizerInputChars
	r.TranscriptChars += o.TranscriptChars
	r.NaiveSummarizerChars += o.NaiveSummarizerChars
	r.NaiveTrimmedChars += o.NaiveTrimmedChars
	r.CompactedMessages += o.CompactedMessages
	r.Unsummarized += o.Unsummarized
	r.UnsentMessages += o.UnsentMessages
	r.MaxPromptCharsBefore = max(r.MaxPromptCharsBefore, o.MaxPromptCharsBefore)
	r.MaxPromptCharsAfter = max(r.MaxPromptCharsAfter, o.MaxPromptCharsAfter)
	r.MaxTokensBefore = max(r.MaxTokensBefore, o.MaxTokensBefore)
	r.MaxTokensAfter = max(r.MaxTokensAfter, o.MaxTokensAfter)
	r.ReusedChars += o.ReusedChars
	r.RequestChars += o.RequestChars
	r.CeilingChars += o.CeilingChars
	r.ProcessorTime += o.ProcessorTime
	r.ProcessorCPU += o.ProcessorCPU
	r.DecodeTime += o.DecodeTime
	r.DecodeCPU += o.DecodeCPU
	r.SummarizerTime += o.SummarizerTime
	r.PathsCompacted += o.PathsCompacted
	r.PathsKept += o.PathsKept
	r.PathsWrittenCompacted += o.PathsWrittenCompacted
	r.PathsWrittenKept += o.PathsWrittenKept
	r.setFidelity(r.fidelityFigures().Add(o.fidelityFigures()))
	r.InvalidRequests += o.InvalidRequests
	if r.FirstError == "" && o.FirstError != "" {
		r.FirstError = o.File + ": " + o.FirstError
	}
	r.sumCharsBefore += o.sumCharsBefore
	r.sumCharsAfter += o.sumCharsAfter
	r.sumTokensBefore += o.sumTokensBefore
	r.sumTokensAfter += o.sumTokensAfter
	r.sumCachedTokens += o.sumCachedTokens
	r.sumUncachedTokens += o.sumUncachedTokens
}

// Report holds the results of replaying many transcripts.
type Report struct {
	// Options records the settings of the replay.
	Options Settings `json:"options"`
	// Results holds one result per transcript, in the order given.
	Results []Result `json:"results"`
	// Total aggregates the results: counts and characters are summed,
	// maxima are the largest, and means and ratios are recomputed from
	// the sums (so large transcripts weigh more). It has no series.
	Total Result `json:"total"`
}

// RunFile replays the transcript stored at path (OpenAI chat JSON, as
// [transcript.LoadFile] reads it).
func RunFile(ctx context.Context, path string, opts Options) (Result, error) {
	history, err := transcript.LoadFile(path) // its errors name the file
	if err != nil {
		return Result{}, err
	}
	res, err := RunHistory(ctx, path, history, opts)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return res, nil
}

// RunHistory replays a transcript held in memory; name is recorded as the
// result's File. The history is not modified.
func RunHistory(ctx context.Context, name string, history []processor.Message, opts Options) (Result, error) {
	r, err := newRun(opts)
	if err != nil {
		return Result{}, err
	}
	res, err := r.replay(ctx, history)
	if err != nil {
		return Result{}, err
	}
	res.File = name
	if opts.Receipts {
		res.Receipts = r.receipts(name, writerOf(opts))
	}
	return res, nil
}

// runFSFile replays the transcript stored as name in fsys, as [RunFile]
// replays a file; the result's File is name.
func runFSFile(ctx context.Context, fsys fs.FS, name string, opts Options) (Result, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return Result{}, err
	}
	history, err := transcript.Load(bytes.NewReader(data))
	if err != nil {
		return Result{}, fmt.Errorf("load history %s: %w", name, err)
	}
	res, err := RunHistory(ctx, name, history, opts)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// Run replays each transcript in turn and returns the report. It stops at
// the first transcript that cannot be read or replayed, and when ctx is
// done.
func Run(ctx context.Context, paths []string, opts Options) (*Report, error) {
	return runEach(ctx, paths, opts, RunFile)
}

// RunFS replays each named transcript of fsys in turn, as [Run] replays
// files, and returns the report; each result's File is the name.
func RunFS(ctx context.Context, fsys fs.FS, names []string, opts Options) (*Report, error) {
	return runEach(ctx, names, opts, func(ctx context.Context, name string, opts Options) (Result, error) {
		return runFSFile(ctx, fsys, name, opts)
	})
}

// runEach replays each of the named transcripts with replayOne and
// returns the report.
func runEach(ctx context.Context, names []string, opts Options, replayOne func(context.Context, string, Options) (Result, error)) (*Report, error) {
	rep := &Report{Options: settingsOf(opts), Results: make([]Result, 0, len(names))}
	for i, p := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := replayOne(ctx, p, opts)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
		if opts.Progress != nil {
			opts.Progress(p, i+1, len(names))
		}
	}
	rep.Total = total(rep.Results)
	return rep, nil
}

// NewReport builds a report from results replayed with opts, computing
// the total.
func NewReport(opts Options, results []Result) *Report {
	return &Report{Options: settingsOf(opts), Results: results, Total: total(results)}
}

func total(results []Result) Result {
	t := Result{File: "total"}
	for _, r := range results {
		t.add(r)
	}
	t.finish()
	return t
}

func settingsOf(opts Options) Settings {
	mode := opts.Mode
	if mode == 0 {
		mode = ModeProcessed
	}
	name := opts.Summarizer
	if name == "" {
		name = SummarizerDigest
	}
	if opts.Window.Summarizer != nil {
		name = "custom"
	}
	return Settings{
		Mode:           mode.String(),
		Summarizer:     name,
		MaxMessages:    opts.Window.MaxMessages,
		ContextWindow:  opts.Window.ContextWindow,
		TriggerPercent: opts.Window.TriggerPercent,
		TriggerTokens:  opts.Window.TriggerTokens,
		KeepMessages:   opts.Window.KeepMessages,
		KeepUserTurns:  opts.Window.KeepUserTurns,
		TailOutputs:    opts.Window.TailOutputs,
		Strategy:       opts.Strategy,
		TrimMaxChars:   opts.Trim.MaxChars,
		TrimKeepLast:   opts.Trim.KeepLast,
		Ahead:          opts.Window.Ahead,
		Turn:           cmp.Or(opts.Turn, DefaultTurn),
		SummaryLatency: cmp.Or(opts.SummaryLatency, DefaultSummaryLatency),
	}
}
