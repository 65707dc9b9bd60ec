package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	abridge "github.com/abridge-go/abridge"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// checkInvariants checks what must hold of every replay result.
func checkInvariants(t *testing.T, res Result) {
	t.Helper()
	if res.InvalidRequests != 0 {
		t.Errorf("%s: %d invalid requests, first: %s", res.File, res.InvalidRequests, res.FirstError)
	}
	if res.Unsummarized != 0 {
		t.Errorf("%s: %d of %d compacted messages never reached a summarizer", res.File, res.Unsummarized, res.CompactedMessages)
	}
	if res.UnsentMessages != 0 {
		t.Errorf("%s: %d messages given to the LLM summarizer never reached its model", res.File, res.UnsentMessages)
	}
	if res.Compactions > 0 && res.CompactedMessages == 0 {
		t.Errorf("%s: %d compactions but no compacted message", res.File, res.Compactions)
	}
	if len(res.Series) != res.Requests {
		t.Errorf("%s: %d points for %d requests", res.File, len(res.Series), res.Requests)
	}
	compactions, maxBefore, maxAfter, maxTokBefore, maxTokAfter := 0, 0, 0, 0, 0
	var sumBefore, sumAfter int
	for i, p := range res.Series {
		if p.Request != i+1 {
			t.Errorf("%s: point %d numbered %d", res.File, i, p.Request)
		}
		if p.CharsAfter > p.CharsBefore {
			t.Errorf("%s: request %d sends %d chars, more than the %d without abridge", res.File, p.Request, p.CharsAfter, p.CharsBefore)
		}
		if p.Compaction {
			compactions++
		}
		maxBefore, maxAfter = max(maxBefore, p.CharsBefore), max(maxAfter, p.CharsAfter)
		maxTokBefore, maxTokAfter = max(maxTokBefore, p.TokensBefore), max(maxTokAfter, p.TokensAfter)
		sumBefore += p.CharsBefore
		sumAfter += p.CharsAfter
	}
	if res.Requests > 0 {
		got := [6]float64{float64(compactions), float64(maxBefore), float64(maxAfter), float64(maxTokBefore), float64(maxTokAfter),
			float64(sumBefore) / float64(res.Requests)}
		want := [6]float64{float64(res.Compactions), float64(res.MaxPromptCharsBefore), float64(res.MaxPromptCharsAfter),
			float64(res.MaxTokensBefore), float64(res.MaxTokensAfter), res.MeanPromptCharsBefore}
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
			t.Errorf("%s: figures disagree with the series (-result +series):\n%s", res.File, diff)
		}
		if res.MeanPromptCharsAfter > res.MeanPromptCharsBefore || res.MaxPromptCharsAfter > res.MaxPromptCharsBefore {
			t.Errorf("%s: prompts grew: mean %.0f -> %.0f, max %d -> %d", res.File,
				res.MeanPromptCharsBefore, res.MeanPromptCharsAfter, res.MaxPromptCharsBefore, res.MaxPromptCharsAfter)
		}
	}
	if res.ReusedChars > res.RequestChars || res.CacheReuse < 0 || res.CacheReuse > 1 {
		t.Errorf("%s: cache reuse %d of %d chars (%.3f)", res.File, res.ReusedChars, res.RequestChars, res.CacheReuse)
	}
	if res.CeilingChars < res.ReusedChars || res.CeilingChars > res.RequestChars || res.CacheReuseCeiling < res.CacheReuse {
		t.Errorf("%s: reuse ceiling %d chars (%.3f), reused %d of %d", res.File, res.CeilingChars, res.CacheReuseCeiling, res.ReusedChars, res.RequestChars)
	}
	var reused, ceiling int64
	for _, p := range res.Series {
		if p.ReusedChars > p.CeilingChars || p.CeilingChars > p.JSONChars {
			t.Errorf("%s: request %d reuses %d chars, more than its ceiling %d (or the ceiling is over its %d)", res.File, p.Request, p.ReusedChars, p.CeilingChars, p.JSONChars)
		}
		reused += int64(p.ReusedChars)
		ceiling += int64(p.CeilingChars)
	}
	if reused != res.ReusedChars || ceiling != res.CeilingChars {
		t.Errorf("%s: series sums %d reused, %d ceiling; result %d, %d", res.File, reused, ceiling, res.ReusedChars, res.CeilingChars)
	}
	if res.PathsKept > res.PathsCompacted {
		t.Errorf("%s: %d paths kept of %d", res.File, res.PathsKept, res.PathsCompacted)
	}
	if res.NeededKeptTokens > res.NeededTokens || res.NeededFarTokens > res.NeededTokens ||
		res.NeededFarKeptTokens > res.NeededFarTokens || res.NeededFarKeptTokens > res.NeededKeptTokens {
		t.Errorf("%s: needed tokens %d, kept %d, far %d, far kept %d", res.File,
			res.NeededTokens, res.NeededKeptTokens, res.NeededFarTokens, res.NeededFarKeptTokens)
	}
	if res.Compactions > 0 && res.SummarizerCalls+res.FallbackCalls == 0 {
		t.Errorf("%s: %d compactions without a summarizer call", res.File, res.Compactions)
	}
}

