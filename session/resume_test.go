package session

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestResume stores working histories a stopped process can leave, resumes
// them, and checks the repaired history, the fixes, and what was stored:
// appended answers in the transcript, other repairs as a compaction.
func TestResume(t *testing.T) {
	call := func(id string) processor.Part {
		return processor.ToolCall{ToolCallID: id, ToolName: "bash", Args: "{}"}
	}
	ret := func(id, s string) processor.Part {
		return processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: s}
	}
	interrupted := func(id string) processor.Part {
		return processor.ToolReturn{ToolCallID: id, ToolName: "bash", Content: processor.InterruptedContent}
	}
	start := []processor.Message{processor.UserMessage("list files"), processor.NewResponse(call("c1")), processor.NewRequest(ret("c1", "a b"))}
	tests := []struct {
		name        string
		stored      []processor.Message
		want        []processor.Message
		fixes       []string // actions
		compactions int
	}{
		{"nothing to repair", append(start, processor.TextMessage("a and b")), append(start, processor.TextMessage("a and b")), nil, 0},
		{"empty", nil, nil, nil, 0},
		{"killed while two tools ran",
			append(start, processor.NewResponse(call("c2"), call("c3"))),
			append(start, processor.NewResponse(call("c2"), call("c3")), processor.NewRequest(interrupted("c2"), interrupted("c3"))),
			[]string{processor.ActionAnsweredCall, processor.ActionAnsweredCall}, 0},
		{"a call answered in the middle",
			[]processor.Message{processor.UserMessage("go"), processor.NewResponse(call("c1")), processor.UserMessage("next"), processor.TextMessage("ok")},
			[]processor.Message{processor.UserMessage("go"), processor.NewResponse(call("c1")), processor.NewRequest(interrupted("c1")), processor.UserMessage("next"), processor.TextMessage("ok")},
			[]string{processor.ActionAnsweredCall}, 1},
		{"an orphan return",
			[]processor.Message{processor.UserMessage("go"), processor.TextMessage("ok"), processor.NewRequest(ret("zz", "stray")), processor.UserMessage("next"), processor.TextMessage("ok")},
			[]processor.Message{processor.UserMessage("go"), processor.TextMessage("ok"), processor.UserMessage("next"), processor.TextMessage("ok")},
			[]string{processor.ActionDroppedOrphan, processor.ActionDroppedRequest}, 1},
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := context.Background()
				st := openStore(t, newDSN(t))
				s := openSession(t, st, "s")
				if err := s.Append(ctx, tt.stored...); err != nil {
					t.Fatal(err)
				}
				got, fixes, err := openSession(t, st, "s").Resume(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got, eq); diff != "" {
					t.Errorf("resumed history (-want +got):\n%s", diff)
				}
				var actions []string
				for _, f := range fixes {
					actions = append(actions, f.Action)
				}
				if diff := cmp.Diff(tt.fixes, actions); diff != "" {
					t.Errorf("fixes (-want +got):\n%s", diff)
				}
				// What was stored: the working history is the repaired one,
				// and, when the answers came at the end, the transcript is it
				// too, a valid sequence.
				if diff := cmp.Diff(tt.want, working(t, s), eq); diff != "" {
					t.Errorf("stored working history (-want +got):\n%s", diff)
				}
				if n := len(compactions(t, s)); n != tt.compactions {
					t.Errorf("%d compactions recorded, want %d", n, tt.compactions)
				}
				if tt.compactions == 0 {
					var tr []processor.Message
					for _, e := range transcript(t, s) {
						tr = append(tr, e.Message)
					}
					if diff := cmp.Diff(tt.want, tr, eq); diff != "" {
						t.Errorf("transcript (-want +got):\n%s", diff)
					}
				}
				// Resuming again finds nothing to repair.
				again, fixes, err := s.Resume(ctx)
				if err != nil || len(fixes) != 0 || len(again) != len(tt.want) {
					t.Errorf("second Resume: %d messages, fixes %v, error %v", len(again), fixes, err)
				}
			})
		}
	})
}
