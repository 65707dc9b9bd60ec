package model

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

func TestRecorderScript(t *testing.T) {
	call := processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: `{}`})
	r := NewRecorder(
		Respond(call),
		func(_ context.Context, index int, c Call) (processor.Message, error) {
			return processor.TextMessage("seen " + c.Messages[len(c.Messages)-1].Text()), nil
		},
		RespondText("last"),
	)
	r.Name = "scripted"
	h := []processor.Message{processor.UserMessage("one")}
	settings := Settings{Temperature: Float(0), ToolChoice: "auto", Tools: []Tool{{Name: "bash"}}}
	tests := []struct {
		name    string
		history []processor.Message
		want    processor.Message
	}{
		{"first reply", h, processor.Message{
			Kind:  processor.Response,
			Parts: call.Parts,
			Meta:  &processor.Meta{ModelName: "scripted", Usage: processor.Usage{InputTokens: int64(processor.EstimateTokens(h)), PromptMessages: 1}},
		}},
		{"reply computed from the call", []processor.Message{processor.UserMessage("two"), processor.TextMessage("ok"), processor.UserMessage("three")},
			processor.Message{
				Kind:  processor.Response,
				Parts: []processor.Part{processor.Text{Content: "seen three"}},
				Meta:  &processor.Meta{ModelName: "scripted", Usage: processor.Usage{InputTokens: int64(processor.EstimateTokens([]processor.Message{processor.UserMessage("two"), processor.TextMessage("ok"), processor.UserMessage("three")})), PromptMessages: 3}},
			}},
		{"third reply", h, processor.Message{
			Kind:  processor.Response,
			Parts: []processor.Part{processor.Text{Content: "last"}},
			Meta:  &processor.Meta{ModelName: "scripted", Usage: processor.Usage{InputTokens: int64(processor.EstimateTokens(h)), PromptMessages: 1}},
		}},
		{"last reply repeats", h, processor.Message{
			Kind:  processor.Response,
			Parts: []processor.Part{processor.Text{Content: "last"}},
			Meta:  &processor.Meta{ModelName: "scripted", Usage: processor.Usage{InputTokens: int64(processor.EstimateTokens(h)), PromptMessages: 1}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Request(context.Background(), tt.history, settings)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
		})
	}

	calls := r.Calls()
	if len(calls) != len(tests) {
		t.Fatalf("recorded %d calls, want %d", len(calls), len(tests))
	}
	for i, tt := range tests {
		if diff := cmp.Diff(tt.history, calls[i].Messages); diff != "" {
			t.Errorf("call %d messages (-sent +recorded):\n%s", i, diff)
		}
		if diff := cmp.Diff(settings, calls[i].Settings, cmp.Comparer(func(a, b func(string)) bool { return (a == nil) == (b == nil) })); diff != "" {
			t.Errorf("call %d settings (-sent +recorded):\n%s", i, diff)
		}
	}
}

func TestRecorderKeepsReplyUsageAndCopiesInput(t *testing.T) {
	reply := processor.Message{
		Kind:  processor.Response,
		Parts: []processor.Part{processor.Text{Content: "hi"}},
		Meta:  &processor.Meta{Usage: processor.Usage{InputTokens: 500, OutputTokens: 3}, ModelName: "real-name"},
	}
	r := NewRecorder(Respond(reply))
	h := []processor.Message{processor.UserMessage("a"), processor.TextMessage("b"), processor.UserMessage("c")}
	got, err := r.Request(context.Background(), h, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	meta := reply.Info()
	meta.Usage.PromptMessages = 3
	want := reply.WithMeta(meta)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reply (-want +got):\n%s", diff)
	}
	// The recorded call does not alias the caller's slice.
	h[0] = processor.UserMessage("changed")
	if got := r.Calls()[0].Messages[0].Text(); got != "a" {
		t.Errorf("recorded first message = %q after the caller changed its slice, want \"a\"", got)
	}
	// The returned parts do not alias the scripted reply's.
	got.Parts[0] = processor.Text{Content: "edited"}
	again, err := r.Request(context.Background(), h, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Text() != "hi" {
		t.Errorf("second reply text = %q after editing the first, want \"hi\"", again.Text())
	}
}

func TestRecorderErrors(t *testing.T) {
	boom := errors.New("boom")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		recorder  *Recorder
		ctx       context.Context
		want      error
		wantText  string
		wantCalls int
	}{
		{"scripted failure", NewRecorder(Fail(boom)), context.Background(), boom, "boom", 1},
		{"overflow failure", NewRecorder(Fail(&Error{StatusCode: 400, Code: "context_length_exceeded"})), context.Background(), ErrContextOverflow, "context_length_exceeded", 1},
		{"empty script", NewRecorder(), context.Background(), nil, "recorder: no reply scripted for call 0", 1},
		{"canceled context", NewRecorder(RespondText("x")), canceled, context.Canceled, "context canceled", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.recorder.Request(tt.ctx, []processor.Message{processor.UserMessage("a")}, Settings{})
			if err == nil {
				t.Fatal("Request succeeded, want an error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("errors.Is(%q, %v) = false", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if n := len(tt.recorder.Calls()); n != tt.wantCalls {
				t.Errorf("recorded %d calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestRecorderOnText(t *testing.T) {
	tests := []struct {
		name  string
		reply processor.Message
		want  []string
	}{
		{"text is streamed once", processor.TextMessage("hello"), []string{"hello"}},
		{"tool calls stream nothing", processor.NewResponse(processor.ToolCall{ToolCallID: "c", ToolName: "f"}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			r := NewRecorder(Respond(tt.reply))
			if _, err := r.Request(context.Background(), []processor.Message{processor.UserMessage("a")}, Settings{OnText: func(s string) { got = append(got, s) }}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OnText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder(func(_ context.Context, index int, _ Call) (processor.Message, error) {
		return processor.TextMessage("ok"), nil
	})
	const n = 32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := r.Request(context.Background(), []processor.Message{processor.UserMessage("a")}, Settings{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := len(r.Calls()); got != n {
		t.Errorf("recorded %d calls, want %d", got, n)
	}
}
