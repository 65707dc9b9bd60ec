package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/summarizer"
)

// Summarizers is a summarizer.Summarizer that gives each summary to the
// summarizer of the wire API of the client request the proxy is serving,
// so that a conversation is summarized through its client's own API (and,
// with [ForwardAuthorization], paid with its client's credential for that
// API's upstream). ByAPI holds them by the API's name: "chat", "responses",
// "messages". A summary for an API without one, or made outside a request
// the proxy serves, goes to Default; a nil Default for it is an error.
//
// An API whose summaries cannot be paid for is given the offline digest
// (summarizer.NewDigest), counted by [Metrics.Digest].
type Summarizers struct {
	// ByAPI are the summarizers by the name of the API they serve.
	ByAPI map[string]summarizer.Summarizer
	// Default serves the others.
	Default summarizer.Summarizer
}

var _ summarizer.Summarizer = Summarizers{}

// Summarize summarizes with the summarizer of the API of the request ctx
// comes from.
func (s Summarizers) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	if sum := s.ByAPI[apiOf(ctx)]; sum != nil {
		return sum.Summarize(ctx, messages, previous, focus)
	}
	if s.Default == nil {
		return "", errNoSummarizer
	}
	return s.Default.Summarize(ctx, messages, previous, focus)
}

// errNoSummarizer answers a summary Summarizers has no summarizer for.
var errNoSummarizer = errors.New("proxy: no summarizer for this request's API, and no default")

// SummaryRoute is how one API's summaries are written when each client
// pays for its own: see [ClientPaidSummarizers].
type SummaryRoute struct {
	// API is the wire API's name: "chat", "responses" or "messages".
	API string
	// Upstream is where the proxy forwards the API's requests.
	Upstream *url.URL
	// Endpoint is the base URL the API's summaries are sent to.
	Endpoint string
	// New returns the summarizer that writes the API's summaries with
	// client, whose transport adds the credential of the client request
	// being served.
	New func(client *http.Client) summarizer.Summarizer
}

// ClientPaidSummarizers returns the Summarizers of a proxy with no API
// key of its own: each route's summaries are paid with the credential of
// the client whose conversation is summarized, through an HTTP client on
// [ForwardAuthorization] for the route's upstream. A client's credential
// goes nowhere but the upstream its own request went to: a route whose
// Endpoint is not on its Upstream (another scheme, host or port), or is
// no URL, gets unpaid and is listed in unpaidAPIs. An API without a route
// gets unpaid too (Default).
func ClientPaidSummarizers(routes []SummaryRoute, unpaid summarizer.Summarizer) (s Summarizers, unpaidAPIs []string) {
	s = Summarizers{ByAPI: map[string]summarizer.Summarizer{}, Default: unpaid}
	for _, r := range routes {
		endpoint, err := url.Parse(r.Endpoint)
		if err != nil || r.Upstream == nil || !sameOrigin(endpoint, r.Upstream) {
			s.ByAPI[r.API] = unpaid
			unpaidAPIs = append(unpaidAPIs, r.API)
			continue
		}
		s.ByAPI[r.API] = r.New(&http.Client{Transport: ForwardAuthorization(r.Upstream, nil)})
	}
	return s, unpaidAPIs
}
