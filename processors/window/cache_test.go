package window

import (
	"context"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
)

// TestFullHistoryHashesEachMessageOnce replays transcripts keeping the full
// history: the remembered cut is checked on every request, yet each message
// is hashed about once over the whole conversation, not once per request.
func TestFullHistoryHashesEachMessageOnce(t *testing.T) {
	files := append(transcripts.Shipped(t), transcripts.Largest(t))
	for _, file := range files {
		msgs, err := model.LoadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(baseName(file), func(t *testing.T) {
			var ev events
			w := New(Options{MaxMessages: 10, Summarizer: constSummary{}, OnEvent: ev.on})
			points := requestPoints(msgs)
			for _, i := range points {
				if _, err := w.Process(context.Background(), msgs[:i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if len(ev.all) == 0 {
				t.Skipf("%d messages: no compaction", len(msgs))
			}
			hashed := w.cache.hashed.Load()
			t.Logf("%d messages, %d requests, %d events, %d messages hashed", len(msgs), len(points), len(ev.all), hashed)
			if hashed > int64(len(msgs)) {
				t.Errorf("%d messages hashed for a %d-message conversation: more than once each", hashed, len(msgs))
			}
		})
	}
}

// TestFullHistoryNoticesChanges edits the history in place after a
// compaction: any change of content inside the compacted span must make
// the window drop the remembered cut, and a change of metadata alone must
// not.
func TestFullHistoryNoticesChanges(t *testing.T) {
	base := conversation(12, 100)
	base[7] = processor.NewRequest(processor.ToolReturn{ToolCallID: "call_1", ToolName: "bash", JSON: []byte(`{"out":"ok"}`)})
	for _, tc := range []struct {
		name   string
		edit   func(h []processor.Message)
		reused bool
	}{
		{"nothing", func([]processor.Message) {}, true},
		{"copies of the same messages", func(h []processor.Message) {
			copy(h, processortest.Clone(h))
		}, true},
		{"metadata only", func(h []processor.Message) { h[6] = h[6].WithMeta(processor.Meta{ModelName: "other-model"}) }, true},
		{"a part replaced in place", func(h []processor.Message) {
			h[10].Parts[0] = processor.ToolReturn{ToolCallID: "call_3", ToolName: "bash", Content: "changed"}
		}, false},
		{"a JSON payload changed in place", func(h []processor.Message) {
			h[7].Parts[0].(processor.ToolReturn).JSON[2] = 'O'
		}, false},
		{"a message replaced", func(h []processor.Message) {
			h[4] = call("call_0", "bash", `{"command":"rm -rf /"}`)
		}, false},
		{"the head changed", func(h []processor.Message) { h[1] = user("Another task.") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := processortest.Clone(base)
			var ev events
			w := New(Options{MaxMessages: 12, Summarizer: constSummary{}, OnEvent: ev.on})
			if _, err := w.Process(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			if len(ev.all) == 0 {
				t.Fatalf("no compaction of %s", roles(h))
			}
			tc.edit(h)
			v := w.view(h)
			if got := v.reused > 0; got != tc.reused {
				t.Errorf("remembered cut reused = %v, want %v", got, tc.reused)
			}
		})
	}
}

func baseName(path string) string {
	return path[strings.LastIndexByte(path, '/')+1:]
}
