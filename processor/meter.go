package processor

import (
	"context"
	"sync"
)

// UsageMeter adds up the usage of the model calls made under a context
// (see [WithUsageMeter]): a processor that calls a model (the window's
// summarizer) learns what the calls it made cost, whatever wraps the
// model. It is safe for concurrent use.
type UsageMeter struct {
	mu    sync.Mutex
	usage Usage
	calls int
}

// Usage returns the sum of the usage added so far, and the number of
// calls that added it.
func (m *UsageMeter) Usage() (Usage, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage, m.calls
}

type meterKey struct{}

// WithUsageMeter returns a copy of ctx carrying a new meter, and the
// meter: [AddUsage] under the returned context (or one derived from it)
// adds to it.
func WithUsageMeter(ctx context.Context) (context.Context, *UsageMeter) {
	m := &UsageMeter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

// AddUsage adds the usage of one model call to the meter ctx carries, if
// any (its tokens; PromptMessages, which does not add up, is left out). A
// model adapter or a summarizer calls it after each call.
func AddUsage(ctx context.Context, u Usage) {
	m, _ := ctx.Value(meterKey{}).(*UsageMeter)
	if m == nil {
		return
	}
	u.PromptMessages = 0
	m.mu.Lock()
	m.usage = m.usage.Add(u)
	m.calls++
	m.mu.Unlock()
}
