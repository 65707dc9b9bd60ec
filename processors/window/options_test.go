package window

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestOptions checks the options a host sets directly: the tail size, a
// token threshold in tokens, and the zero and negative values of
// MaxMessages.
func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		history []processor.Message
		want    string // roles of the output
	}{
		{"MaxMessages 0 is the default 40: not triggered at 40", Options{}, conversation(18, 10), "SUAU" + repeat("CR", 18)},
		{"MaxMessages 0 is the default 40: triggered at 42, tail 20", Options{}, conversation(19, 10), "SUAM" + repeat("CR", 10)},
		{"MaxMessages -1 disables the count trigger", Options{MaxMessages: -1}, conversation(40, 10), "SUAU" + repeat("CR", 40)},
		{"KeepMessages sets the tail", Options{MaxMessages: 20, KeepMessages: 6}, conversation(10, 200), "SUAMCRCRCR"},
		{"KeepMessages below 2 is 2", Options{MaxMessages: 20, KeepMessages: 1}, conversation(10, 200), "SUAMCR"},
		// About 70 estimated tokens a call and its return: the tail is
		// shortened to fit in half the threshold.
		{"TriggerTokens below the history: compacted", Options{MaxMessages: -1, TriggerTokens: 300}, conversation(10, 200), "SUAMCRCR"},
		{"TriggerTokens above the history: left alone", Options{MaxMessages: -1, TriggerTokens: 100000}, conversation(10, 200), "SUAU" + repeat("CR", 10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := New(tc.opts).Process(context.Background(), tc.history)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, roles(out)); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// TestRequestConversation checks that conversations named apart keep their
// summaries apart though their histories are the same, and that the same
// name finds its summary again.
func TestRequestConversation(t *testing.T) {
	sum := &sized{chars: 40}
	w := New(Options{MaxMessages: 12, Summarizer: sum, Ahead: -1})
	run := func(id string) {
		t.Helper()
		ctx := context.Background()
		if id != "" {
			ctx = WithRequest(ctx, Request{Conversation: id})
		}
		if _, err := w.Process(ctx, conversation(10, 200)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id    string
		calls int
	}{{"a", 1}, {"a", 1}, {"b", 2}, {"", 3}, {"", 3}, {"b", 3}} {
		run(tc.id)
		if sum.count() != tc.calls {
			t.Fatalf("after conversation %q: %d summarizer calls, want %d", tc.id, sum.count(), tc.calls)
		}
	}
}

// TestRequestOnEvent checks that the window's events for a request reach
// the OnEvent of the Request its context carries, after Options.OnEvent
// and with the same events, and not the events of another request.
func TestRequestOnEvent(t *testing.T) {
	var host, mine []EventType
	w := New(Options{MaxMessages: 12, Summarizer: &sized{chars: 40}, Ahead: -1,
		OnEvent: func(_ context.Context, e Event) { host = append(host, e.Type) }})
	ctx := WithRequest(context.Background(), Request{OnEvent: func(e Event) { mine = append(mine, e.Type) }})
	if _, err := w.Process(ctx, conversation(10, 200)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Process(context.Background(), conversation(10, 300)); err != nil {
		t.Fatal(err)
	}
	want := []EventType{EventStarted, EventFinished}
	if diff := cmp.Diff(want, mine); diff != "" {
		t.Errorf("the request's events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(want, want...), host); diff != "" {
		t.Errorf("Options.OnEvent's events (-want +got):\n%s", diff)
	}
}
