package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// alonePasses is how many times each request is replayed alone; the least
// time of the passes is the one reported, the others having been slowed by
// what else the machine ran.
const alonePasses = 3

// aloneResult is, for each request replayed alone and not summarized in
// any pass, the least time abridge's processing took over it and the least
// time encoding/json took to decode it into a generic value.
type aloneResult struct {
	processing, decode []time.Duration
}

// replayAlone sends every request of convs, one at a time, passes times
// over, through the openai-go middleware on chain (its window as the
// load run left it, after a first pass, not counted), to a next that
// answers at once, and times encoding/json decoding the same body right
// after. Under load
// on a few cores the percentiles of both are mostly the scheduler's; alone
// they compare like with like. A request that writes a summary in a pass
// (it waits for the summarizer's model) counts in none.
func replayAlone(chain processor.Processor, api string, convs [][]json.RawMessage, bodies []*openaitest.Bodies, passes int) (aloneResult, error) {
	r := newReplayer(chain, api, convs, bodies)
	if err := r.pass(); err != nil {
		return aloneResult{}, err
	}
	r.least = nil
	for range passes {
		if err := r.pass(); err != nil {
			return aloneResult{}, err
		}
	}
	return r.result(), nil
}

// replayer replays requests alone (see replayAlone), keeping the least
// times of each over its passes.
type replayer struct {
	mw     middleware.Middleware
	took   time.Duration // the processing of the request in hand, -1 before
	url    string
	convs  [][]json.RawMessage
	bodies []*openaitest.Bodies
	least  []least // by request, in the order of the passes
}

type least struct {
	processing, decode time.Duration
	summarized         bool
}

func newReplayer(chain processor.Processor, api string, convs [][]json.RawMessage, bodies []*openaitest.Bodies) *replayer {
	r := &replayer{url: "http://upstream.invalid/v1" + openaitest.APIPath(api), convs: convs, bodies: bodies}
	r.mw = middleware.New(chain, middleware.Options{OnEvent: func(_ context.Context, e middleware.Event) {
		if e.Type == middleware.EventProcessed {
			r.took = e.Duration
		}
	}})
	return r
}

// pass replays every request once, in order.
func (r *replayer) pass() error {
	next := func(req *http.Request) (*http.Response, error) {
		// The body read and closed, as a transport sends it.
		if req.Body != nil {
			_, _ = io.Copy(io.Discard, req.Body)
			_ = req.Body.Close()
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}, nil
	}
	first := r.least == nil
	k := 0
	for c, msgs := range r.convs {
		for i, n := range openaitest.RequestLengths(msgs) {
			body := r.bodies[c].Body(n, i%2 == 1)
			info := &reqInfo{id: fmt.Sprintf("alone/%d/%d", c, i)}
			ctx := context.WithValue(context.Background(), reqKey{}, info)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			// Read as a server reads what it received, not as a body an
			// app built.
			req.GetBody = nil
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(middleware.ConversationHeader, strconv.Itoa(c))
			r.took = -1
			resp, err := r.mw(req, next)
			if err != nil {
				return fmt.Errorf("alone, conversation %d, request %d: %w", c, i, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if r.took < 0 {
				return fmt.Errorf("alone, conversation %d, request %d: not processed (status %d)", c, i, resp.StatusCode)
			}
			t0 := time.Now()
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				return err
			}
			dec := time.Since(t0)
			if first {
				r.least = append(r.least, least{processing: r.took, decode: dec})
			}
			l := &r.least[k]
			l.processing, l.decode = min(l.processing, r.took), min(l.decode, dec)
			l.summarized = l.summarized || info.summarized.Load()
			k++
		}
	}
	return nil
}

// result returns the least times of the requests no pass summarized.
func (r *replayer) result() aloneResult {
	var out aloneResult
	for _, l := range r.least {
		if !l.summarized {
			out.processing = append(out.processing, l.processing)
			out.decode = append(out.decode, l.decode)
		}
	}
	return out
}

// report writes the alone figures: p50 and p99 of each, and processing as
// a share of decoding at each and over all the requests together.
func (r aloneResult) report(w io.Writer) {
	if len(r.processing) == 0 {
		return
	}
	var proc, dec time.Duration
	for i := range r.processing {
		proc += r.processing[i]
		dec += r.decode[i]
	}
	fmt.Fprintf(w, "each request again, alone (least of %d passes; %d requests that wrote no summary):\n", alonePasses, len(r.processing))
	fmt.Fprintf(w, "%-44s %9s %9s\n", "  abridge's processing", ms(percentile(r.processing, 50)), ms(percentile(r.processing, 99)))
	fmt.Fprintf(w, "%-44s %9s %9s\n", "  encoding/json decode into any", ms(percentile(r.decode, 50)), ms(percentile(r.decode, 99)))
	fmt.Fprintf(w, "alone, processing ÷ decode: p50 %.3f, p99 %.3f, all requests %.3f (budget ≤ 1)\n",
		ratio(percentile(r.processing, 50), percentile(r.decode, 50)),
		ratio(percentile(r.processing, 99), percentile(r.decode, 99)), ratio(proc, dec))
}
