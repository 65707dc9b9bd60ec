package openai

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// BenchmarkToParams measures converting the largest available transcript
// to params and encoding them as a request body would be.
func BenchmarkToParams(b *testing.B) {
	h, err := transcript.LoadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		params, err := ToParams(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := json.NewEncoder(io.Discard).Encode(params); err != nil {
			b.Fatal(err)
		}
	}
}
