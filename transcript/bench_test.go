package transcript

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/abridge-go/abridge/testkit/transcripts"
)

// BenchmarkLoad measures decoding the largest available transcript.
func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Load(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSave measures writing the largest available transcript.
func BenchmarkSave(b *testing.B) {
	h, err := LoadFile(transcripts.Largest(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Save(io.Discard, h); err != nil {
			b.Fatal(err)
		}
	}
}
