package summary_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// TestSaving gives what Clear saves, and 0 where it clears nothing.
func TestSaving(t *testing.T) {
	long := processor.ToolReturn{ToolName: "bash", ToolCallID: "c1", Content: strings.Repeat("x", 1000)}
	js := []byte(`{"a":"` + strings.Repeat("y", 500) + `"}`)
	cleared, ok := summary.Clear(long, false)
	if !ok {
		t.Fatal("Clear left a 1000-character output")
	}
	tests := []struct {
		name string
		r    processor.ToolReturn
		want int
	}{
		{"long output", long, 1000 - len(cleared.Content)},
		{"short output", processor.ToolReturn{ToolName: "bash", ToolCallID: "c2", Content: "ok"}, 0},
		{"placeholder", cleared, 0},
		{"JSON", processor.ToolReturn{ToolName: "api", ToolCallID: "c3", JSON: js},
			len(js) - len(summary.Placeholder("api", "c3", len(js), false))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary.Saving(tt.r, false); got != tt.want {
				t.Errorf("Saving = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestClearParts clears the tool returns Clear clears, but those kept,
// and leaves parts as they were.
func TestClearParts(t *testing.T) {
	long := func(tool, id string) processor.ToolReturn {
		return processor.ToolReturn{ToolName: tool, ToolCallID: id, Content: strings.Repeat("z", 800)}
	}
	parts := []processor.Part{long("bash", "a"), processor.ToolReturn{ToolName: "bash", ToolCallID: "b", Content: "ok"},
		long("read", "c"), processor.UserPrompt{Content: "next"}}
	before := append([]processor.Part(nil), parts...)
	keepRead := func(r processor.ToolReturn) bool { return r.ToolName == "read" }
	a, _ := summary.Clear(long("bash", "a"), true)
	c, _ := summary.Clear(long("read", "c"), true)
	tests := []struct {
		name string
		keep func(processor.ToolReturn) bool
		want []processor.Part
	}{
		{"all", nil, []processor.Part{a, parts[1], c, parts[3]}},
		{"read kept", keepRead, []processor.Part{a, parts[1], parts[2], parts[3]}},
		{"all kept", func(processor.ToolReturn) bool { return true }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary.ClearParts(parts, true, tt.keep)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ClearParts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, parts); diff != "" {
				t.Errorf("parts changed (-before +after):\n%s", diff)
			}
		})
	}
}
