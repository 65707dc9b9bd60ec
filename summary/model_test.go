package summary_test

// Tests that read histories through package model/openai, which (through package
// compact) depends on this one: they live outside the package.

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summary"
	"github.com/abridge-go/abridge/transcript"
)

// TestMarkerRoundTrip checks that a marker survives the conversions to
// openai-go params and back and a save and load of the history.
func TestMarkerRoundTrip(t *testing.T) {
	sum := "Goal: fix pkg/x.\n\nNext step: run go test ./pkg/x."
	h := []processor.Message{processor.UserMessage("hi"), summary.Marker(sum), processor.UserMessage("go on")}
	params, err := openai.ToParams(h)
	if err != nil {
		t.Fatal(err)
	}
	back, err := openai.FromParams(params)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := transcript.Save(&buf, h); err != nil {
		t.Fatal(err)
	}
	loaded, err := transcript.Load(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]processor.Message{"direct": h[1], "params": back[1], "json": loaded[1]} {
		got, _, ok := summary.ParseMarker(m)
		if !ok {
			t.Errorf("%s: marker not recognised", name)
			continue
		}
		if diff := cmp.Diff(sum, got); diff != "" {
			t.Errorf("%s: summary (-want +got):\n%s", name, diff)
		}
	}
	for _, m := range []processor.Message{processor.UserMessage("hi"), processor.UserMessage(summary.Prefix + " but not on its own line"), processor.TextMessage(summary.Prefix + "\nx")} {
		if _, _, ok := summary.ParseMarker(m); ok {
			t.Errorf("ParseMarker(%q) = true, want false", m.Text())
		}
	}
}
