package openai_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// TestJSONRoundTrip converts every transcript to raw JSON and back, whole
// (ToJSON, FromJSON) and message by message (ToRawMessages,
// FromRawMessages): the history comes back equal, and the JSON is what
// ToParams's params marshal to.
func TestJSONRoundTrip(t *testing.T) {
	for _, path := range transcripts.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			h, err := transcript.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data, err := openai.ToJSON(h)
			if err != nil {
				t.Fatal(err)
			}
			params, err := openai.ToParams(h)
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
			back, err := openai.FromJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := processortest.Diff(h, back); err != nil {
				t.Errorf("FromJSON(ToJSON(h)): %v", err)
			}
			raws, err := openai.ToRawMessages(h)
			if err != nil {
				t.Fatal(err)
			}
			back, err = openai.FromRawMessages(raws)
			if err != nil {
				t.Fatal(err)
			}
			if err := processortest.Diff(h, back); err != nil {
				t.Errorf("FromRawMessages(ToRawMessages(h)): %v", err)
			}
		})
	}
}
