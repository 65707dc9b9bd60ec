package replay

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// The per-message JSON cache must give the same bytes as serializing every
// request in full.
func TestRequestJSONCache(t *testing.T) {
	histories := map[string][]processor.Message{"synthetic": syntheticHistory(40)}
	for _, f := range transcripts.Shipped(t) {
		h, err := model.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		histories[DisplayName(f)] = h
	}
	for name, h := range histories {
		for _, mode := range []Mode{ModeProcessed, ModeFull} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				opts := Options{Mode: mode, Window: window.Options{MaxMessages: 6}}
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
					if res.Compactions == 0 {
						t.Fatal("no compaction")
					}
					got[i] = [2]int64{res.ReusedChars, res.RequestChars}
				}
				if diff := cmp.Diff(got[1], got[0]); diff != "" {
					t.Errorf("reused and request chars (-uncached +cached):\n%s", diff)
				}
			})
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
