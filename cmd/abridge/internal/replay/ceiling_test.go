package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReuseCeiling checks the ceiling on requests built by hand: messages
// at the same place count whole, whatever their bytes; the first message
// that differs counts for its common prefix, or, when a new marker takes an
// old one's place, for as much as the shorter of the two.
func TestReuseCeiling(t *testing.T) {
	msg := func(origin int, json string) sent { return sent{origin: origin, json: []byte(json)} }
	marker := func(summary, json string) sent {
		return sent{origin: -1, json: []byte(json), summary: summary, marker: true}
	}
	head := msg(0, `{"role":"system","content":"s"}`)    // 31 bytes
	user := msg(1, `{"role":"user","content":"fix it"}`) // 34 bytes
	call := msg(2, `{"role":"assistant","tool_calls":[]}`)
	full := msg(3, `{"role":"tool","content":"a very long output"}`)
	trimmed := msg(3, `{"role":"tool","content":"a [trimmed]"}`)
	m1 := marker("one", `{"role":"user","content":"[summary] one"}`)
	m2 := marker("one two", `{"role":"user","content":"[summary] one two"}`)
	tests := []struct {
		name      string
		prev, cur []sent
		want      int
	}{
		{"first request", nil, []sent{head, user}, 0},
		{"grown by new messages", []sent{head, user}, []sent{head, user, call, full}, 31 + 34},
		{"an earlier message trimmed since", []sent{head, user, call, full}, []sent{head, user, call, trimmed, call}, 31 + 34 + len(call.json) + len(trimmed.json)},
		{"same bytes, another message", []sent{head, msg(7, `{"x":1}`)}, []sent{head, msg(9, `{"x":1}`), user}, 31 + 7},
		{"first compaction: a marker where a message was", []sent{head, user, call}, []sent{head, m1, call},
			31 + len(`{"role":"user","content":"`)},
		{"next compaction: a new marker where the old one was", []sent{head, m1, user}, []sent{head, m2, call}, 31 + len(m1.json)},
		{"same marker again", []sent{head, m1, user}, []sent{head, m1, user, call}, 31 + len(m1.json) + 34},
		{"unknown origins compare by bytes", []sent{msg(-2, `{"a":1}`), msg(-2, `{"b":2}`)}, []sent{msg(-2, `{"a":1}`), msg(-2, `{"b":3}`)}, 7 + 5},
		{"shorter than the previous request", []sent{head, user, call}, []sent{head, user}, 31 + 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, reuseCeiling(tt.prev, tt.cur)); diff != "" {
				t.Errorf("ceiling (-want +got):\n%s", diff)
			}
		})
	}
}
