package session

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/transcripts"
	chatjson "github.com/abridge-go/abridge/transcript"
)

// longestTranscript returns the shared transcript with the most messages,
// or the longest shipped one when the shared set is absent.
func longestTranscript(t *testing.T) (string, []processor.Message) {
	t.Helper()
	var files []string
	if dir, ok := transcripts.SharedDir(); ok {
		files = listJSON(t, dir)
	}
	if len(files) == 0 {
		t.Logf("shared transcripts absent: replaying the shipped ones")
		files = transcripts.Shipped(t)
	}
	var (
		best string
		hist []processor.Message
	)
	for _, f := range files {
		h, err := chatjson.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) > len(hist) {
			best, hist = f, h
		}
	}
	return best, hist
}

// trimOld is a deterministic stand-in for a tool-output trimmer: tool
// returns longer than 300 bytes, except in the last two messages, are cut
// to 200 runes and a note. A trimmed return is short enough never to be cut
// again, so a message once trimmed stays identical.
func trimOld(h []processor.Message) []processor.Message {
	out := make([]processor.Message, len(h))
	copy(out, h)
	for i := 0; i < len(h)-2; i++ {
		var parts []processor.Part
		for j, p := range h[i].Parts {
			r, ok := p.(processor.ToolReturn)
			if !ok || r.JSON != nil || r.Contents != nil || len(r.Content) <= 300 {
				continue
			}
			if parts == nil {
				parts = append([]processor.Part{}, h[i].Parts...)
			}
			cut := r.Content
			for n := 0; n < 200 && cut != ""; n++ {
				_, size := utf8.DecodeRuneInString(cut)
				cut = cut[size:]
			}
			r.Content = r.Content[:len(r.Content)-len(cut)] + fmt.Sprintf(" [trimmed %d bytes]", len(cut))
			parts[j] = r
		}
		if parts != nil {
			out[i].Parts = parts
		}
	}
	return out
}

// windowOf is a deterministic stand-in for the sliding window: past max
// messages it keeps the first message and the last max/2 (moved back so
// that no tool return is separated from its call), and replaces the middle
// by one user-prompt marker.
func windowOf(max int) func([]processor.Message) []processor.Message {
	return func(h []processor.Message) []processor.Message {
		if len(h) <= max {
			return h
		}
		start := len(h) - max/2
		for start > 1 && answersCall(h[start]) {
			start--
		}
		if start <= 1 {
			return h
		}
		marker := processor.UserMessage(fmt.Sprintf("[summary of %d messages; the last one said: %.80q]", start-1, h[start-1].Text()))
		out := append([]processor.Message{h[0], marker}, h[start:]...)
		return out
	}
}

func answersCall(m processor.Message) bool {
	for _, p := range m.Parts {
		switch p := p.(type) {
		case processor.ToolReturn:
			return true
		case processor.RetryPrompt:
			if p.ToolCallID != "" {
				return true
			}
		}
	}
	return false
}

// TestReplayTranscript replays the longest transcript into a session as an
// agent storing it would: each message appended as it arrives, and before
// each model request the processed history (trimmed, windowed) replaces the
// working history. Afterwards the transcript reads back byte-identical, the
// working history is what the agent would send, and every message is
// either in it or covered by a compaction.
func TestReplayTranscript(t *testing.T) {
	file, h := longestTranscript(t)
	maxMessages := min(40, max(8, len(h)/3))
	window := windowOf(maxMessages)
	t.Logf("replaying %s: %d messages, window of %d", filepath.Base(file), len(h), maxMessages)
	var original bytes.Buffer
	if err := chatjson.Save(&original, h); err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		s := openSession(t, openStore(t, dsn), "replay")
		var agent []processor.Message // what the agent holds and sends
		requests := 0
		for i, m := range h {
			if m.Kind == processor.Response && len(agent) > 0 {
				processed := window(trimOld(agent))
				if err := s.Replace(ctx, processed); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				agent = processed
				requests++
				if requests%25 == 0 {
					if diff := cmp.Diff(agent, working(t, s), eq); diff != "" {
						t.Fatalf("message %d: working history is not what the agent sends (-agent +stored):\n%s", i, diff)
					}
				}
			}
			if err := s.Append(ctx, m); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			agent = append(agent, m)
		}

		// Read back through a new store, as after a restart.
		s = openSession(t, openStore(t, dsn), "replay")
		if diff := cmp.Diff(agent, working(t, s), eq); diff != "" {
			t.Errorf("working history is not what the agent sends (-agent +stored):\n%s", diff)
		}
		tr := transcript(t, s)
		msgs := make([]processor.Message, len(tr))
		for i, e := range tr {
			msgs[i] = e.Message
		}
		if diff := cmp.Diff(h, msgs, eq); diff != "" {
			t.Fatalf("transcript differs (-original +stored):\n%s", diff)
		}
		var stored bytes.Buffer
		if err := chatjson.Save(&stored, msgs); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(original.Bytes(), stored.Bytes()) {
			t.Errorf("the transcript saved as OpenAI JSON is not byte-identical to the original saved the same way")
		}
		for i := range h {
			a, _ := MarshalMessage(h[i])
			b, _ := MarshalMessage(msgs[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("message %d: stored encoding differs:\n%s\n%s", i, a, b)
			}
		}

		inWorking := map[int64]bool{}
		for _, seq := range workingSeqs(t, s.st, s) {
			inWorking[seq] = true
		}
		compacted := 0
		for _, e := range tr {
			if e.Compacted == inWorking[e.Seq] {
				t.Errorf("seq %d: compacted %v, in the working history %v", e.Seq, e.Compacted, inWorking[e.Seq])
			}
			if e.Compacted {
				compacted++
			}
		}
		comps := compactions(t, s)
		if len(comps) == 0 {
			t.Errorf("no compaction recorded over %d requests", requests)
		}
		t.Logf("%d requests, %d compactions, %d of %d transcript messages compacted, %d in the working history",
			requests, len(comps), compacted, len(tr), len(agent))
	})
}
