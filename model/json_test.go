package model_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/internal/transcripts"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor/processortest"
)

// TestJSONRoundTrip converts every transcript to raw JSON and back, whole
// (ToJSON, FromJSON) and message by message (ToRawMessages,
// FromRawMessages): the history comes back equal, and the JSON is what
// ToOpenAI's params marshal to.
func TestJSONRoundTrip(t *testing.T) {
	for _, path := range transcripts.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, err := model.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data, err := model.ToJSON(h)
			if err != nil {
				t.Fatal(err)
			}
			params, err := model.ToOpenAI(h)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != string(want) {
				t.Errorf("ToJSON differs from the params' JSON")
			}
			back, err := model.FromJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := processortest.Diff(h, back); err != nil {
				t.Errorf("FromJSON(ToJSON(h)): %v", err)
			}
			raws, err := model.ToRawMessages(h)
			if err != nil {
				t.Fatal(err)
			}
			back, err = model.FromRawMessages(raws)
			if err != nil {
				t.Fatal(err)
			}
			if err := processortest.Diff(h, back); err != nil {
				t.Errorf("FromRawMessages(ToRawMessages(h)): %v", err)
			}
		})
	}
}

// TestFromJSONErrors checks that bad raw JSON is an error naming what is
// wrong and where.
func TestFromJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		raws []string
		want string
	}{
		{"not an object", []string{`[1]`}, "message 0"},
		{"no role", []string{`{"content":"hi"}`}, "message 0"},
		{"tool without id", []string{`{"role":"user","content":"hi"}`, `{"role":"tool","content":"x"}`}, "message 1: tool message without tool_call_id"},
		{"broken JSON", []string{`{"role":"user","content":"hi"}`, `{"role":`}, "message 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raws := make([]json.RawMessage, len(tc.raws))
			for i, r := range tc.raws {
				raws[i] = json.RawMessage(r)
			}
			_, err := model.FromRawMessages(raws)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromRawMessages error %v, want one naming %q", err, tc.want)
			}
			_, err = model.FromJSON([]byte("[" + strings.Join(tc.raws, ",") + "]"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FromJSON error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
