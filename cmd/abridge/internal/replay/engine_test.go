package replay

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/strategy"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// The per-message JSON cache must give the same bytes as serializing every
// request in full, on the shipped transcripts and, when present, the
// shared ones.
func TestRequestJSONCache(t *testing.T) {
	histories := map[string][]processor.Message{"synthetic": syntheticHistory(40)}
	files := transcripts.Shipped(t)
	if dir, ok := transcripts.SharedDir(); ok && dir != "" {
		files = append(files, transcripts.Shared(t)...)
	}
	for _, f := range files {
		h, err := transcript.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		histories[DisplayName(f)] = h
	}
	econ := strategy.Economy()
	settings := []struct {
		name string
		opts Options
	}{
		{"default", Options{Window: window.Options{MaxMessages: 6}}},
		// Its clearer empties outputs of the tail: a message has more
		// forms than the trimmer's two.
		{"economy", Options{Window: econ.Window, Trim: econ.Trim}},
	}
	var counts [2]atomic.Int64 // compactions by setting
	for name, h := range histories {
		for _, mode := range []Mode{ModeProcessed, ModeFull} {
			for k, set := range settings {
				compactions := &counts[k]
				t.Run(name+"/"+mode.String()+"/"+set.name, func(t *testing.T) {
					opts := set.opts
					opts.Mode = mode
					var got [2][2]int64
					for i, noCache := range []bool{false, true} {
						r, err := newRun(opts)
						if err != nil {
							t.Fatal(err)
						}
						r.noCache = noCache
						res, err := r.replay(t.Context(), h)
						if err != nil {
							t.Fatal(err)
						}
						compactions.Add(int64(res.Compactions))
						got[i] = [2]int64{res.ReusedChars, res.RequestChars}
					}
					if diff := cmp.Diff(got[1], got[0]); diff != "" {
						t.Errorf("reused and request chars (-uncached +cached):\n%s", diff)
					}
				})
			}
		}
	}
	for i, set := range settings {
		if counts[i].Load() == 0 {
			t.Errorf("%s: no compaction in any history", set.name)
		}
	}
}

func TestCheckSent(t *testing.T) {
	call := processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"})
	ret := processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "ls", Content: "a"})
	user := processor.UserMessage("hi")
	tests := []struct {
		name    string
		in, out []processor.Message
		want    error
	}{
		{name: "valid", in: []processor.Message{user, call, ret}, out: []processor.Message{user, call, ret}},
		{name: "orphan return", in: []processor.Message{user, call, ret}, out: []processor.Message{user, ret}, want: processor.ErrOrphanToolReturn},
		{name: "unanswered call", in: []processor.Message{user, call, ret, user}, out: []processor.Message{user, call, user}, want: processor.ErrUnansweredToolCall},
		{name: "last request altered", in: []processor.Message{user}, out: []processor.Message{processor.UserMessage("ho")}, want: processor.ErrLastRequestAltered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSent(tt.in, tt.out)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("checkSent = %v, want %v", err, tt.want)
			}
		})
	}
}

// A transcript that is itself broken (a call never answered) yields
// invalid requests, reported with the first error.
func TestInvalidTranscript(t *testing.T) {
	h := []processor.Message{
		processor.UserMessage("list"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "ls", Args: "{}"}),
		processor.UserMessage("never mind"),
		processor.TextMessage("ok"),
	}
	res, err := RunHistory(t.Context(), "broken", h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.InvalidRequests != 1 || !strings.Contains(res.FirstError, processor.ErrUnansweredToolCall.Error()) {
		t.Errorf("invalid requests %d, first error %q; want 1 naming an unanswered call", res.InvalidRequests, res.FirstError)
	}
}

