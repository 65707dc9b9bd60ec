package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summarizer"
)

// Metrics counts what a proxy, its window and its summarizer do, as
// Prometheus metrics (see [NewMetrics] for the list). A nil *Metrics
// counts nothing. It is safe for concurrent use.
type Metrics struct {
	requests          *prometheus.CounterVec
	requestSeconds    *prometheus.HistogramVec
	processingSeconds prometheus.Histogram
	promptTokens      *prometheus.HistogramVec
	apiTokens         *prometheus.CounterVec
	providerTokens    *prometheus.CounterVec
	stored            *prometheus.CounterVec
	rejected          *prometheus.CounterVec
	chainFailures     prometheus.Counter
	overflows         *prometheus.CounterVec
	upstreamErrors    *prometheus.CounterVec
	compactions       *prometheus.CounterVec
	compactionTokens  *prometheus.HistogramVec
	summarizerCalls   *prometheus.CounterVec
	summarizerSeconds prometheus.Histogram
	summarizerTokens  *prometheus.CounterVec
	storeErrors       *prometheus.CounterVec
	ahead             *prometheus.CounterVec
	aheadWasted       prometheus.Counter
	deferred          prometheus.Counter
	summaryWait       prometheus.Histogram

	estimates *estimateMetrics // the provider's usage against abridge's estimates
	// Summaries by API (see summaries.go).
	digestCompactions *prometheus.CounterVec
}

