package window

import (
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// TestIsMarker checks that isMarker, which reads only the start of a
// text, agrees with ParseMarker on texts that begin like a marker, in
// both forms a marker takes (plain text, one text part) and others.
func TestIsMarker(t *testing.T) {
	texts := []string{
		"", Prefix, Prefix + "\n", Prefix + "\r\n", Prefix + "\r", Prefix + "\r\r\n", Prefix + "\n\n",
		Prefix + "x", Prefix + " \n", Prefix + "\nsummary", Prefix + "\r\nsummary\r\n", Marker("s").Text(),
		"[abridge: summary", " " + Prefix, "hello",
	}
	for _, s := range texts {
		for _, m := range []processor.Message{
			processor.UserMessage(s),
			processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "text", Text: s}}}),
			processor.NewRequest(processor.UserPrompt{Contents: []processor.UserContent{{Type: "image_url", Text: s}}}),
			processor.NewRequest(processor.UserPrompt{Content: s}, processor.UserPrompt{Content: s}),
			processor.NewResponse(processor.Text{Content: s}),
			processor.SystemMessage(s),
		} {
			if _, want := ParseMarker(m); isMarker(m) != want {
				t.Errorf("%q in %v: isMarker = %v, ParseMarker says %v", s, roles([]processor.Message{m}), !want, want)
			}
		}
	}
}
