package openaitest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
)

// TestCheckForwardedMessages checks Messages bodies forwarded compacted,
// with the marker written into the user's message beside it as the
// Messages codec writes requests in a row, and ones that must be refused.
func TestCheckForwardedMessages(t *testing.T) {
	marker := summary.Marker("The user wants the files shown; parts 1 and 2 were.")
	text := marker.Parts[0].(processor.UserPrompt).Content
	if text == "" {
		text = marker.Parts[0].(processor.UserPrompt).Contents[0].Text
	}
	quoted, _ := json.Marshal(text)
	round := func(i string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"t` + i + `","name":"bash","input":{"command":"cat ` + i + `"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t` + i + `","content":"part ` + i + `"}]}`
	}
	body := func(msgs string) []byte {
		return []byte(`{"model":"claude-test","max_tokens":100,"system":"Be brief.","messages":[` + msgs + `],"stream":true}`)
	}
	sent := body(`{"role":"user","content":"Show the files."},` + round("1") + `,` + round("2") + `,` + round("3"))
	tests := []struct {
		name      string
		got       []byte
		compacted bool
		err       string
	}{
		{"as sent", sent, false, ""},
		{"marker joined to the head's prompt", body(`{"role":"user","content":[{"type":"text","text":"Show the files."},{"type":"text","text":` + string(quoted) + `}]},` + round("3")), true, ""},
		{"a tail message changed", body(`{"role":"user","content":[{"type":"text","text":"Show the files."},{"type":"text","text":` + string(quoted) + `}]},` +
			strings.Replace(round("3"), `"part 3"`, `"part three"`, 1)), false, "tail message 1 from the end differs"},
		{"a field changed", []byte(strings.Replace(string(sent), `"stream":true`, `"stream":false`, 1)), false, "outside messages"},
		{"no marker", body(`{"role":"user","content":"Show the files."},` + round("3")), false, "no summary marker"},
	}
	for _, tc := range tests {
		f, err := CheckForwardedAPI(wire.Messages, sent, tc.got, nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v; want one saying %q", tc.name, err, tc.err)
		case tc.err == "" && f.Compacted != tc.compacted:
			t.Errorf("%s: Compacted = %v; want %v", tc.name, f.Compacted, tc.compacted)
		}
	}
}