// NewMetrics registers the proxy's metrics with reg and returns them:
//
//   - abridge_requests_total{route, code}: requests served, by route
//     (the wire API: "chat", "responses", "messages", or "other") and
//     the HTTP status the client was sent, the status of the request's
//     log line: a stream cut after its 200 was sent counts as a 200 (and
//     in abridge_upstream_errors_total), a whole answer cut short as the
//     502 or 504 the client was answered;
//   - abridge_request_duration_seconds{route}: time to serve a request,
//     the upstream's answer included;
//   - abridge_processing_duration_seconds: abridge's own time on a chat
//     completions request before it is sent upstream (reading the body,
//     the processors, summaries included, and writing it back);
//   - abridge_prompt_tokens{stage}: estimated prompt tokens of each chat
//     completions request as received ("received") and as last sent
//     upstream ("forwarded": the compacted retry after a context
//     overflow);
//   - abridge_rejected_requests_total{error}: requests the proxy answered
//     itself and sent nowhere, by the error code answered (400
//     invalid_json, missing_messages, invalid_message, invalid_history,
//     invalid_path; 404 unknown_path; 408 request_timeout; 413
//     request_too_large; 415 unsupported_encoding; 500
//     processing_failed, a chain holding a required processor failed; 503
//     server_busy);
//   - abridge_chain_failures_total: requests sent unprocessed because the
//     processors failed;
//   - abridge_context_overflows_total{retried}: context overflows the
//     upstream reported, and whether the compacted request was retried;
//   - abridge_upstream_errors_total{reason}: "connection" (no answer),
//     "timeout" (no complete answer in time, a stream cut off included),
//     "reset" (the answer broke off: the connection reset, or fewer bytes
//     than announced), "status_5xx". Each answer that broke off counts
//     once: its log line says error upstream_reset or upstream_timeout
//     when the client was answered 502 or 504 for it, answer_cut_off with
//     the same code when its status had been sent on;
//   - abridge_compactions_total{result}: compactions by the window:
//     "summarized", "fallback" (the digest stood in), "shared" (a
//     concurrent request's summary reused), "skipped" (no smaller summary),
//     "canceled";
//   - abridge_compaction_tokens{stage}: estimated tokens of compacted
//     histories "before" and "after" each compaction;
//   - abridge_summarizer_calls_total{result}: summarizer calls, "ok",
//     "error" or "timeout";
//   - abridge_summarizer_duration_seconds: time of each summarizer call;
//   - abridge_summarizer_tokens_total{api, type}: tokens the summarizer's
//     model reported, by the wire API of the request whose conversation
//     was summarized ("chat", "responses", "messages", "other"):
//     "input", "cached_input", "cache_creation_input", "output";
//   - abridge_digest_compactions_total{api}: summaries written by the
//     offline digest instead of a model, by wire API (see
//     [Metrics.Digest]: no model call could be paid for them, or the
//     summarizer is the digest);
//   - abridge_summary_store_errors_total{op}: summary store failures, by
//     method ("spans", "save", "summary", "claim");
//   - abridge_ahead_summaries_total{event}: summaries written ahead of
//     their compaction, in the background: "started", "written",
//     "failed" (the summarizer could not write it: the compaction uses
//     the digest), "used" (a compaction applied it), "wasted" (abandoned
//     unused: its conversation was compacted otherwise, went silent, or
//     the proxy stopped);
//   - abridge_ahead_wasted_input_chars_total: summarizer input, in
//     characters, of the summaries written ahead and never used;
//   - abridge_deferred_compactions_total: requests sent uncompacted
//     because their compaction's summary was not ready (under the hard
//     limits, see ABRIDGE_HARD_MESSAGES and ABRIDGE_HARD_TOKENS);
//   - abridge_summary_wait_seconds: how long requests that waited for a
//     summary waited (those past the hard limits, or whose summary was
//     not written ahead); a request whose summary was ready is not
//     counted;
//   - abridge_tokens_total{api, stage}: estimated prompt tokens of
//     processed requests, by wire API, as the client sent them ("sent")
//     and as forwarded ("forwarded");
//   - abridge_stored_history_requests_total{api}: requests whose history
//     the provider holds (previous_response_id), sent on unprocessed;
//   - abridge_provider_tokens_total{api, type}: tokens the upstream
//     reported for the requests it answered, by wire API: "input" (the
//     whole prompt, cache reads and writes included), "cached_input" (read
//     from the provider's prompt cache), "cache_creation_input" (written
//     to it: Anthropic's cache_creation_input_tokens, 0 for the OpenAI
//     APIs), "output";
//   - abridge_token_estimate_ratio{api, basis}: for each request whose
//     usage the upstream reported, its input tokens divided by abridge's
//     estimate of the request as forwarded; basis "anchored" when the
//     estimate started from the usage reported for the conversation's
//     previous request (see middleware.Options.Anchors), "heuristic" when
//     it is from characters alone.
//
// The counters of errors and outcomes exist at zero from the start, every
// label value listed here, so that rates and alerts work before the first
// one. It fails when reg already holds a metric of the same name.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	tokenBuckets := prometheus.ExponentialBuckets(256, 2, 12) // 256 … 524,288
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_requests_total", Help: "Requests served, by route and HTTP status.",
		}, []string{"route", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abridge_request_duration_seconds", Help: "Time to serve a request, the upstream's answer included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, []string{"route"}),
		processingSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "abridge_processing_duration_seconds", Help: "abridge's own time on a request (Chat Completions, Responses or Messages) before it is sent upstream, summaries included.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 20),
		}),
		promptTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abridge_prompt_tokens", Help: "Estimated prompt tokens of the requests abridge processed (every API) as received and as forwarded.",
			Buckets: tokenBuckets,
		}, []string{"stage"}),
		apiTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_tokens_total", Help: "Estimated prompt tokens of processed requests, by wire API, as the client sent them and as forwarded.",
		}, []string{"api", "stage"}),
		providerTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_provider_tokens_total", Help: "Tokens the upstream reported for the requests it answered, by wire API: input, cached_input, cache_creation_input, output.",
		}, []string{"api", "type"}),
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_stored_history_requests_total", Help: "Requests whose history the provider holds (previous_response_id), sent on unprocessed, by wire API.",
		}, []string{"api"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_rejected_requests_total", Help: "Requests the proxy answered itself and sent nowhere, by error code.",
		}, []string{"error"}),
		chainFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "abridge_chain_failures_total", Help: "Requests sent unprocessed because the processors failed.",
		}),
		overflows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_context_overflows_total", Help: "Context overflows reported by the upstream, by whether the compacted request was retried.",
		}, []string{"retried"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_upstream_errors_total", Help: "Upstream failures: connection, timeout, reset, status_5xx.",
		}, []string{"reason"}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_compactions_total", Help: "Window compactions, by result: summarized, fallback, shared, skipped, canceled.",
		}, []string{"result"}),
		compactionTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abridge_compaction_tokens", Help: "Estimated tokens of compacted histories before and after each compaction.",
			Buckets: tokenBuckets,
		}, []string{"stage"}),
		summarizerCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_summarizer_calls_total", Help: "Summarizer calls, by result: ok, error, timeout.",
		}, []string{"result"}),
		summarizerSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "abridge_summarizer_duration_seconds", Help: "Time of each summarizer call.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		summarizerTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_summarizer_tokens_total", Help: "Tokens reported by the summarizer's model, by the wire API of the conversation summarized: input, cached_input, cache_creation_input, output.",
		}, []string{"api", "type"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_summary_store_errors_total", Help: "Summary store failures, by method.",
		}, []string{"op"}),
		ahead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "abridge_ahead_summaries_total", Help: "Summaries written ahead of their compaction: started, written, failed, used, wasted.",
		}, []string{"event"}),
		aheadWasted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "abridge_ahead_wasted_input_chars_total", Help: "Summarizer input, in characters, of the summaries written ahead and never used.",
		}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "abridge_deferred_compactions_total", Help: "Requests sent uncompacted because their compaction's summary was not ready.",
		}),
		summaryWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "abridge_summary_wait_seconds", Help: "How long requests that waited for a summary waited.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
	}
	m.estimates = newEstimateMetrics()
	if err := m.estimates.register(reg); err != nil {
		return nil, err
	}
	for _, c := range []prometheus.Collector{m.requests, m.requestSeconds, m.processingSeconds, m.promptTokens,
		m.apiTokens, m.providerTokens, m.stored, m.rejected, m.chainFailures, m.overflows, m.upstreamErrors, m.compactions, m.compactionTokens,
		m.summarizerCalls, m.summarizerSeconds, m.summarizerTokens, m.storeErrors, m.ahead, m.aheadWasted, m.deferred, m.summaryWait} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register proxy metrics: %w", err)
		}
	}
	if err := m.registerSummaries(reg); err != nil {
		return nil, err
	}
	for vec, values := range map[*prometheus.CounterVec][]string{
		m.rejected:        refusals,
		m.upstreamErrors:  {"connection", "timeout", "reset", "status_5xx"},
		m.overflows:       {"true", "false"},
		m.compactions:     {"summarized", "fallback", "shared", "skipped", "canceled"},
		m.summarizerCalls: {"ok", "error", "timeout"},
		m.storeErrors:     {"spans", "save", "summary", "claim"},
		m.ahead:           {"started", "written", "failed", "used", "wasted"},
	} {
		for _, v := range values {
			vec.WithLabelValues(v)
		}
	}
	return m, nil
}

