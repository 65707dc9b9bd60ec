package receipt

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

func finished(span byte, sum string, fallback bool) window.Event {
	return window.Event{Type: window.EventFinished, MessagesBefore: 41, TokensBefore: 9000, MessagesAfter: 23, TokensAfter: 3000,
		Summary: sum, Replaced: []window.Replaced{{Role: "assistant", Tools: []string{"bash"}, Chars: 80}, {Role: "user", Marker: true, Chars: 900}},
		From: 2, To: 20, Key: window.Key{1}, Span: window.Digest{span}, Fallback: fallback,
		SummarizerUsage: processor.Usage{InputTokens: 5000, OutputTokens: 200}, Duration: time.Second}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name   string
		e      window.Event
		reason string
		want   Receipt
	}{
		{"model", finished(2, "did things", false), "", Receipt{
			ID: ID(window.Key{1}, window.Digest{2}, summary.Ref("did things")), Before: Size{41, 9000}, After: Size{23, 3000},
			From: 2, To: 20, Replaced: []Replaced{{Role: "assistant", Tools: []string{"bash"}, Chars: 80}, {Role: "user", Marker: true, Chars: 900}},
			Summary: "did things", Ref: summary.Ref("did things"), Writer: WriterModel,
			SummarizerUsage: Usage{Input: 5000, Output: 200}, Duration: time.Second,
		}},
		{"fallback", finished(2, "digest text", true), "timeout", Receipt{
			ID: ID(window.Key{1}, window.Digest{2}, summary.Ref("digest text")), Before: Size{41, 9000}, After: Size{23, 3000},
			From: 2, To: 20, Replaced: []Replaced{{Role: "assistant", Tools: []string{"bash"}, Chars: 80}, {Role: "user", Marker: true, Chars: 900}},
			Summary: "digest text", Ref: summary.Ref("digest text"), Writer: WriterDigest, Reason: "timeout",
			SummarizerUsage: Usage{Input: 5000, Output: 200}, Duration: time.Second,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := New(tc.e, tc.reason, WriterModel)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("New (-want +got):\n%s", diff)
			}
			if got.Marker() != summary.Marker(tc.e.Summary).Text() {
				t.Errorf("Marker() = %q, want the marker's text", got.Marker())
			}
			got.Replaced[0].Tools[0] = "changed"
			if tc.e.Replaced[0].Tools[0] != "bash" {
				t.Errorf("the receipt shares the event's tools")
			}
		})
	}
}

// TestID: an id names a key, a span and a summary; it has the form
// ValidID accepts.
func TestID(t *testing.T) {
	base := ID(window.Key{1}, window.Digest{2}, "sum-a")
	others := []string{ID(window.Key{9}, window.Digest{2}, "sum-a"), ID(window.Key{1}, window.Digest{9}, "sum-a"), ID(window.Key{1}, window.Digest{2}, "sum-b")}
	for _, o := range others {
		if o == base {
			t.Errorf("two compactions share the id %s", o)
		}
	}
	if ID(window.Key{1}, window.Digest{2}, "sum-a") != base {
		t.Errorf("ID is not a function of its arguments")
	}
	for _, tc := range []struct {
		s    string
		want bool
	}{{base, true}, {"0123456789abcdef01234567", true}, {"0123456789ABCDEF01234567", false}, {"../etc", false}, {base + "0", false}, {"", false}} {
		if got := ValidID(tc.s); got != tc.want {
			t.Errorf("ValidID(%q) = %v", tc.s, got)
		}
	}
}

// TestConversationID: a conversation keeps its id as it grows and when it
// is compacted (its leading requests stay); another opening or another
// scope is another conversation.
func TestConversationID(t *testing.T) {
	h := []processor.Message{processor.SystemMessage("be brief"), processor.UserMessage("fix the bug"),
		processor.TextMessage("done"), processor.UserMessage("thanks")}
	id := ConversationID("", h[:2])
	compacted := []processor.Message{h[0], h[1], h[2], summary.Marker("fixed it"), h[3]}
	headless := []processor.Message{h[0], h[1], summary.Marker("fixed it"), h[3]}
	for name, other := range map[string]string{"grown": ConversationID("", h), "compacted": ConversationID("", compacted),
		"compacted before any answer": ConversationID("", headless)} {
		if other != id {
			t.Errorf("%s: id %s, want %s", name, other, id)
		}
	}
	for name, other := range map[string]string{
		"other opening": ConversationID("", []processor.Message{processor.SystemMessage("be brief"), processor.UserMessage("fix another bug")}),
		"other scope":   ConversationID("client-7", h),
	} {
		if other == id {
			t.Errorf("%s: the same id %s", name, id)
		}
	}
	if !ValidID(id) {
		t.Errorf("ConversationID = %q, not a valid id", id)
	}
}

