package openai

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

// fake records what it was asked to summarize.
type fake struct {
	summary     string
	calls       int
	got         []processor.Message
	prev, focus string
}

func (f *fake) Summarize(_ context.Context, msgs []processor.Message, previous, focus string) (string, error) {
	f.calls++
	f.got, f.prev, f.focus = slices.Clone(msgs), previous, focus
	return f.summary, nil
}

// jsonOf compares openai-go params through their JSON.
var jsonOf = cmp.Transformer("json", func(m openai.ChatCompletionMessageParamUnion) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
})

// failOutput is a test run's output, long enough that a summary is
// shorter.
var failOutput = strings.Repeat("--- PASS: TestOK (0.00s)\n", 40) + "FAIL TestParse"

func TestCompactOpenAI(t *testing.T) {
	history := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage("fix the failing tests"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: "c1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "bash", Arguments: `{"command":"go test"}`},
			}}},
		}},
		openai.ToolMessage(failOutput, "c1"),
		openai.AssistantMessage("TestParse fails."),
	}
	f := &fake{summary: "first summary"}
	out, rep, err := Compact(context.Background(), f, history, "tests")
	if err != nil {
		t.Fatal(err)
	}
	want := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage(summary.Marker("first summary").Text()),
		openai.AssistantMessage(compact.Acknowledgement),
	}
	if diff := cmp.Diff(want, out, jsonOf); diff != "" {
		t.Errorf("compacted (-want +got):\n%s", diff)
	}
	if rep.MessagesBefore != 5 || rep.MessagesAfter != 3 || f.focus != "tests" {
		t.Errorf("report %+v focus %q", rep, f.focus)
	}
	wantSent := []processor.Message{
		processor.UserMessage("fix the failing tests"),
		processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{"command":"go test"}`}),
		processor.NewRequest(processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: failOutput}),
		processor.TextMessage("TestParse fails."),
	}
	if diff := cmp.Diff(wantSent, f.got); diff != "" {
		t.Errorf("summarized (-want +got):\n%s", diff)
	}

	// Through JSON and back, the marker is still recognised: compacting
	// again merges the first summary instead of summarizing it.
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var reloaded []openai.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(b, &reloaded); err != nil {
		t.Fatal(err)
	}
	reloaded = append(reloaded, openai.UserMessage("now the docs"), openai.AssistantMessage("Docs updated."))
	f2 := &fake{summary: "second summary"}
	out2, _, err := Compact(context.Background(), f2, reloaded, "")
	if err != nil {
		t.Fatal(err)
	}
	if f2.prev != "first summary" {
		t.Errorf("previous %q, want the first summary", f2.prev)
	}
	wantSent2 := []processor.Message{processor.UserMessage("now the docs"), processor.TextMessage("Docs updated.")}
	if diff := cmp.Diff(wantSent2, f2.got); diff != "" {
		t.Errorf("second compaction summarized (-want +got):\n%s", diff)
	}
	msgs, err := FromParams(out2)
	if err != nil {
		t.Fatal(err)
	}
	if s, _, ok := summary.ParseMarker(msgs[1]); !ok || s != "second summary" {
		t.Errorf("second marker %q %v", s, ok)
	}
}

func TestCompactOpenAIInvalid(t *testing.T) {
	bad := []openai.ChatCompletionMessageParamUnion{{}, openai.UserMessage("a"), openai.AssistantMessage("b")}
	f := &fake{summary: "x"}
	if _, _, err := Compact(context.Background(), f, bad, ""); err == nil {
		t.Fatal("a message without a role was accepted")
	}
	if f.calls != 0 {
		t.Error("summarizer called")
	}
}

// Every shared transcript compacts to [system..., marker, ack] with fewer
// tokens, with the offline digest as summarizer. Run with -v for the sizes.
func TestCompactSharedTranscripts(t *testing.T) {
	for _, path := range transcripts.Shared(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var tr struct {
				Messages []openai.ChatCompletionMessageParamUnion `json:"messages"`
			}
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatal(err)
			}
			digest := summarizer.NewDigest(summarizer.DigestOptions{})
			out, rep, err := Compact(context.Background(), digest, tr.Messages, "tests")
			if errors.Is(err, compact.ErrTooShort) {
				t.Skipf("%d messages: too short", len(tr.Messages))
			}
			if err != nil {
				t.Fatal(err)
			}
			n := len(out)
			if n < 2 || out[n-1].OfAssistant == nil || out[n-2].OfUser == nil {
				t.Fatalf("shape: %d messages, not ending with [user marker, assistant ack]", n)
			}
			for i, m := range out[:n-2] {
				if m.OfSystem == nil && m.OfDeveloper == nil {
					t.Errorf("message %d before the marker is not a system message", i)
				}
			}
			if rep.MessagesBefore != len(tr.Messages) || rep.MessagesAfter != n || rep.TokensAfter >= rep.TokensBefore {
				t.Errorf("report %+v", rep)
			}
			t.Logf("messages %d -> %d, tokens %d -> %d, summary %d chars",
				rep.MessagesBefore, rep.MessagesAfter, rep.TokensBefore, rep.TokensAfter, rep.SummaryBytes)
		})
	}
}