func (m *Metrics) rejectedRequest(code string) {
	if m == nil {
		return
	}
	m.rejected.WithLabelValues(code).Inc()
}

func (m *Metrics) request(route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.requestSeconds.WithLabelValues(route).Observe(d.Seconds())
}

func (m *Metrics) upstreamError(reason string) {
	if m == nil {
		return
	}
	m.upstreamErrors.WithLabelValues(reason).Inc()
}

func (m *Metrics) middlewareEvent(e middleware.Event) {
	if m == nil {
		return
	}
	switch e.Type {
	case middleware.EventProcessed:
		m.processingSeconds.Observe(e.Duration.Seconds())
		m.promptTokens.WithLabelValues("received").Observe(float64(e.TokensBefore))
		m.apiTokens.WithLabelValues(e.API, "sent").Add(float64(e.TokensBefore))
	case middleware.EventStored:
		m.stored.WithLabelValues(e.API).Inc()
	case middleware.EventUsage:
		m.providerTokens.WithLabelValues(e.API, "input").Add(float64(e.Usage.InputTokens))
		m.providerTokens.WithLabelValues(e.API, "cached_input").Add(float64(e.Usage.CachedInputTokens))
		m.providerTokens.WithLabelValues(e.API, "output").Add(float64(e.Usage.OutputTokens))
		m.providerTokens.WithLabelValues(e.API, "cache_creation_input").Add(float64(e.Usage.CacheWriteInputTokens))
		m.estimates.usage(e)
	case middleware.EventRejected:
		m.rejectedRequest(e.Code)
	case middleware.EventChainFailed:
		m.chainFailures.Inc()
	case middleware.EventOverflow:
		m.overflows.WithLabelValues(strconv.FormatBool(e.Retried)).Inc()
	}
}

