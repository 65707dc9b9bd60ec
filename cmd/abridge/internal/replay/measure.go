package replay

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summary"
)

// meter wraps a summarizer to count its calls and input, time it, and
// remember which messages it was given.
type meter struct {
	s summarizer.Summarizer

	mu    sync.Mutex
	calls int
	input int64
	dur   time.Duration
	cpu   time.Duration
	seen  map[uint64]struct{}
	seed  maphash.Seed

	// rec, when set, is the recording model behind the summarizer: each
	// message given to the summarizer must show up, as its numbered
	// block, in what the summarizer then sent to it; unsent counts those
	// that did not.
	rec    *model.Recorder
	unsent int

	// before, when set, is called before each call.
	before func()
}

var _ summarizer.Summarizer = (*meter)(nil)

// Summarize calls the wrapped summarizer. Its whole time, bookkeeping
// included, is counted as the summarizer's, in wall time and in CPU time of
// the calling thread (the window calls it synchronously).
func (m *meter) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	if m.before != nil {
		m.before()
	}
	start := time.Now()
	cpu0, _ := threadCPU()
	before := 0
	if m.rec != nil {
		before = len(m.rec.Calls())
	}
	out, err := m.s.Summarize(ctx, messages, previous, focus)
	m.mu.Lock()
	if m.rec != nil && err == nil {
		m.unsent += unsent(messages, m.rec.Calls()[before:])
	}
	m.calls++
	m.input += int64(len(previous))
	for _, msg := range messages {
		m.input += int64(processor.Chars(msg))
		m.seen[fingerprint(m.seed, msg)] = struct{}{}
	}
	cpu1, _ := threadCPU()
	m.cpu += cpu1 - cpu0
	m.dur += time.Since(start)
	m.mu.Unlock()
	return out, err
}

// unsent counts the messages, numbered from 1, whose block header "[n] "
// starts no line of the text the calls sent: messages the summarizer
// skipped rather than sent (clipped is fine). Messages with nothing to
// render (thinking only) are not counted.
func unsent(messages []processor.Message, calls []model.Call) int {
	var b strings.Builder
	for _, c := range calls {
		for _, m := range c.Messages {
			b.WriteString("\n")
			b.WriteString(m.Text())
		}
	}
	text := b.String()
	n := 0
	for i, m := range messages {
		if processor.Chars(m) == 0 {
			continue
		}
		if !strings.Contains(text, "\n["+strconv.Itoa(i+1)+"] ") {
			n++
		}
	}
	return n
}

// countingModel wraps a model to count the characters of what it is sent.
type countingModel struct {
	m model.Model

	mu    sync.Mutex
	chars int64
}

var _ model.Model = (*countingModel)(nil)

// Request counts the messages' characters and forwards the request.
func (c *countingModel) Request(ctx context.Context, messages []processor.Message, settings model.Settings) (processor.Message, error) {
	n := int64(0)
	for _, m := range messages {
		n += int64(processor.Chars(m))
	}
	c.mu.Lock()
	c.chars += n
	c.mu.Unlock()
	return c.m.Request(ctx, messages, settings)
}

// recordedSummaryMax caps the recording model's summaries.
const recordedSummaryMax = 1200

// recordedSummary is the recording model's reply: a short deterministic
// summary built from the request, naming the file paths it mentions (as
// far as the cap allows), so later compactions have paths to keep.
func recordedSummary(_ context.Context, _ int, call model.Call) (processor.Message, error) {
	chars := 0
	for _, m := range call.Messages {
		chars += processor.Chars(m)
	}
	var b strings.Builder
	b.WriteString("Recorded summary of ")
	b.WriteString(strconv.Itoa(len(call.Messages)))
	b.WriteString(" messages, ")
	b.WriteString(strconv.Itoa(chars))
	b.WriteString(" characters.")
	written, mentioned := summary.Paths(call.Messages)
	sep := " Files: "
	for _, p := range append(written, mentioned...) {
		if b.Len()+len(sep)+len(p) > recordedSummaryMax {
			break
		}
		b.WriteString(sep)
		b.WriteString(p)
		sep = ", "
	}
	return processor.TextMessage(b.String()), nil
}

// fingerprint hashes everything a message sends, so the same message seen
// twice (even as two copies) hashes the same under one seed.
func fingerprint(seed maphash.Seed, m processor.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var n [8]byte
	num := func(v int) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	processor.WalkContent(m, num, func(s string) {
		num(len(s))
		h.WriteString(s)
	})
	return h.Sum64()
}
