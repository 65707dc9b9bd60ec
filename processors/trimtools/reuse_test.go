package trimtools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
)

// TestRemembered runs one Trimmer over histories whose old tool returns
// share a call ID with ones it trimmed before, the same or not (content,
// tool name, JSON or parts changed), and checks each result against a new
// Trimmer's: what one request trimmed never stands for another's return.
func TestRemembered(t *testing.T) {
	long := strings.Repeat("line of output\n", 400)
	ret := func(r processor.ToolReturn) processor.Message { return processor.NewRequest(r) }
	history := func(m processor.Message) []processor.Message {
		return []processor.Message{
			processor.UserMessage("go"),
			processor.NewResponse(processor.ToolCall{ToolCallID: "c1", ToolName: "bash", Args: "{}"}),
			m,
			processor.TextMessage("done"),
			processor.UserMessage("next"),
		}
	}
	jsonOut, _ := json.Marshal(map[string]string{"out": long})
	tests := []struct {
		name string
		ret  processor.ToolReturn
	}{
		{"first", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long}},
		{"the same again", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long}},
		{"a copy of the same", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: strings.Clone(long)}},
		{"content changed at the end", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long + "x"}},
		{"content changed in the middle", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long[:3000] + "X" + long[3001:]}},
		{"another tool name", processor.ToolReturn{ToolCallID: "c1", ToolName: "sh", Content: long}},
		{"JSON", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", JSON: jsonOut}},
		{"parts", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Contents: []string{long, "tail"}}},
		{"short", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: "ok"}},
		{"the first again", processor.ToolReturn{ToolCallID: "c1", ToolName: "bash", Content: long}},
	}
	tr := trimtools.New(trimtools.Options{})
	for _, tt := range tests {
		h := history(ret(tt.ret))
		got, err := tr.Process(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		want, err := trimtools.New(trimtools.Options{}).Process(context.Background(), h)
		if err != nil {
			t.Fatal(err)
		}
		if err := processortest.Diff(want, got); err != nil {
			t.Errorf("%s: against a new Trimmer: %v", tt.name, err)
		}
	}
}
