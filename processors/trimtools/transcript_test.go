package trimtools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processor/processortest"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/testkit/transcripts"
	"github.com/abridge-go/abridge/transcript"
)

// longestName is the shared transcript with the most messages (466).
const longestName = "claudecode-spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.json"

// longest loads the shared transcript with the most messages, or, when the
// shared set is absent, the shipped one with the most messages, and
// returns it with a follow-up user prompt appended: the request an agent
// sends on the user's next turn, which carries the whole transcript.
func longest(tb testing.TB) (string, []processor.Message) {
	tb.Helper()
	var files []string
	if dir, ok := transcripts.SharedDir(); ok {
		if p := filepath.Join(dir, longestName); exists(p) {
			files = []string{p}
		} else {
			files = transcripts.Shared(tb)
		}
	} else {
		files = transcripts.Shipped(tb)
	}
	var best []processor.Message
	var name string
	for _, f := range files {
		h, err := transcript.LoadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if len(h) > len(best) {
			best, name = h, filepath.Base(f)
		}
	}
	return name, asRequest(best)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// asRequest returns h ending with a request: h itself, or h with a
// follow-up user prompt when it ends with a response.
func asRequest(h []processor.Message) []processor.Message {
	if h[len(h)-1].Kind == processor.Request {
		return h
	}
	return append(h[:len(h):len(h)], processor.UserMessage("Thanks. What should we do next?"))
}

// allTranscripts loads every shared transcript, or the shipped ones when
// the shared set is absent.
func allTranscripts(tb testing.TB) map[string][]processor.Message {
	tb.Helper()
	var files []string
	if _, ok := transcripts.SharedDir(); ok {
		files = transcripts.Shared(tb)
	} else {
		files = transcripts.Shipped(tb)
	}
	out := make(map[string][]processor.Message, len(files))
	for _, f := range files {
		h, err := transcript.LoadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(f)] = h
	}
	return out
}

// TestStableAcrossRequests replays each transcript as an agent sends it:
// one request per point where the history so far is valid, each on the
// whole history up to there. A message, once trimmed, must be identical
// (same bytes) on every later request, whether the agent keeps the raw
// history or stores the processed one and appends to it.
func TestStableAcrossRequests(t *testing.T) {
	ctx := context.Background()
	tr := trimtools.New(trimtools.Options{})
	total := 0
	defer func() {
		if total == 0 && !t.Failed() && !t.Skipped() {
			t.Error("no message was trimmed in any transcript: the test checked nothing")
		}
	}()
	for name, h := range allTranscripts(t) {
		t.Run(name, func(t *testing.T) {
			first := map[int]processor.Message{} // message index -> first trimmed form
			var stored []processor.Message       // the processed history, as an agent stores it
			requests, trimmedSeen := 0, 0
			for k := 1; k <= len(h); k++ {
				prefix := h[:k:k]
				if processor.Validate(prefix) != nil {
					continue
				}
				requests++
				raw, err := tr.Process(ctx, prefix)
				if err != nil {
					t.Fatal(err)
				}
				next := append(append([]processor.Message(nil), stored...), h[len(stored):k]...)
				fromStored, err := tr.Process(ctx, next)
				if err != nil {
					t.Fatal(err)
				}
				if err := processortest.Diff(raw, fromStored); err != nil {
					t.Fatalf("request %d: raw and stored histories processed differently: %v", k, err)
				}
				stored = fromStored
				for i := range raw[:max(k-tr.KeepLast(), 0)] {
					if processor.Equal(raw[i], h[i]) {
						continue
					}
					if f, ok := first[i]; !ok {
						first[i] = raw[i]
						trimmedSeen++
					} else if !processor.Equal(f, raw[i]) {
						t.Fatalf("request %d: message %d differs from its first trimmed form", k, i)
					}
				}
			}
			total += trimmedSeen
			t.Logf("%d requests, %d messages trimmed", requests, trimmedSeen)
		})
	}
}

// TestUnchangedNotCopied checks, on the longest transcript, that the
// output shares every unchanged message with the input: the same parts
// backing array and the same string data, and that trimmed messages share
// the parts they did not change.
func TestUnchangedNotCopied(t *testing.T) {
	name, h := longest(t)
	out, err := trimtools.New(trimtools.Options{}).Process(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if &out[0] == &h[0] {
		t.Fatalf("%s: nothing trimmed; the test needs a transcript with long tool returns", name)
	}
	unchanged, changed := 0, 0
	for i := range h {
		in, o := h[i], out[i]
		if len(in.Parts) == 0 {
			continue
		}
		sameParts := &in.Parts[0] == &o.Parts[0]
		if processor.Equal(in, o) != sameParts {
			t.Errorf("message %d: equal=%v but parts shared=%v", i, processor.Equal(in, o), sameParts)
		}
		if sameParts {
			unchanged++
		} else {
			changed++
		}
	}
	t.Logf("%s: %d messages shared, %d trimmed", name, unchanged, changed)
	if changed == 0 || unchanged == 0 {
		t.Errorf("%d shared, %d trimmed: want both", unchanged, changed)
	}
}
