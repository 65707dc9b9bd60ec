package processor_test

import (
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

func BenchmarkValidate(b *testing.B) {
	var h []processor.Message
	for _, f := range transcripts.Shared(b) {
		x, err := transcript.LoadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		if len(x) > len(h) {
			h = x
		}
	}
	h = append(h, processor.UserMessage("go on"))
	b.ReportAllocs()
	for b.Loop() {
		if err := processor.Validate(h); err != nil {
			b.Fatal(err)
		}
	}
}