func TestRunHistorySynthetic(t *testing.T) {
	history := syntheticHistory(60)
	orig := processor.Clone(history)
	for _, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
		for _, summ := range []string{SummarizerDigest, SummarizerRecorder, SummarizerModel} {
			t.Run(mode.String()+"/"+summ, func(t *testing.T) {
				rec := model.NewRecorder(recordedSummary)
				opts := Options{Mode: mode, Summarizer: summ, Window: window.Options{MaxMessages: 20}}
				if summ == SummarizerModel {
					opts.Model = rec
				}
				res, err := RunHistory(t.Context(), "synthetic", history, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, res)
				if diff := cmp.Diff(orig, history, cmp.Comparer(processor.Equal)); diff != "" {
					t.Fatalf("history modified (-before +after):\n%s", diff)
				}
				if got, want := res.Requests, countResponses(history); got != want {
					t.Errorf("requests = %d, want %d", got, want)
				}
				if res.Compactions == 0 || res.CompactedMessages == 0 || res.SummarizerCalls == 0 {
					t.Errorf("compactions %d, compacted %d, summarizer calls %d: want all > 0",
						res.Compactions, res.CompactedMessages, res.SummarizerCalls)
				}
				if res.MaxPromptCharsAfter >= res.MaxPromptCharsBefore/2 {
					t.Errorf("max prompt %d chars with abridge, %d without: want less than half", res.MaxPromptCharsAfter, res.MaxPromptCharsBefore)
				}
				if summ == SummarizerModel {
					if got, want := res.SummarizerInputChars, callChars(rec.Calls()); got != want || got == 0 {
						t.Errorf("summarizer input = %d chars, the model received %d", got, want)
					}
				}
				// The digest keeps every file written, however often the
				// summary is merged.
				if summ == SummarizerDigest && (res.PathsWrittenCompacted == 0 || res.WrittenFidelity != 1) {
					t.Errorf("written-path fidelity %.3f (%d of %d paths)", res.WrittenFidelity, res.PathsWrittenKept, res.PathsWrittenCompacted)
				}
				if res.PathsCompacted == 0 || res.Fidelity <= 0 {
					t.Errorf("fidelity %.3f (%d of %d paths)", res.Fidelity, res.PathsKept, res.PathsCompacted)
				}
			})
		}
	}
}

