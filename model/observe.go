package model

import (
	"context"
	"time"

	"github.com/abridge-go/abridge/processor"
)

// Observation is what [Observe] reports of one model request.
type Observation struct {
	// Messages is the number of messages the request sent.
	Messages int
	// Usage is the usage the provider reported (zero when the request
	// failed).
	Usage processor.Usage
	// Duration is the time the request took.
	Duration time.Duration
	// Err is the request's error, nil when it succeeded.
	Err error
}

// Observe returns a Model that sends each request to m and then reports
// it to fn: how many messages it sent, the usage the provider reported,
// how long it took and its error. Wrap a summarizer's model with it to
// see what the summaries cost (llm.New(model.Observe(m, fn), …)).
// fn is called synchronously, with the request's context, and must be
// safe for concurrent use; a nil fn makes Observe return m.
func Observe(m Model, fn func(ctx context.Context, o Observation)) Model {
	if fn == nil {
		return m
	}
	return &observed{m: m, fn: fn}
}

type observed struct {
	m  Model
	fn func(ctx context.Context, o Observation)
}

func (o *observed) Request(ctx context.Context, messages []processor.Message, s Settings) (processor.Message, error) {
	start := time.Now()
	resp, err := o.m.Request(ctx, messages, s)
	ob := Observation{Messages: len(messages), Duration: time.Since(start), Err: err}
	if err == nil {
		ob.Usage = resp.Usage()
	}
	o.fn(ctx, ob)
	return resp, err
}
