package model

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/abridge-go/abridge/processor"
)

// Call is one request a [Recorder] received.
type Call struct {
	// Messages is a copy of the history the request sent.
	Messages []processor.Message
	// Settings are the request's settings.
	Settings Settings
}

// Reply computes a [Recorder]'s answer to one call. Its index counts the
// calls made so far (0 for the first).
type Reply func(ctx context.Context, index int, call Call) (processor.Message, error)

// Recorder is a scripted [Model] for tests. It answers each request with
// the next entry of its script (the last entry repeats once the script is
// used up) and records exactly what every request sent. It is safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	script []Reply
	calls  []Call
	// Name is reported as the responses' ModelName; default "recorder".
	Name string
}

var _ Model = (*Recorder)(nil)

// NewRecorder returns a Recorder that answers with the given replies in
// order.
func NewRecorder(script ...Reply) *Recorder {
	return &Recorder{script: slices.Clone(script)}
}

// Respond returns a Reply that always answers with a copy of m.
func Respond(m processor.Message) Reply {
	return func(context.Context, int, Call) (processor.Message, error) { return m, nil }
}

// RespondText returns a Reply answering with one text part.
func RespondText(text string) Reply {
	return Respond(processor.TextMessage(text))
}

// Fail returns a Reply that fails with err.
func Fail(err error) Reply {
	return func(context.Context, int, Call) (processor.Message, error) { return processor.Message{}, err }
}

// Request records the call and answers with the next scripted reply. It
// fills Usage.PromptMessages and, when the reply left them zero, estimates
// Usage.InputTokens and sets ModelName. The reply's ctx ends after
// Settings.Timeout when that is positive.
func (r *Recorder) Request(ctx context.Context, messages []processor.Message, settings Settings) (processor.Message, error) {
	if err := ctx.Err(); err != nil {
		return processor.Message{}, err
	}
	if settings.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, settings.Timeout)
		defer cancel()
	}
	call := Call{Messages: slices.Clone(messages), Settings: settings}
	r.mu.Lock()
	index := len(r.calls)
	r.calls = append(r.calls, call)
	var reply Reply
	if len(r.script) > 0 {
		reply = r.script[min(index, len(r.script)-1)]
	}
	name := r.Name
	r.mu.Unlock()
	if reply == nil {
		return processor.Message{}, fmt.Errorf("recorder: no reply scripted for call %d", index)
	}
	m, err := reply(ctx, index, call)
	if err != nil {
		return processor.Message{}, err
	}
	m.Kind = processor.Response
	m.Parts = slices.Clone(m.Parts)
	meta := m.Info()
	if meta.Usage.InputTokens == 0 {
		meta.Usage.InputTokens = int64(processor.EstimateTokens(messages))
	}
	meta.Usage.PromptMessages = len(messages)
	if meta.ModelName == "" {
		meta.ModelName = name
		if name == "" {
			meta.ModelName = "recorder"
		}
	}
	m = m.WithMeta(meta)
	if settings.OnText != nil {
		if t := m.Text(); t != "" {
			settings.OnText(t)
		}
	}
	return m, nil
}

// Calls returns a copy of the calls recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