// forwarded records the estimated prompt tokens of the request last sent
// upstream for a client's request (the compacted retry's after a context
// overflow), of the wire API api.
func (m *Metrics) forwarded(api string, tokens int) {
	if m == nil {
		return
	}
	m.promptTokens.WithLabelValues("forwarded").Observe(float64(tokens))
	m.apiTokens.WithLabelValues(api, "forwarded").Add(float64(tokens))
}

// WindowEvent counts a window's event: give it to the window as its
// Options.OnEvent (through windowlog.Events to log it too).
func (m *Metrics) WindowEvent(_ context.Context, e window.Event) {
	if m == nil {
		return
	}
	switch e.Type {
	case window.EventFinished:
		result := "summarized"
		switch {
		case e.Shared:
			result = "shared"
		case e.Fallback:
			result = "fallback"
		}
		m.compactions.WithLabelValues(result).Inc()
		m.compactionTokens.WithLabelValues("before").Observe(float64(e.TokensBefore))
		m.compactionTokens.WithLabelValues("after").Observe(float64(e.TokensAfter))
		if e.Prepared {
			m.ahead.WithLabelValues("used").Inc()
		}
		if e.Waited > 0 {
			m.summaryWait.Observe(e.Waited.Seconds())
		}
	case window.EventDeferred:
		m.deferred.Inc()
	case window.EventAheadStarted:
		m.ahead.WithLabelValues("started").Inc()
	case window.EventAheadFinished:
		if e.Err != nil {
			m.ahead.WithLabelValues("failed").Inc()
		} else {
			m.ahead.WithLabelValues("written").Inc()
		}
	case window.EventAheadWasted:
		m.ahead.WithLabelValues("wasted").Inc()
		m.aheadWasted.Add(float64(e.SummaryInput))
	case window.EventFailed:
		switch {
		case e.Reason == "canceled":
			m.compactions.WithLabelValues("canceled").Inc()
		case errors.Is(e.Err, window.ErrNoSmallerSummary):
			m.compactions.WithLabelValues("skipped").Inc()
		}
	case window.EventStoreFailed:
		m.storeErrors.WithLabelValues(e.Reason).Inc()
	}
}

// Summarizer returns s counting its calls and their durations. A nil
// Metrics returns s itself.
func (m *Metrics) Summarizer(s summarizer.Summarizer) summarizer.Summarizer {
	if m == nil {
		return s
	}
	return &countingSummarizer{s: s, m: m}
}

// SummarizerRequest counts the tokens of one request of the summarizer's
// model: give it to model.Observe around the summarizer's model.
func (m *Metrics) SummarizerRequest(ctx context.Context, o model.Observation) {
	if m == nil || o.Err != nil {
		return
	}
	api := summaryAPI(ctx)
	m.summarizerTokens.WithLabelValues(api, "input").Add(float64(o.Usage.InputTokens))
	m.summarizerTokens.WithLabelValues(api, "cached_input").Add(float64(o.Usage.CachedInputTokens))
	m.summarizerTokens.WithLabelValues(api, "cache_creation_input").Add(float64(o.Usage.CacheWriteInputTokens))
	m.summarizerTokens.WithLabelValues(api, "output").Add(float64(o.Usage.OutputTokens))
}

type countingSummarizer struct {
	s summarizer.Summarizer
	m *Metrics
}

