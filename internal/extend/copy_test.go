package extend

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestCopy checks that Copy makes the copies processor.Clone makes: equal
// messages, nil and empty parts kept apart, metadata copied, slices inside
// parts copied and the other parts shared; and that the copies' parts lie
// one after the other.
func TestCopy(t *testing.T) {
	h := append(history(), plainHistory()...)
	h = append(h, processor.Message{Kind: processor.Request}, processor.Message{Kind: processor.Request, Parts: []processor.Part{}})
	got := Copy(h)
	if diff := cmp.Diff(processor.Clone(h), got); diff != "" {
		t.Fatalf("Copy differs from Clone (-Clone +Copy):\n%s", diff)
	}
	var next uintptr // where the next message's parts should start
	for i := range h {
		if !processor.Equal(h[i], got[i]) {
			t.Errorf("message %d: copy not Equal", i)
		}
		if (h[i].Parts == nil) != (got[i].Parts == nil) {
			t.Errorf("message %d: nil parts %v, copy's %v", i, h[i].Parts == nil, got[i].Parts == nil)
		}
		if h[i].Meta != nil && h[i].Meta == got[i].Meta {
			t.Errorf("message %d: metadata shared", i)
		}
		if len(got[i].Parts) == 0 {
			continue
		}
		first := uintptr(unsafe.Pointer(unsafe.SliceData(got[i].Parts)))
		if next != 0 && first != next {
			t.Errorf("message %d: parts not right after the previous message's", i)
		}
		next = first + uintptr(len(got[i].Parts))*unsafe.Sizeof(got[i].Parts[0])
		if cap(got[i].Parts) != len(got[i].Parts) {
			t.Errorf("message %d: parts not clipped", i)
		}
		if Plain(h[i]) != SameParts(h[i].Parts, got[i].Parts) {
			t.Errorf("message %d: plain %v, parts shared %v", i, Plain(h[i]), !Plain(h[i]))
		}
	}
	if Copy(nil) != nil {
		t.Error("Copy(nil) != nil")
	}
}

// TestPlainAndSameParts checks Plain on each kind of part, with and
// without slices, and SameParts on equal but distinct boxed values.
func TestPlainAndSameParts(t *testing.T) {
	tests := []struct {
		part  processor.Part
		plain bool
	}{
		{processor.SystemPrompt{Content: "s"}, true},
		{processor.UserPrompt{Content: "u"}, true},
		{processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: "u"}}}, false},
		{processor.ToolReturn{Content: "r"}, true},
		{processor.ToolReturn{JSON: json.RawMessage(`{}`)}, false},
		{processor.ToolReturn{Contents: []string{"a"}}, false},
		{processor.RetryPrompt{Content: "r"}, true},
		{processor.Text{Content: "t"}, true},
		{processor.ToolCall{ToolCallID: "c", ToolName: "n", Args: "{}"}, true},
		{processor.Thinking{Content: "t"}, true},
	}
	for _, tt := range tests {
		m := processor.NewRequest(tt.part)
		if got := Plain(m); got != tt.plain {
			t.Errorf("Plain(%#v) = %v, want %v", tt.part, got, tt.plain)
		}
		v := reflect.New(reflect.TypeOf(tt.part)).Elem()
		v.Set(reflect.ValueOf(tt.part))
		again := v.Interface().(processor.Part) // a new box holding an equal value
		if !SameParts(m.Parts, m.Parts) || SameParts(m.Parts, []processor.Part{again}) || SameParts(m.Parts, nil) {
			t.Errorf("SameParts(%#v): boxes not told by address", tt.part)
		}
	}
	if !Plain(processor.Message{}) {
		t.Error("a message without parts is not plain")
	}
}