func TestRunHistoryShort(t *testing.T) {
	tests := []struct {
		name    string
		history []processor.Message
		want    Result
	}{
		{
			name: "two requests, nothing to compact",
			history: []processor.Message{
				processor.UserMessage("hi"),
				processor.TextMessage("hello"),
				processor.UserMessage("bye"),
				processor.TextMessage("bye"),
			},
			want: Result{File: "t", Messages: 4, Requests: 2, TranscriptChars: 13, Fidelity: 1, WrittenFidelity: 1, NeededKept: 1, NeededKeptFar: 1,
				MaxPromptCharsBefore: 10, MaxPromptCharsAfter: 10, MeanPromptCharsBefore: 6, MeanPromptCharsAfter: 6},
		},
		{
			name: "assistant messages without a request before them are skipped",
			history: []processor.Message{
				processor.TextMessage("I start"),
				processor.UserMessage("hi"),
				processor.TextMessage("hello"),
				processor.TextMessage("again"),
			},
			want: Result{File: "t", Messages: 4, Requests: 1, Skipped: 2, TranscriptChars: 19, Fidelity: 1, WrittenFidelity: 1, NeededKept: 1, NeededKeptFar: 1,
				MaxPromptCharsBefore: 9, MaxPromptCharsAfter: 9, MeanPromptCharsBefore: 9, MeanPromptCharsAfter: 9},
		},
		{
			name:    "no assistant message",
			history: []processor.Message{processor.UserMessage("hi")},
			want:    Result{File: "t", Messages: 1, TranscriptChars: 2, Fidelity: 1, WrittenFidelity: 1, NeededKept: 1, NeededKeptFar: 1},
		},
	}
	ignore := cmpopts.IgnoreFields(Result{}, "Series", "MaxTokensBefore", "MaxTokensAfter", "MeanTokensBefore", "MeanTokensAfter",
		"CacheReuse", "ReusedChars", "RequestChars", "CacheReuseCeiling", "CeilingChars", "ProcessorTime", "PerRequest", "ProcessorCPU", "PerRequestCPU", "SummarizerTime",
		"BilledAt10", "BilledAt25")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RunHistory(t.Context(), "t", tt.history, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, got)
			if diff := cmp.Diff(tt.want, got, ignore, cmpopts.IgnoreUnexported(Result{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCacheReuseGrowingHistory(t *testing.T) {
	// Without compaction each request extends the previous one, so all of
	// the previous request's JSON but its closing bytes is reused.
	history := syntheticHistory(6)
	res, err := RunHistory(t.Context(), "t", history, Options{Trim: trimOff})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Compactions != 0 {
		t.Fatalf("%d compactions, want none", res.Compactions)
	}
	var prev []byte
	var reused, total int64
	for i, m := range history {
		if m.Kind != processor.Response || i == 0 || history[i-1].Kind != processor.Request {
			continue
		}
		params, err := openai.ToParams(history[:i])
		if err != nil {
			t.Fatal(err)
		}
		var cur []byte
		for _, p := range params {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			cur = append(cur, b...)
		}
		if !bytes.HasPrefix(cur, prev) {
			t.Fatalf("request %d does not extend the previous one", i)
		}
		reused += int64(len(prev))
		total += int64(len(cur))
		prev = cur
	}
	if diff := cmp.Diff([2]int64{reused, total}, [2]int64{res.ReusedChars, res.RequestChars}); diff != "" {
		t.Errorf("reused and request chars (-want +got):\n%s", diff)
	}
	// Every message is sent as it was before: nothing more could be reused.
	if res.CeilingChars != res.ReusedChars {
		t.Errorf("ceiling %d chars, want the %d reused", res.CeilingChars, res.ReusedChars)
	}
}

// TestCacheReuseCeilingTrimmed: once a tool return is old enough to be
// trimmed, the request that first sends it trimmed stops reusing inside
// it, while the ceiling counts it whole; without compaction that is all
// the difference.
func TestCacheReuseCeilingTrimmed(t *testing.T) {
	history := syntheticHistory(6)
	res, err := RunHistory(t.Context(), "t", history, Options{Window: window.Options{MaxMessages: -1}})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	trimmedAt := 0
	for _, p := range res.Series {
		if p.CeilingChars > p.ReusedChars {
			trimmedAt++
			continue
		}
		if p.Request > 1 && p.ReusedChars == 0 {
			t.Errorf("request %d reuses nothing", p.Request)
		}
	}
	// Each round's return is trimmed on the request after the next one.
	if trimmedAt < 4 {
		t.Errorf("%d requests below their ceiling, want one per trimmed return (at least 4): %+v", trimmedAt, res.Series)
	}
}

func TestOptionsErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
		is   error
	}{
		{name: "unknown mode", opts: Options{Mode: 7}, want: "unknown mode"},
		{name: "unknown summarizer", opts: Options{Summarizer: "oracle"}, want: "unknown summarizer"},
		{name: "model without a model", opts: Options{Summarizer: SummarizerModel}, is: ErrNoModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunHistory(t.Context(), "t", syntheticHistory(2), tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRunFileMissing(t *testing.T) {
	_, err := RunFile(t.Context(), filepath.Join(t.TempDir(), "absent.json"), Options{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want one wrapping os.ErrNotExist", err)
	}
}

// TestRunFS replays the embedded shipped transcripts and the same files on
// disk: the figures agree, and each result is named as in the FS.
func TestRunFS(t *testing.T) {
	fsys, names := abridge.Transcripts()
	fromFS, err := RunFS(t.Context(), fsys, names, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromFiles, err := Run(t.Context(), transcripts.Shipped(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 || len(fromFS.Results) != len(names) {
		t.Fatalf("%d results for %d embedded transcripts", len(fromFS.Results), len(names))
	}
	for i, res := range fromFS.Results {
		if res.File != names[i] {
			t.Errorf("result %d is named %q, want %q", i, res.File, names[i])
		}
	}
	// Timings differ from run to run, and File by where it was read.
	ignore := cmpopts.IgnoreFields(Result{}, "File", "ProcessorTime", "PerRequest", "ProcessorCPU", "PerRequestCPU", "SummarizerTime", "FirstError")
	if diff := cmp.Diff(fromFiles.Results, fromFS.Results, ignore, cmpopts.IgnoreUnexported(Result{})); diff != "" {
		t.Errorf("RunFS results differ from Run's on the same files (-Run +RunFS):\n%s", diff)
	}
	if _, err := RunFS(t.Context(), fsys, []string{"absent.json"}, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RunFS of a missing name: error %v, want one wrapping fs.ErrNotExist", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Run(ctx, transcripts.Shipped(t), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestShipped(t *testing.T) {
	files := transcripts.Shipped(t)
	for _, mode := range []Mode{ModeProcessed, ModeFull, ModeFresh} {
		for _, summ := range []string{SummarizerDigest, SummarizerRecorder} {
			t.Run(mode.String()+"/"+summ, func(t *testing.T) {
				var progress []int
				rep, err := Run(t.Context(), files, Options{Mode: mode, Summarizer: summ,
					Progress: func(_ string, done, total int) { progress = append(progress, done, total) }})
				if err != nil {
					t.Fatal(err)
				}
				if len(rep.Results) != len(files) || len(progress) != 2*len(files) {
					t.Fatalf("%d results, progress %v, for %d files", len(rep.Results), progress, len(files))
				}
				for _, res := range rep.Results {
					checkInvariants(t, res)
					if res.Messages >= 2*window.DefaultMaxMessages && res.Compactions == 0 {
						t.Errorf("%s: %d messages and no compaction", res.File, res.Messages)
					}
				}
				checkTotal(t, rep)
			})
			// The shipped transcripts are short: a small window makes them
			// compact (each summary written when due: the shortest of them
			// ends before one written ahead would be ready).
			t.Run(mode.String()+"/"+summ+"/small window", func(t *testing.T) {
				rep, err := Run(t.Context(), files, Options{Mode: mode, Summarizer: summ, Window: window.Options{MaxMessages: 6, Ahead: -1}})
				if err != nil {
					t.Fatal(err)
				}
				for _, res := range rep.Results {
					checkInvariants(t, res)
					if res.Compactions == 0 || res.SummarizerCalls == 0 {
						t.Errorf("%s: %d messages, %d compactions, %d summarizer calls", res.File, res.Messages, res.Compactions, res.SummarizerCalls)
					}
				}
				checkTotal(t, rep)
			})
		}
	}
}

// checkTotal checks the report's total against its results.
func checkTotal(t *testing.T, rep *Report) {
	t.Helper()
	var want Result
	for _, r := range rep.Results {
		want.Requests += r.Requests
		want.Compactions += r.Compactions
		want.SummarizerInputChars += r.SummarizerInputChars
		want.TranscriptChars += r.TranscriptChars
		want.ReusedChars += r.ReusedChars
		want.RequestChars += r.RequestChars
		want.CeilingChars += r.CeilingChars
		want.InvalidRequests += r.InvalidRequests
		want.MaxTokensBefore = max(want.MaxTokensBefore, r.MaxTokensBefore)
	}
	got := rep.Total
	if diff := cmp.Diff(
		[]int64{int64(want.Requests), int64(want.Compactions), want.SummarizerInputChars, want.TranscriptChars, want.ReusedChars, want.RequestChars, want.CeilingChars, int64(want.InvalidRequests), int64(want.MaxTokensBefore)},
		[]int64{int64(got.Requests), int64(got.Compactions), got.SummarizerInputChars, got.TranscriptChars, got.ReusedChars, got.RequestChars, got.CeilingChars, int64(got.InvalidRequests), int64(got.MaxTokensBefore)},
	); diff != "" {
		t.Errorf("total disagrees with the results (-sum +total):\n%s", diff)
	}
	if want.RequestChars > 0 {
		if r := float64(want.ReusedChars) / float64(want.RequestChars); r != got.CacheReuse {
			t.Errorf("total cache reuse %.6f, want %.6f", got.CacheReuse, r)
		}
		if r := float64(want.CeilingChars) / float64(want.RequestChars); r != got.CacheReuseCeiling {
			t.Errorf("total cache reuse ceiling %.6f, want %.6f", got.CacheReuseCeiling, r)
		}
	}
}

func TestOutputs(t *testing.T) {
	rep, err := Run(t.Context(), transcripts.Shipped(t), Options{Window: window.Options{ContextWindow: 128_000}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("json", func(t *testing.T) {
		var buf bytes.Buffer
		if err := rep.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var got Report
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("JSON does not parse: %v", err)
		}
		if diff := cmp.Diff(rep, &got, cmpopts.IgnoreUnexported(Result{})); diff != "" {
			t.Errorf("JSON round trip (-report +parsed):\n%s", diff)
		}
	})
}

func TestDisplayName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/a/b/sweagent-gpt4__swe-agent__test-repo-i1.traj.json", "sweagent-gpt4__swe-agent__test-repo-i1"},
		{"x.jsonl.json", "x"},
		{"claudecode-spotter__258c7280-ae70-4798-800f-63464d01a85d__subagent-agent-a881341.jsonl.json",
			"claudecode-spotter__258c728…a85d__subagent-agent-a881341"},
		{"claudecode-spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl.json", "claudecode-spotter__258c7280-ae70-4798-800f-63464d01a85d"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := DisplayName(tt.in); got != tt.want {
				t.Errorf("DisplayName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestBilled checks the billed-input figures against the per-request
// series they come from: each request's estimated prompt tokens, its
// reused share at the cached price, plus the summarizer's input, over the
// requests; and that the economy strategy bills less than the default.
func TestBilled(t *testing.T) {
	files := transcripts.Shipped(t)
	econ := strategy.Economy()
	var billed [2]float64
	for i, opts := range []Options{{}, {Trim: econ.Trim, Window: econ.Window}} {
		rep, err := Run(t.Context(), files, opts)
		if err != nil {
			t.Fatal(err)
		}
		var n, sum10, sum25 float64
		var summ int64
		for _, res := range rep.Results {
			summ += res.SummarizerInputChars
			for _, p := range res.Series {
				n++
				reuse := 0.0
				if p.JSONChars > 0 {
					reuse = float64(p.ReusedChars) / float64(p.JSONChars)
				}
				sum10 += float64(p.TokensAfter) * (1 - 0.9*reuse)
				sum25 += float64(p.TokensAfter) * (1 - 0.75*reuse)
			}
		}
		want10 := (sum10 + float64(summ)/4) / n
		want25 := (sum25 + float64(summ)/4) / n
		tot := rep.Total
		if math.Abs(tot.BilledAt10-want10) > 1e-6*want10 || math.Abs(tot.BilledAt25-want25) > 1e-6*want25 {
			t.Errorf("billed %.3f / %.3f, the series give %.3f / %.3f", tot.BilledAt10, tot.BilledAt25, want10, want25)
		}
		if !(tot.BilledAt10 < tot.BilledAt25) || tot.BilledAt10 <= 0 {
			t.Errorf("billed at 10%% %.1f, at 25%% %.1f: want 0 < the first < the second", tot.BilledAt10, tot.BilledAt25)
		}
		billed[i] = tot.BilledAt10
	}
	if billed[1] >= billed[0] {
		t.Errorf("economy bills %.0f tokens a request at 10%%, default %.0f: want less", billed[1], billed[0])
	}
}