func (c *countingSummarizer) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	start := time.Now()
	out, err := c.s.Summarize(ctx, messages, previous, focus)
	c.m.summarizerSeconds.Observe(time.Since(start).Seconds())
	result := "ok"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		result = "timeout"
	case err != nil:
		result = "error"
	}
	c.m.summarizerCalls.WithLabelValues(result).Inc()
	return out, err
}

// --- The provider's usage against abridge's estimates (issue 17, item 5).

// estimateMetrics measures how far abridge's token estimates are from what
// the provider reported.
type estimateMetrics struct {
	ratio *prometheus.HistogramVec
}

// estimateBases are the values of the basis label.
var estimateBases = []string{"anchored", "heuristic"}

func newEstimateMetrics() *estimateMetrics {
	return &estimateMetrics{
		ratio: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "abridge_token_estimate_ratio",
			Help: "Input tokens the upstream reported for a request divided by abridge's estimate of it as forwarded, by wire API and basis of the estimate: anchored on the previous request's usage, or heuristic.",
			// 1 is exact; the heuristic's 4 characters a token is off by
			// a factor of 2 or more for code, other languages and tools.
			Buckets: []float64{0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 2, 3, 4},
		}, []string{"api", "basis"}),
	}
}

func (e *estimateMetrics) register(reg prometheus.Registerer) error {
	if err := reg.Register(e.ratio); err != nil {
		return fmt.Errorf("register proxy metrics: %w", err)
	}
	return nil
}

// usage observes the ratio of an EventUsage: the provider's input tokens
// to the estimate the request was sent with.
func (e *estimateMetrics) usage(ev middleware.Event) {
	if ev.Estimate <= 0 || ev.Usage.InputTokens <= 0 {
		return
	}
	basis := estimateBases[1]
	if ev.Anchored {
		basis = estimateBases[0]
	}
	e.ratio.WithLabelValues(ev.API, basis).Observe(float64(ev.Usage.InputTokens) / float64(ev.Estimate))
}

// Summaries by wire API: the digest's compactions, and the summarizer's
// tokens, by the API of the conversation summarized.

// summaryAPIs are the values of the api label of the summaries' metrics.
var summaryAPIs = []string{"chat", "responses", "messages", "other"}

// registerSummaries registers the metrics of summaries by API, each label
// value at zero.
func (m *Metrics) registerSummaries(reg prometheus.Registerer) error {
	m.digestCompactions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "abridge_digest_compactions_total", Help: "Summaries written by the offline digest instead of a model, by the wire API of the conversation summarized.",
	}, []string{"api"})
	if err := reg.Register(m.digestCompactions); err != nil {
		return fmt.Errorf("register proxy metrics: %w", err)
	}
	for _, api := range summaryAPIs {
		m.digestCompactions.WithLabelValues(api)
		for _, typ := range []string{"input", "cached_input", "cache_creation_input", "output"} {
			m.summarizerTokens.WithLabelValues(api, typ)
		}
	}
	return nil
}

// summaryAPI is the api label of a summary made for the request ctx comes
// from.
func summaryAPI(ctx context.Context) string {
	if api := apiOf(ctx); api != "" {
		return api
	}
	return "other"
}

// Digest returns s, the offline digest standing in for a summarizer's
// model, counting each summary it writes in
// abridge_digest_compactions_total by the wire API of the request it is
// written for. A nil Metrics returns s itself.
func (m *Metrics) Digest(s summarizer.Summarizer) summarizer.Summarizer {
	if m == nil {
		return s
	}
	return &digestSummarizer{s: s, m: m}
}

type digestSummarizer struct {
	s summarizer.Summarizer
	m *Metrics
}

func (d *digestSummarizer) Summarize(ctx context.Context, messages []processor.Message, previous, focus string) (string, error) {
	out, err := d.s.Summarize(ctx, messages, previous, focus)
	if err == nil {
		d.m.digestCompactions.WithLabelValues(summaryAPI(ctx)).Inc()
	}
	return out, err
}
