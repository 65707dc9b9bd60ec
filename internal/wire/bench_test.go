package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// BenchmarkParse reads the largest transcript as a request body (Parse;
// With and Buffers writing it back with one message replaced, as after a
// compaction), and with package transcript's loader (transcript.Load of
// its messages), the decoding the replay's fresh mode measures.
func BenchmarkParse(b *testing.B) {
	data := requestBody(b, transcripts.Largest(b))
	b.Run("wire.Parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Chat.Parse(data, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	body, err := Chat.Parse(data, nil)
	if err != nil {
		b.Fatal(err)
	}
	out := append([]processor.Message(nil), body.Messages...)
	out[len(out)/2] = processor.UserMessage("a summary marker would be here")
	b.Run("wire.With", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := with(body, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wire.Buffers", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := body.Buffers(out); err != nil {
				b.Fatal(err)
			}
		}
	})
	msgs := data[body.start:body.end]
	b.Run("transcript.Load", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := transcript.Load(bytes.NewReader(msgs)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCodecs reads the last request recorded from each agent (Codex:
// Responses, Claude Code: Messages, 16 tool rounds) with its codec, writes
// it back unchanged, with one message replaced and with every old tool
// output trimmed, and decodes it with encoding/json into generic values,
// the baseline a decoder of the whole body costs.
func BenchmarkCodecs(b *testing.B) {
	for _, c := range []Codec{Responses, Messages} {
		data, err := os.ReadFile(filepath.Join("testdata", "recorded", recorded[c.API()], "request_16.json"))
		if err != nil {
			b.Fatal(err)
		}
		body, err := c.Parse(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		out := append([]processor.Message(nil), body.Messages...)
		out[len(out)/2] = processor.UserMessage("replaced")
		b.Run(c.API()+"/Parse", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := c.Parse(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.API()+"/Buffers", func(b *testing.B) {
			for b.Loop() {
				if _, err := body.Buffers(out); err != nil {
					b.Fatal(err)
				}
			}
		})
		// Every old tool output trimmed, as the trimmer does on every
		// request: each rewritten as the client's item or block with its
		// output replaced.
		trimmed, err := trimtools.New(trimtools.Options{MaxChars: trimtools.MinMaxChars}).Process(context.Background(), body.Messages)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.API()+"/Buffers-trimmed", func(b *testing.B) {
			for b.Loop() {
				if _, err := body.Buffers(trimmed); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.API()+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var v any
				if err := json.Unmarshal(data, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
