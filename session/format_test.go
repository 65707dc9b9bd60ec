package session

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

func TestFormat(t *testing.T) {
	ctx := context.Background()
	s := openSession(t, openStore(t, sqliteDSN(t)), "fmt")
	long := strings.Repeat("word ", 30)
	msgs := []processor.Message{
		processor.NewRequest(processor.SystemPrompt{Content: "be\nbrief"}, processor.UserPrompt{Content: "hi"}),
		{Kind: processor.Response, Parts: []processor.Part{processor.Thinking{Content: "hmm"}, processor.ToolCall{ToolName: "ls", ToolCallID: "c1", Args: `{"d":"."}`}}},
		processor.NewRequest(processor.ToolReturn{ToolName: "ls", ToolCallID: "c1", Contents: []string{"a", "b"}}),
		{Kind: processor.Response, Meta: &processor.Meta{Refusal: "no"}},
		processor.NewRequest(processor.RetryPrompt{ToolName: "ls", Content: "again"}),
		processor.TextMessage(long),
	}
	if err := s.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	// Compaction 1 drops 2-3 and 5 behind a marker; compaction 2 drops
	// the marker and keeps only the last message.
	if err := s.Replace(ctx, []processor.Message{msgs[0], summary.Marker("first summary"), msgs[3], msgs[5]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(ctx, []processor.Message{msgs[5]}); err != nil {
		t.Fatal(err)
	}
	// A turn interrupted: its prompt is taken back.
	s.BeginTurn()
	if err := s.Append(ctx, processor.UserMessage("and then?")); err != nil {
		t.Fatal(err)
	}
	if err := s.Withdraw(ctx, []processor.Message{msgs[5]}, "interrupted"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := Format(&b, transcript(t, s), compactions(t, s)); err != nil {
		t.Fatal(err)
	}
	want := `  seq   kind      message (c: compacted, w: from a withdrawn turn, +: added by a compaction, unmarked: in the working history)
    1 c request   system: be brief | user: hi
    2 c response  thinking: hmm | assistant calls ls({"d":"."})
    3 c request   tool ls: a b
    4 c response  refusal: no
    5 c request   retry ls: again
    6   response  assistant: ` + strings.Repeat("word ", 20)[:100] + `…
  --- compaction 1: messages 2-3, 5 (3) replaced by message 7; summary: first summary
    7 c summary   first summary
  --- compaction 2: messages 1, 4 (2) and earlier 7 taken out of the working history, no message added
    8 w request   user: and then?
  --- turn withdrawn (interrupted): message 8 taken out of the working history
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Format (-want +got):\n%s", diff)
	}
}
