package compact_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/summary"
)

// fake records what it was asked to summarize.
type fake struct {
	summary string
	err     error
	calls   int
	got     []processor.Message
	prev    string
	focus   string
}

func (f *fake) Summarize(_ context.Context, msgs []processor.Message, previous, focus string) (string, error) {
	f.calls++
	f.got, f.prev, f.focus = slices.Clone(msgs), previous, focus
	return f.summary, f.err
}

func call(id, name, args string) processor.Message {
	return processor.NewResponse(processor.ToolCall{ToolCallID: id, ToolName: name, Args: args})
}

func ret(id, name, content string) processor.Message {
	return processor.NewRequest(processor.ToolReturn{ToolCallID: id, ToolName: name, Content: content})
}

var (
	sys  = processor.SystemMessage("You are a coding agent.")
	conv = []processor.Message{
		processor.UserMessage("fix the failing tests"),
		call("c1", "bash", `{"command":"go test ./..."}`),
		ret("c1", "bash", strings.Repeat("=== RUN   TestOK\n--- PASS: TestOK (0.00s)\n", 30)+"--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2"),
		processor.TextMessage("TestParse fails: off by one in parse.go."),
		processor.UserMessage("fix it"),
		processor.TextMessage("Fixed parse.go line 40; tests pass."),
	}
	ack = processor.TextMessage(compact.Acknowledgement)
)

func cat(parts ...[]processor.Message) []processor.Message {
	var out []processor.Message
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func one(m ...processor.Message) []processor.Message { return m }

func TestCompact(t *testing.T) {
	const want = "Goal: fix TestParse. Status: done."
	mixed := processor.NewRequest(processor.SystemPrompt{Content: "Be careful."}, processor.UserPrompt{Content: "hello"})
	tests := []struct {
		name      string
		history   []processor.Message
		focus     string
		want      []processor.Message
		wantSent  []processor.Message
		wantPrev  string
		wantFocus string
	}{
		{
			name:      "plain history with focus",
			history:   conv,
			focus:     "  focus on the failing tests\n",
			want:      one(summary.Marker(want), ack),
			wantSent:  conv,
			wantFocus: "focus on the failing tests",
		},
		{
			name:     "system prompts kept first",
			history:  cat(one(sys, processor.SystemMessage("Use Go.")), conv),
			want:     one(sys, processor.SystemMessage("Use Go."), summary.Marker(want), ack),
			wantSent: conv,
		},
		{
			name:    "system parts split from the first prompt",
			history: cat(one(mixed, processor.TextMessage("hi")), conv),
			want: one(processor.NewRequest(processor.SystemPrompt{Content: "Be careful."}),
				summary.Marker(want), ack),
			wantSent: cat(one(processor.UserMessage("hello"), processor.TextMessage("hi")), conv),
		},
		{
			name:     "earlier summary passed as previous",
			history:  cat(one(sys, summary.Marker("old summary"), ack), conv),
			want:     one(sys, summary.Marker(want), ack),
			wantSent: conv,
			wantPrev: "old summary",
		},
		{
			name:     "every earlier summary passed as previous",
			history:  cat(one(sys, summary.Marker("first summary"), ack), conv[:4], one(summary.Marker(" second summary\n")), conv[4:]),
			want:     one(sys, summary.Marker(want), ack),
			wantSent: conv,
			wantPrev: "first summary\n\nsecond summary",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.history)
			f := &fake{summary: "\n" + want + "\n"}
			got, rep, err := compact.Compact(context.Background(), f, tt.history, tt.focus)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("compacted (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSent, f.got); diff != "" {
				t.Errorf("summarized (-want +got):\n%s", diff)
			}
			if f.prev != tt.wantPrev || f.focus != tt.wantFocus {
				t.Errorf("previous %q focus %q, want %q %q", f.prev, f.focus, tt.wantPrev, tt.wantFocus)
			}
			s, _, ok := summary.ParseMarker(got[len(got)-2])
			if !ok || s != want {
				t.Errorf("marker not recognised: %q %v", s, ok)
			}
			wantRep := compact.Report{
				MessagesBefore: len(tt.history), MessagesAfter: len(tt.want),
				TokensBefore: processor.EstimateTokens(tt.history), TokensAfter: processor.EstimateTokens(tt.want),
				SummaryBytes: len(want),
			}
			if diff := cmp.Diff(wantRep, rep); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.history); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestCompactReportShrinks(t *testing.T) {
	long := slices.Clone(conv)
	long[2] = ret("c1", "bash", strings.Repeat("FAIL line\n", 2000))
	_, rep, err := compact.Compact(context.Background(), &fake{summary: "short"}, long, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.MessagesBefore != 6 || rep.MessagesAfter != 2 || rep.TokensAfter >= rep.TokensBefore/10 || rep.SummaryBytes != 5 {
		t.Errorf("report %+v: want 6 -> 2 messages and a tenth of the tokens", rep)
	}
}

func TestCompactTooShort(t *testing.T) {
	tests := []struct {
		name    string
		history []processor.Message
	}{
		{"empty", nil},
		{"one prompt", one(processor.UserMessage("hi"))},
		{"one exchange", one(processor.UserMessage("hi"), processor.TextMessage("hello"))},
		{"system prompts and one message", one(sys, sys, processor.UserMessage("hi"))},
		{"only a summary", one(summary.Marker("s"), ack)},
		{"system and a summary", one(sys, summary.Marker("s"), ack)},
		{"summary and one prompt", one(summary.Marker("s"), ack, processor.UserMessage("next"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{summary: "x"}
			_, rep, err := compact.Compact(context.Background(), f, tt.history, "")
			if !errors.Is(err, compact.ErrTooShort) {
				t.Fatalf("error %v, want ErrTooShort", err)
			}
			if f.calls != 0 {
				t.Error("summarizer called")
			}
			if rep.MessagesBefore != len(tt.history) || rep.MessagesAfter != 0 {
				t.Errorf("report %+v", rep)
			}
		})
	}
}

func TestCompactSummarizerErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		f    *fake
		want error
	}{
		{"error", &fake{err: boom}, boom},
		{"empty", &fake{summary: " \n"}, summary.ErrEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := compact.Compact(context.Background(), tt.f, conv, "")
			if !errors.Is(err, tt.want) || out != nil {
				t.Fatalf("got %v, %v; want nil, %v", out, err, tt.want)
			}
		})
	}
}

func TestCompactNoSummarizer(t *testing.T) {
	if _, _, err := compact.Compact(context.Background(), nil, conv, ""); err == nil {
		t.Fatal("compacted without a summarizer")
	}
}

// With the LLM summarizer, the focus reaches the model's prompt and the
// history's system prompt does not.
func TestCompactWithLLMSummarizer(t *testing.T) {
	rec := model.NewRecorder(model.RespondText("Goal: fix TestParse."))
	s := llm.New(rec, llm.Options{})
	got, _, err := compact.Compact(context.Background(), s, cat(one(sys), conv), "keep the file names")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d messages, want 3", len(got))
	}
	calls := rec.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d model calls, want 1", len(calls))
	}
	sent := calls[0].Messages[len(calls[0].Messages)-1].Text()
	for _, want := range []string{"keep the file names", "parse_test.go:12"} {
		if !strings.Contains(sent, want) {
			t.Errorf("summary prompt lacks %q", want)
		}
	}
	if strings.Contains(sent, "You are a coding agent.") {
		t.Error("the system prompt was sent to the summarizer")
	}
}

