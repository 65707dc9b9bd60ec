package proxy

import (
	"context"
	"errors"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// Summarizers is a window.Summarizer that gives each summary to the
// summarizer of the wire API of the client request the proxy is serving,
// so that a conversation is summarized through its client's own API (and,
// with [ForwardAuthorization], paid with its client's credential for that
// API's upstream). ByAPI holds them by the API's name: "chat", "responses",
// "messages". A summary for an API without one, or made outside a request
// the proxy serves, goes to Default; a nil Default for it is an error.
//
// An API whose summaries cannot be paid for is given the offline digest
// (summary.NewDigest), counted by [Metrics.Digest].
type Summarizers struct {
	// ByAPI are the summarizers by the name of the API they serve.
	ByAPI map[string]window.Summarizer
	// Default serves the others.
	Default window.Summarizer
}

var _ window.Summarizer = Summarizers{}

// Summarize summarizes with the summarizer of the API of the request ctx
// comes from.
func (s Summarizers) Summarize(ctx context.Context, messages []processor.Message, previous string) (string, error) {
	if sum := s.ByAPI[apiOf(ctx)]; sum != nil {
		return sum.Summarize(ctx, messages, previous)
	}
	if s.Default == nil {
		return "", errNoSummarizer
	}
	return s.Default.Summarize(ctx, messages, previous)
}

// errNoSummarizer answers a summary Summarizers has no summarizer for.
var errNoSummarizer = errors.New("proxy: no summarizer for this request's API, and no default")
