package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/abridge-go/abridge/processor"
)

// benchBackends runs fn as sub-benchmarks "sqlite" and "postgres" (the
// latter skipped without ABRIDGE_TEST_POSTGRES_URL).
func benchBackends(b *testing.B, fn func(b *testing.B, dsn string)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, sqliteDSN(b)) })
	b.Run("postgres", func(b *testing.B) { fn(b, postgresDSN(b)) })
}

// benchMessage is a typical agent message: a tool return of about 1 KB.
func benchMessage(i int) processor.Message {
	content := fmt.Sprintf("%04d ", i)
	for len(content) < 1000 {
		content += "lorem ipsum dolor sit amet "
	}
	return processor.NewRequest(processor.ToolReturn{ToolName: "read", ToolCallID: fmt.Sprintf("c%d", i), Content: content})
}

// BenchmarkAppend measures appending one message to a session (one
// transaction, durable on return).
func BenchmarkAppend(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s := openSession(b, openStore(b, dsn), "bench")
		msgs := make([]processor.Message, 100)
		for i := range msgs {
			msgs[i] = benchMessage(i)
		}
		for i := 0; b.Loop(); i++ {
			if err := s.Append(ctx, msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWorking500 measures loading a working history of 500 messages
// of about 1 KB.
func BenchmarkWorking500(b *testing.B) {
	benchBackends(b, func(b *testing.B, dsn string) {
		ctx := context.Background()
		s := openSession(b, openStore(b, dsn), "bench")
		msgs := make([]processor.Message, 500)
		for i := range msgs {
			msgs[i] = benchMessage(i)
		}
		if err := s.Append(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			w, err := s.Working(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(w) != len(msgs) {
				b.Fatalf("%d messages, want %d", len(w), len(msgs))
			}
		}
	})
}