// TestCompactFocusedDigest compacts with the offline digest, which takes a
// focus it cannot follow and records it.
func TestCompactFocusedDigest(t *testing.T) {
	s := summarizer.NewDigest(summarizer.DigestOptions{})
	out, _, err := compact.Compact(context.Background(), s, conv, "the parser tests")
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok := summary.ParseMarker(out[0])
	if !ok || !strings.HasPrefix(got, summarizer.DigestHeader) || !strings.Contains(got, "fix the failing tests") ||
		!strings.Contains(got, "Focus asked for:\nthe parser tests") {
		t.Errorf("digest summary %q", got)
	}
}

// TestCompactNoGain checks that a compaction that would not make the
// history smaller (a summary as long as what it replaces, with its
// framing) is refused, the history left as it is.
func TestCompactNoGain(t *testing.T) {
	tiny := []processor.Message{processor.UserMessage("hi"), processor.TextMessage("hello"), processor.UserMessage("bye"), processor.TextMessage("bye")}
	out, rep, err := compact.Compact(context.Background(), &fake{summary: "The user said hi and bye."}, tiny, "")
	if !errors.Is(err, compact.ErrNoGain) || out != nil {
		t.Fatalf("Compact of a tiny history = %d messages, %v; want ErrNoGain", len(out), err)
	}
	if want := "compaction would not shrink the history: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not say first what happened (%q)", err, want)
	}
	if rep.TokensBefore != processor.ContentTokens(tiny) || rep.MessagesAfter != 0 || rep.SummaryBytes == 0 {
		t.Errorf("report %+v", rep)
	}
}
