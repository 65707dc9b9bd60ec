package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &b, on: true, start: clock, now: func() time.Time { return clock }, minimum: time.Second}
	p.update("dir/a.json", 1, 3) // too early: nothing drawn
	clock = clock.Add(2 * time.Second)
	p.update("dir/b.json", 2, 3)
	clock = clock.Add(10 * time.Millisecond)
	p.update("dir/c.json", 3, 3) // the last one is always drawn
	p.update("", 0, 0)
	want := "\r\x1b[Kreplaying b.json 2/3\r\x1b[Kreplaying c.json 3/3\r\x1b[K"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}

	b.Reset()
	off := newProgress(&b) // a buffer is not a terminal
	off.update("a.json", 1, 1)
	off.update("", 0, 0)
	if b.Len() != 0 {
		t.Errorf("progress drew %q on a non-terminal", b.String())
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		n           int
		tokens, num string
	}{
		{0, "0", "0"},
		{950, "950", "950"},
		{1234, "1.2k", "1,234"},
		{88_400, "88k", "88,400"},
		{1_234_567, "1.2M", "1,234,567"},
		{-4321, "-4321", "-4,321"},
	}
	for _, tt := range tests {
		got := []string{tokens(tt.n), count(tt.n)}
		if diff := cmp.Diff([]string{tt.tokens, tt.num}, got); diff != "" {
			t.Errorf("tokens, count of %d (-want +got):\n%s", tt.n, diff)
		}
	}
}

func TestDescribeWindowEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   window.Event
		want string
	}{
		{"started", window.Event{Type: window.EventStarted, MessagesBefore: 41, Summarized: 18}, "… summarizing 18 messages"},
		{"finished", window.Event{Type: window.EventFinished, MessagesBefore: 41, MessagesAfter: 23, TokensBefore: 88000, TokensAfter: 21000}, "compacted 41 → 23 messages"},
		{"fallback", window.Event{Type: window.EventFailed, MessagesBefore: 41, MessagesAfter: 23, Err: summary.ErrEmpty}, "with a fallback digest"},
		{"nothing smaller", window.Event{Type: window.EventFailed, MessagesBefore: 9, MessagesAfter: 9, Err: window.ErrNoSmallerSummary}, "not compacted"},
		{"interrupted", window.Event{Type: window.EventFailed, MessagesBefore: 41, MessagesAfter: 41, Err: context.Canceled, Reason: "canceled"}, "summarizing interrupted: nothing compacted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeWindowEvent(tt.ev); !strings.Contains(got, tt.want) {
				t.Errorf("describeWindowEvent = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

// TestLogToStderr runs a chat turn at each log level: the CLI's logger
// writes to the command's own stderr, at warn level unless
// ABRIDGE_LOG_LEVEL says otherwise, in the format ABRIDGE_LOG_FORMAT sets.
func TestLogToStderr(t *testing.T) {
	f := newFakeOpenAI(t)
	tests := []struct {
		name string
		env  []string
		want []string // substrings of stderr; none means stderr is empty
	}{
		{"default", nil, nil},
		{"info", []string{"ABRIDGE_LOG_LEVEL", "info"}, nil},
		{"debug", []string{"ABRIDGE_LOG_LEVEL", "debug"}, []string{"\tDEBUG\trequest\t{\"step\": 1, \"messages\": 1,"}},
		{"debug json", []string{"ABRIDGE_LOG_LEVEL", "debug", "ABRIDGE_LOG_FORMAT", "json"},
			[]string{`{"level":"debug",`, `"msg":"request","step":1,"messages":1,`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, f.env(tt.env...), "hello\n", "chat")
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "reply to: hello\n") {
				t.Errorf("stdout = %q, want the answer", r.stdout)
			}
			if len(tt.want) == 0 && r.stderr != "" {
				t.Errorf("stderr = %q, want nothing", r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not hold %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}