func TestUnsent(t *testing.T) {
	msgs := []processor.Message{processor.UserMessage("a"), processor.TextMessage("b"), processor.UserMessage("c"),
		processor.NewResponse(processor.Thinking{Content: "not rendered"})}
	call := func(text string) model.Call {
		return model.Call{Messages: []processor.Message{processor.SystemMessage("x"), processor.UserMessage(text)}}
	}
	tests := []struct {
		name  string
		calls []model.Call
		want  int
	}{
		{name: "all sent", calls: []model.Call{call("<conversation>\n[1] user:\na\n[2] assistant:\nb\n[3] user:\nc")}, want: 0},
		{name: "in pieces", calls: []model.Call{call("<conversation>\n[1] user:\na"), call("<conversation>\n[2] assistant:\nb\n[3] user:\nc")}, want: 0},
		{name: "one skipped", calls: []model.Call{call("<conversation>\n[1] user:\na\n[3] user:\nc")}, want: 1},
		{name: "number inside a line", calls: []model.Call{call("<conversation>\nsee [2] and [3] \n[1] user:\na")}, want: 2},
		{name: "no call", want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unsent(msgs, tt.calls); got != tt.want {
				t.Errorf("unsent = %d, want %d", got, tt.want)
			}
		})
	}
}

// With a small input budget the LLM summarizer splits its input into
// pieces and clips long messages; every message still reaches the model.
func TestRecorderPieces(t *testing.T) {
	for _, mode := range []Mode{ModeProcessed, ModeFull} {
		t.Run(mode.String(), func(t *testing.T) {
			r, err := newRun(Options{Mode: mode, Summarizer: SummarizerRecorder, Window: window.Options{MaxMessages: 20, SummaryClip: -1},
				LLM: llm.Options{MaxInputChars: 3000, ClipChars: 800}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.replay(t.Context(), syntheticHistory(60))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, res)
			if calls := len(r.rec.Calls()); calls <= res.SummarizerCalls || res.SummarizerCalls == 0 {
				t.Errorf("%d model calls for %d summaries: want pieces", calls, res.SummarizerCalls)
			}
		})
	}
}

// failing is a summarizer that always fails.
type failing struct{ calls int }

func (f *failing) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	f.calls++
	return "", errors.New("model down")
}

// A summarizer that fails is replaced by the fallback; the replay counts
// both and the reasons, whether the summaries are written when due or
// ahead (where the last one is for a compaction the transcript ends
// before: one call more than compactions).
func TestFailingSummarizer(t *testing.T) {
	for _, ahead := range []int{-1, 0} {
		f := &failing{}
		var events []window.EventType
		opts := Options{Window: window.Options{MaxMessages: 20, Summarizer: f, BreakerFailures: 1000, Ahead: ahead,
			OnEvent: func(_ context.Context, e window.Event) { events = append(events, e.Type) }}}
		res, err := RunHistory(t.Context(), "t", syntheticHistory(30), opts)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, res)
		if res.Compactions == 0 {
			t.Fatal("no compaction")
		}
		want := map[string]int{"summarizer error": res.Compactions}
		if diff := cmp.Diff(want, res.Failures); diff != "" {
			t.Errorf("ahead %d: failures (-want +got):\n%s", ahead, diff)
		}
		unused := 0
		if ahead >= 0 {
			unused = 1
		}
		compacting := 0 // the events of the compactions: started, failed, finished
		for _, e := range events {
			switch e {
			case window.EventStarted, window.EventFailed, window.EventFinished:
				compacting++
			}
		}
		if res.SummarizerCalls != f.calls || f.calls != res.Compactions+unused || res.FallbackCalls != res.Compactions || compacting != 3*res.Compactions {
			t.Errorf("ahead %d: %d compactions, summarizer calls %d, fallback calls %d, %d events of compactions; the summarizer was called %d times",
				ahead, res.Compactions, res.SummarizerCalls, res.FallbackCalls, compacting, f.calls)
		}
		if got := NewReport(opts, []Result{res}).Options.Summarizer; got != "custom" {
			t.Errorf("summarizer recorded as %q, want custom", got)
		}
	}
}