func TestLastMarkerRef(t *testing.T) {
	first, second := summary.Marker("one"), summary.Marker("two")
	tests := []struct {
		name string
		h    []processor.Message
		want string
	}{
		{"none", []processor.Message{processor.UserMessage("hi")}, ""},
		{"one", []processor.Message{processor.UserMessage("hi"), first, processor.UserMessage("go on")}, summary.Ref("one")},
		{"last of two", []processor.Message{first, processor.TextMessage("ok"), second}, summary.Ref("two")},
		{"look-alike", []processor.Message{processor.UserMessage(summary.Prefix + "\nnot a marker")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LastMarkerRef(tc.h); got != tc.want {
				t.Errorf("LastMarkerRef = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecorder: the events a recorder observes become its receipts, a
// fallback's reason paired with its compaction; events another recorder
// observes are not recorded.
func TestRecorder(t *testing.T) {
	rec := &Recorder{}
	failed := finished(3, "digest", true)
	failed.Type, failed.Reason, failed.Err = window.EventFailed, "summarizer error", errors.New("boom")
	events := []window.Event{
		{Type: window.EventStarted},
		finished(2, "model wrote", false),
		failed,
		finished(3, "digest", true),
		{Type: window.EventStoreFailed, Reason: "save"},
	}
	for _, e := range events {
		rec.Observe(e)
	}
	var other Recorder
	other.Observe(finished(4, "elsewhere", false))
	got := rec.Take("model")
	type brief struct{ Summary, Writer, Reason string }
	var briefs []brief
	for _, r := range got {
		briefs = append(briefs, brief{r.Summary, r.Writer, r.Reason})
	}
	want := []brief{{"model wrote", "model", ""}, {"digest", WriterDigest, "summarizer error"}}
	if diff := cmp.Diff(want, briefs); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
	if again := rec.Take("model"); len(again) != 0 {
		t.Errorf("a second Take returned %d receipts, want none", len(again))
	}
}

// TestReasons: a reason is paired with its own span's compaction only,
// once.
func TestReasons(t *testing.T) {
	var r Reasons
	failed := window.Event{Type: window.EventFailed, Fallback: true, Span: window.Digest{5}, Reason: "timeout"}
	noSpan := window.Event{Type: window.EventFailed, Reason: "no smaller summary"}
	for _, e := range []window.Event{failed, noSpan} {
		if got := r.Note(e); got != "" {
			t.Errorf("Note(failed) = %q", got)
		}
	}
	steps := []struct {
		span byte
		want string
	}{{6, ""}, {5, "timeout"}, {5, ""}}
	for _, s := range steps {
		if got := r.Note(window.Event{Type: window.EventFinished, Span: window.Digest{s.span}}); got != s.want {
			t.Errorf("Note(finished %d) = %q, want %q", s.span, got, s.want)
		}
	}
}

func TestPrompt(t *testing.T) {
	tests := []struct {
		name          string
		q             Request
		with, without int64
		reported      bool
	}{
		{"estimated", Request{Client: Size{Tokens: 9000}, Sent: Size{Tokens: 3000}}, 3000, 9000, false},
		{"reported", Request{Client: Size{Tokens: 9000}, Sent: Size{Tokens: 3000}, Usage: &Usage{Input: 3600, Cached: 2000}}, 3600, 10800, true},
		{"nothing reported", Request{Client: Size{Tokens: 100}, Sent: Size{Tokens: 100}, Usage: &Usage{}}, 100, 100, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			with, without, reported := tc.q.Prompt()
			if with != tc.with || without != tc.without || reported != tc.reported {
				t.Errorf("Prompt() = %d, %d, %v; want %d, %d, %v", with, without, reported, tc.with, tc.without, tc.reported)
			}
		})
	}
}
