// Package proxy is abridge as an HTTP proxy (abridge serve): a [Proxy] is
// an http.Handler that forwards every request under /v1/ to an upstream,
// and runs abridge's processors over the history of each request of the
// three APIs it knows (POST /v1/chat/completions, /v1/responses and
// /v1/messages) on the way, through the same middleware an openai-go or
// anthropic-sdk-go app uses (package middleware): the proxy is a
// httputil.ReverseProxy whose Transport is the middleware's per-request
// call (middleware.Rewriter.Send), whose Report says what was sent, its
// sizes and the receipts of its compactions. As a request arrives, the
// proxy decides once, from its method and path, its API (the
// middleware.API the middleware is given), the upstream it goes to
// (Options.Upstreams) and the shape of the errors it is answered with. Only the history is
// rewritten; every other byte of the body, the headers (Authorization
// included) and the query go upstream as the client sent them, and the
// answer comes back as the upstream sends it: a stream chunk by chunk as
// it arrives, a whole answer of those APIs once its first 8 MiB (all of
// any chat answer) have arrived, so that one the upstream cuts short is
// answered 502 upstream_reset, or 504 upstream_timeout past Timeout, in
// the API's error shape, instead of a 200 with a truncated body. An answer
// cut after its status was sent on (a stream) keeps that status; its log
// line says answer_cut_off.
//
// A request abridge cannot process (not JSON, no messages, an invalid
// history, too large, a path a decoding server would resolve elsewhere, a
// body that does not arrive in time, or that finds no room under the
// bound on the memory bodies and their processing take at once) is
// answered with an error in its API's shape and sent nowhere; a
// summarizer that fails never fails the request (the window falls back to
// its digest). Processors that fail send the request as the client wrote
// it, unless the chain holds one marked processor.Required: then the
// request is answered 500 processing_failed and sent nowhere (see package
// middleware, "Failing open, or closed"). Each answer to a processed
// request says in Abridge-* headers what abridge did (see HeaderTokens),
// and, with [Receipts], names the receipt of the compaction its history
// carries.
//
// Who pays for summaries, and for which requests the window may call its
// summarizer, is the proxy's policy (Options.SummarizeFor,
// Options.ClientsPay): the proxy tells its clients apart by the credential
// each sends, and tells the window of each request the payer of its
// summaries and whether it may call its summarizer (a window.Request:
// its Payer and Unpaid). With [ForwardAuthorization] and
// [Summarizers], a client's summaries go through its own API to its own
// upstream, paid with its own credential.
//
// Mount the handler on a server of your own, or run abridge serve, which
// adds /healthz, /metrics, the summary store and the receipts on the
// session database, the operator's page (/ui/) and a graceful shutdown.
package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// Defaults of Options.
const (
	// DefaultUpstream is the OpenAI API.
	DefaultUpstream = "https://api.openai.com/v1"
	// DefaultMaxBodyBytes is the largest body accepted for a wire API
	// abridge processes: 32 MiB.
	DefaultMaxBodyBytes = 32 << 20
	// DefaultTimeout bounds one proxied request, from its arrival to the
	// end of the upstream's answer.
	DefaultTimeout = 10 * time.Minute
	// DefaultBodyMemory bounds the memory the bodies abridge processes,
	// and their processing, take at once: 256 MiB.
	DefaultBodyMemory = 256 << 20
	// DefaultBodyTimeout bounds the arrival of a body abridge processes,
	// from the request's arrival.
	DefaultBodyTimeout = time.Minute
)

// Prefix is the path the proxy serves: the client's base URL ends with it
// (http://127.0.0.1:8787/v1), and it stands for the upstream's base URL.
const Prefix = "/v1"

// Options configures a Proxy. The zero value means: the OpenAI API as
// upstream, no processors (histories are checked and forwarded
// unchanged), the default limits, no logging, no metrics.
type Options struct {
	// Upstream is the base URL requests are forwarded to: a request for
	// /v1/PATH goes to Upstream/PATH. Nil means DefaultUpstream.
	Upstream *url.URL
	// Upstreams names another base URL for the requests of one wire API,
	// by its name: "chat" (…/chat/completions), "responses"
	// (…/responses and under it), "messages" (…/messages and under it,
	// Anthropic's). An API without one goes to Upstream.
	Upstreams map[string]*url.URL
	// Chain processes the history of every request of the three APIs
	// (Chat Completions, Responses, Messages). Nil means none.
	Chain processor.Processor
	// Compactor compacts a history the upstream reported too long, before
	// the one retry. Nil means the chain's window, if it has one (see
	// middleware.Options.Compactor); with none, no retry.
	Compactor compact.Compactor
	// Transport sends requests upstream. Nil means http.DefaultTransport.
	Transport http.RoundTripper
	// MaxBodyBytes is the largest body accepted for a wire API abridge
	// processes (Chat Completions, Responses, Messages); a larger one is
	// answered 413 naming ABRIDGE_SERVE_MAX_BODY_MB. 0 means
	// DefaultMaxBodyBytes. Other requests stream through without a limit.
	MaxBodyBytes int64
	// BodyMemory bounds the memory the bodies of the requests abridge
	// processes take at once: each body counts twice its bytes as they
	// arrive (it is read in pieces, then joined into one slice), then,
	// once it has arrived and before it is decoded, what decoding and
	// processing it take (middleware.ProcessingMemory, from its bytes and
	// its JSON tokens): the part processing alone takes is given back
	// once the body to send is written, the rest (the history decoded
	// and written, middleware.WaitingMemory) until the answer's headers
	// have come back, the body's own until the request is served. A request
	// waits for the first bytes of its body to fit, until its body's
	// deadline (BodyTimeout), and is then answered 503; once it holds
	// some of the bound, a request that needs more than is free is
	// answered 503 at once (so that no request waits holding what another
	// waits for); one that would need more than the whole bound is
	// answered 413. 0 means DefaultBodyMemory, -1 no bound; a bound below
	// twice MaxBodyBytes is raised to it.
	BodyMemory int64
	// BodyTimeout bounds the arrival of a body abridge processes, from the
	// request's arrival: a body still arriving after it is answered 408,
	// and the connection stops reading (where the server allows: an
	// http.Server's does). 0 means DefaultBodyTimeout; never more than
	// Timeout.
	BodyTimeout time.Duration
	// Timeout bounds one proxied request, summaries and the upstream's
	// answer included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger receives one line per request (method, path, status, the
	// history's messages and tokens before and after: as the client sent
	// it and as forwarded, about 4 characters a token; durations; with
	// Receipts, the receipt of the compaction the forwarded history
	// carries; never a header) and the middleware's lines. Nil means no
	// logging.
	Logger *zap.Logger
	// Metrics, when set, counts what the proxy does (see [NewMetrics]).
	Metrics *Metrics
	// OnEvent, when set, receives the middleware's events for each
	// request of the three APIs (see middleware.Event), synchronously; it
	// must be safe for concurrent use.
	OnEvent func(ctx context.Context, e middleware.Event)
	// Receipts, when set, records a receipt of every compaction and a
	// record of every processed request, and names the receipt of the
	// compaction a forwarded history carries in its answer's
	// HeaderReceipt (see [NewReceipts]). Nil means none.
	Receipts *Receipts
	// SummarizeFor says for which requests the chain's window may call
	// its summarizer: SummarizeAll (the default, for ""),
	// SummarizeCredential (requests that carry a credential) or
	// SummarizeAccepted (requests whose credential the upstream has
	// answered a POST with success before: the proxy learns it from the
	// answers it forwards); any other value counts as SummarizeAccepted,
	// the strictest. The window compacts the requests it leaves out with
	// its offline digest and stores nothing for them
	// (window.Request.Unpaid). When clients pay (ClientsPay), a request
	// without a credential is a client like the others; when the proxy
	// pays, it is summarized only under SummarizeAll. abridge serve sets
	// it from ABRIDGE_SERVE_SUMMARIZE_FOR.
	SummarizeFor string
	// ClientsPay says that each client's credential pays for its
	// conversation's summaries (the summarizer has no key of its own, and
	// its requests carry the client's: see [ForwardAuthorization]): the
	// window then keeps a circuit breaker and a share of the background
	// work per credential (window.Request.Payer), so that a client whose key
	// the summarizer's upstream refuses stops only its own summaries.
	// Unset, the proxy pays for every summary, and all requests share one
	// breaker. abridge serve sets it when neither ABRIDGE_SUMMARY_API_KEY
	// nor OPENAI_API_KEY is set.
	ClientsPay bool
}

// Proxy is the proxy's http.Handler. It is safe for concurrent use.
type Proxy struct {
	rp      *httputil.ReverseProxy
	maxBody int64
	// bodies holds the memory budget, of memory bytes (nil: no bound).
	bodies      *semaphore.Weighted
	memory      int64
	bodyTimeout time.Duration
	timeout     time.Duration
	log         *zap.Logger
	metrics     *Metrics
	onEvent     func(context.Context, middleware.Event)
	upstreamOf  func(family wire.Codec) *url.URL // where a request of an API's family goes (nil: of none)
	receipts    *Receipts
	tenants     *tenants
	rw          *middleware.Rewriter
}

var _ http.Handler = (*Proxy)(nil)

// New returns a Proxy configured by opts.
func New(opts Options) *Proxy {
	p := &Proxy{maxBody: opts.MaxBodyBytes, timeout: opts.Timeout, log: opts.Logger, metrics: opts.Metrics, onEvent: opts.OnEvent,
		receipts: opts.Receipts, tenants: newTenants(opts.SummarizeFor, opts.ClientsPay)}
	if p.maxBody <= 0 {
		p.maxBody = DefaultMaxBodyBytes
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	p.bodyTimeout = opts.BodyTimeout
	if p.bodyTimeout <= 0 {
		p.bodyTimeout = DefaultBodyTimeout
	}
	p.bodyTimeout = min(p.bodyTimeout, p.timeout)
	switch memory := opts.BodyMemory; {
	case memory == 0:
		p.memory = max(DefaultBodyMemory, 2*p.maxBody)
	case memory > 0:
		p.memory = max(memory, 2*p.maxBody)
	}
	if p.memory > 0 {
		p.bodies = semaphore.NewWeighted(p.memory)
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	upstream := opts.Upstream
	if upstream == nil {
		upstream, _ = url.Parse(DefaultUpstream)
	}
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	base = p.tenants.transport(base)
	p.upstreamOf = func(family wire.Codec) *url.URL {
		if family != nil {
			if u := opts.Upstreams[family.API()]; u != nil {
				return u
			}
		}
		return upstream
	}
	p.rw = middleware.NewRewriter(opts.Chain, middleware.Options{
		Compactor: opts.Compactor,
		Logger:    p.log,
		OnEvent:   p.event,
		Reserve:   p.reserve,
	})
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			ex := exchangeOf(pr.In.Context())
			pr.Out.URL = target(ex.upstream, pr.In.URL)
			pr.Out.Host = ""
			if ex.api == (middleware.API{}) {
				// The middleware takes it off the requests it processes.
				pr.Out.Header.Del(middleware.ConversationHeader)
			}
		},
		Transport:      p.transport(base),
		ModifyResponse: p.response,
		ErrorHandler:   p.error,
		ErrorLog:       zap.NewStdLog(p.log.Named("reverseproxy")),
	}
	return p
}

// target is the upstream URL of a request for in.
func target(upstream, in *url.URL) *url.URL {
	u := *upstream
	rest := strings.TrimPrefix(in.Path, Prefix)
	u.Path = strings.TrimSuffix(upstream.Path, "/") + rest
	u.RawPath = ""
	if in.RawPath != "" {
		u.RawPath = strings.TrimSuffix(upstream.EscapedPath(), "/") + strings.TrimPrefix(in.RawPath, Prefix)
	}
	switch {
	case upstream.RawQuery == "":
		u.RawQuery = in.RawQuery
	case in.RawQuery != "":
		u.RawQuery = upstream.RawQuery + "&" + in.RawQuery
	}
	return &u
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// transport returns the proxy's transport: the middleware's per-request
// call (middleware.Rewriter.Send), with the API decided as the request
// arrived, in front of base. What the middleware did goes into the
// request's exchange; with Receipts, the receipts of its compactions are
// saved before each try goes to base, and once Send has returned for a
// request it processed.
func (p *Proxy) transport(base http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		ex := exchangeOf(req.Context())
		next := base.RoundTrip
		if p.receipts != nil {
			next = func(r *http.Request) (*http.Response, error) {
				p.receipts.settle(r.Context(), ex)
				return base.RoundTrip(r)
			}
		}
		resp, err := p.rw.Send(req, ex.api, &ex.report, next)
		if ex.report.Rejected != "" {
			ex.failure = ex.report.Rejected
		}
		if p.receipts != nil && ex.report.Processed {
			p.receipts.settle(req.Context(), ex) // the compaction after an overflow, when not sent again
		}
		return resp, err
	})
}

// exchange is what the proxy knows of one request: what it decides as
// the request arrives (ServeHTTP), then what it learns while serving it.
// It is the proxy's one value in the request's context (beside the
// window.Request it tells the window of the request with); exchangeOf
// reads it.
type exchange struct {
	// api is the request's wire API when the middleware processes it (a
	// POST to …/chat/completions, …/responses or …/v1/messages:
	// middleware.APIOf), else the zero API. The middleware is given it
	// rather than deciding again.
	api middleware.API
	// family is the codec of the API the request's path belongs to
	// (wire.Family: its endpoint or a path under it), else nil: it
	// chooses the upstream and shapes the errors the proxy answers.
	family wire.Codec
	// upstream is the base URL the request is forwarded to.
	upstream *url.URL
	// client is the context of the client's request, which ends when the
	// client goes away (the request's own adds the proxy's Timeout).
	client context.Context
	// credential is the client's credential headers, as a summary
	// request made while serving it is given them (clientCredential), or
	// nil when it has none.
	credential http.Header

	// report is what the middleware did with the request.
	report  middleware.Report
	failure string
	// cut is set when the upstream's answer broke off: its reason
	// (CodeUpstreamReset, CodeUpstreamTimeout, or clientGone; see
	// Proxy.cutOff, which sets cutNoted). A cut found before the answer's
	// status was sent on becomes the request's failure (see Proxy.error);
	// one found after stays here.
	cut      string
	cutNoted bool
	// ctx is the request's context, with the proxy's Timeout: it tells a
	// cut by the Timeout.
	ctx context.Context
	// body is the processed request's body, behind the proxy's limits.
	body *bodyReader
	// saved counts the receipts of report saved (with Options.Receipts);
	// receipt is the id of the compaction the forwarded history carries,
	// compacted set when it was made for this request.
	saved     int
	receipt   string
	compacted bool
}

// clientGone is the failure, or the reason an answer was cut off, when
// the client went away.
const clientGone = "client gone"

// api names the request's wire API: "chat", "responses", "messages", or
// "other" for a request the middleware does not process.
func (ex *exchange) apiName() string {
	if name := ex.api.Name(); name != "" {
		return name
	}
	return "other"
}

type exchangeKey struct{}

// exchangeOf returns the exchange of the request ctx comes from, or nil.
func exchangeOf(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// ServeHTTP proxies one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	ex := &exchange{api: middleware.APIOf(r.Method, r.URL.Path), family: wire.Family(r.URL.Path), client: r.Context()}
	ex.upstream = p.upstreamOf(ex.family)
	defer func() { p.finish(r, rec, ex, start) }()

	if r.URL.Path != Prefix && !strings.HasPrefix(r.URL.Path, Prefix+"/") {
		p.refuse(rec, ex, apierror.Error{Status: http.StatusNotFound, Type: apierror.TypeInvalidRequest, Code: CodeUnknownPath,
			Message: fmt.Sprintf("abridge: no route for %s: the proxy serves %s/ (set the client's base URL to this server's %s)", r.URL.Path, Prefix, Prefix)})
		return
	}
	if err := checkPath(r.URL); err != nil {
		p.refuse(rec, ex, apierror.Error{Status: http.StatusBadRequest, Type: apierror.TypeInvalidRequest, Code: CodeInvalidPath,
			Message: "abridge: " + err.Error()})
		return
	}
	if ex.api != (middleware.API{}) {
		if r.ContentLength > p.maxBody {
			p.refuse(rec, ex, tooLarge(p.maxBody))
			return
		}
		ex.body = p.limitBody(rec, r, start.Add(p.bodyTimeout))
		defer ex.body.free()
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	id, has := credentialID(r.Header)
	if has {
		ex.credential = clientCredential(r.Header)
	}
	ctx = window.WithRequest(ctx, p.tenants.request(id, has))
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	ex.ctx = ctx
	p.rp.ServeHTTP(rec, r.WithContext(ctx))
}

// checkPath refuses a path that a server decoding it (nginx does) would
// resolve outside the upstream's base, or to another path than the one
// forwarded: a segment that is "." or ".." once decoded, an encoded slash
// or a backslash.
func checkPath(u *url.URL) error {
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Errorf("path %q: %w", u.EscapedPath(), err)
		}
		switch {
		case dec == "." || dec == "..":
			return fmt.Errorf("path %q has a dot segment (%s): the proxy forwards only paths under its base", u.EscapedPath(), seg)
		case strings.ContainsAny(dec, "/\\"):
			return fmt.Errorf("path %q has an encoded slash or a backslash (%s): the proxy forwards only plain paths", u.EscapedPath(), seg)
		}
	}
	return nil
}

// Codes of the errors the proxy answers itself, besides the middleware's
// (middleware.CodeInvalidJSON and the others).
const (
	CodeUnknownPath     = "unknown_path"         // 404: a path outside Prefix
	CodeInvalidPath     = "invalid_path"         // 400: see checkPath
	CodeTooLarge        = "request_too_large"    // 413: a body over MaxBodyBytes, or whose processing would not fit in BodyMemory
	CodeRequestTimeout  = "request_timeout"      // 408: a body not received before BodyTimeout
	CodeBusy            = "server_busy"          // 503: no room under BodyMemory: before the body's deadline, or at once for a request holding some
	CodeUpstreamTimeout = "upstream_timeout"     // 504: no complete answer within Timeout
	CodeProcessTimeout  = "processing_timeout"   // 504: Timeout passed before abridge had sent the request
	CodeUnreachable     = "upstream_unreachable" // 502: no answer from the upstream
	CodeUpstreamReset   = "upstream_reset"       // 502: a whole answer broke off before its end (see Proxy.response)
)

// refusals are the codes of the requests the proxy answers itself and
// sends nowhere: abridge_rejected_requests_total counts them from zero.
var refusals = []string{middleware.CodeInvalidJSON, middleware.CodeMissingMessages, middleware.CodeInvalidMessage,
	middleware.CodeInvalidHistory, middleware.CodeUnsupportedEncoding, middleware.CodeProcessingFailed, CodeUnknownPath,
	CodeInvalidPath, CodeTooLarge, CodeRequestTimeout, CodeBusy}

// refuse answers e to a request the proxy sends nowhere, and counts it.
func (p *Proxy) refuse(w http.ResponseWriter, ex *exchange, e apierror.Error) {
	ex.failure = e.Code
	p.metrics.rejectedRequest(e.Code)
	writeError(w, ex.family, e)
}

// writeError answers e in the shape of the API family c of the request
// (the OpenAI shape for requests of no API abridge knows: nil).
func writeError(w http.ResponseWriter, c wire.Codec, e apierror.Error) {
	if c == nil {
		e.Write(w)
		return
	}
	body := c.Refuse(e.Status, e.Code, e.Message)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// The settings of abridge serve the proxy's limits come from, which its
// answers name.
const (
	envMaxBody    = "ABRIDGE_SERVE_MAX_BODY_MB"
	envBodyMemory = "ABRIDGE_SERVE_BODY_MEMORY_MB"
)

func tooLarge(limit int64) apierror.Error {
	return apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: apierror.TypeInvalidRequest, Code: CodeTooLarge,
		Message: fmt.Sprintf("abridge: request body larger than %s, the proxy's limit: raise %s (MaxBodyBytes) to accept it",
			size(limit), envMaxBody)}
}

// event counts the middleware's events, and passes them on to
// Options.OnEvent. What the request's log line and headers say comes from
// the middleware's Report.
func (p *Proxy) event(ctx context.Context, e middleware.Event) {
	p.metrics.middlewareEvent(e)
	if p.onEvent != nil {
		p.onEvent(ctx, e)
	}
}

// response counts the upstream's error statuses, and watches its body for
// an answer that breaks off. A whole (not streamed) answer to a processed
// request is read before its status is sent on, up to wholeAnswerBytes,
// so that one that breaks off within them is answered with an error
// instead (see readWhole).
func (p *Proxy) response(resp *http.Response) error {
	if resp.StatusCode >= 500 {
		p.metrics.upstreamError("status_5xx")
	}
	ex := exchangeOf(resp.Request.Context())
	setHeaders(resp.Header, ex)
	if ex.api != (middleware.API{}) && !isStream(resp) {
		return p.readWhole(resp, ex)
	}
	return nil
}

// wholeAnswerBytes is the most of a whole answer the proxy reads before
// sending its status on: 8 MiB, past any chat answer's size. What follows
// passes as it arrives.
const wholeAnswerBytes = 8 << 20

// errAnswerCut is why a whole answer is not sent on: it broke off before
// its end (Proxy.cutOff says why).
var errAnswerCut = errors.New("the upstream's answer broke off")

// isStream reports whether resp is a stream of server-sent events.
func isStream(resp *http.Response) bool {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return media == "text/event-stream"
}

// readWhole reads resp's body, up to wholeAnswerBytes, before its status
// is sent on: an answer that breaks off within them returns errAnswerCut,
// answered with an error status (the client has been sent nothing yet),
// where one cut after its status was sent on leaves the client a 200 and a
// truncated body. An answer read to its end is closed and given from what
// was read; a longer one from that, then the rest.
func (p *Proxy) readWhole(resp *http.Response, ex *exchange) error {
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= wholeAnswerBytes {
		buf.Grow(int(n))
	}
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, wholeAnswerBytes))
	if err != nil {
		p.cutOff(resp.Request.Context(), ex, err)
		announced := ""
		if resp.ContentLength >= 0 {
			announced = fmt.Sprintf(" of the %d announced", resp.ContentLength)
		}
		return fmt.Errorf("%w after %d bytes%s: %w", errAnswerCut, buf.Len(), announced, err)
	}
	if buf.Len() < wholeAnswerBytes {
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(&buf)
		return nil
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&buf, resp.Body), resp.Body}
	return nil
}

// cutOff notes, once, why ex's answer broke off with err (a read's
// error): the client went away, the proxy's Timeout cut it (ctx, the
// request's, ended by it), or the upstream reset the connection or sent
// less than it announced.
func (p *Proxy) cutOff(ctx context.Context, ex *exchange, err error) {
	if ex.cutNoted {
		return
	}
	ex.cutNoted = true
	switch {
	case ex.client.Err() != nil:
		ex.cut = clientGone
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		ex.cut = CodeUpstreamTimeout
		p.metrics.upstreamError("timeout")
	default:
		ex.cut = CodeUpstreamReset
		p.metrics.upstreamError("reset")
	}
	p.log.Warn("proxy: answer cut off", zap.String("reason", ex.cut), zap.Error(err))
}

// error answers a request that got no response from upstream.
func (p *Proxy) error(w http.ResponseWriter, r *http.Request, err error) {
	ex := exchangeOf(r.Context()) // set by ServeHTTP
	var tooBig *http.MaxBytesError
	var e apierror.Error
	var tooMuch *memoryError
	switch {
	case errors.Is(err, errAnswerCut):
		// Counted and logged as it broke off (Proxy.cutOff); the client
		// has been sent nothing: it is answered an error, which the
		// request's line and abridge_requests_total report.
		switch cut := ex.cut; cut {
		case clientGone:
			ex.failure, ex.cut = cut, ""
			w.WriteHeader(499)
			return
		case CodeUpstreamTimeout:
			e = apierror.Error{Status: http.StatusGatewayTimeout, Type: apierror.TypeUpstream, Code: CodeUpstreamTimeout,
				Message: fmt.Sprintf("abridge: no complete answer from upstream within %s: %v", p.timeout, err)}
		default:
			e = apierror.Error{Status: http.StatusBadGateway, Type: apierror.TypeUpstream, Code: CodeUpstreamReset,
				Message: "abridge: " + err.Error()}
		}
		ex.failure, ex.cut = e.Code, ""
		writeError(w, ex.family, e)
		return
	case errors.As(err, &tooBig):
		e = tooLarge(tooBig.Limit)
	case errors.As(err, &tooMuch):
		e = apierror.Error{Status: http.StatusRequestEntityTooLarge, Type: apierror.TypeInvalidRequest, Code: CodeTooLarge,
			Message: "abridge: " + tooMuch.Error()}
	case errors.Is(err, errBodyTimeout):
		e = apierror.Error{Status: http.StatusRequestTimeout, Type: apierror.TypeInvalidRequest, Code: CodeRequestTimeout,
			Message: fmt.Sprintf("abridge: request body not received within %s", p.bodyTimeout)}
	case errors.Is(err, errBusy):
		w.Header().Set("Retry-After", "1")
		e = apierror.Error{Status: http.StatusServiceUnavailable, Type: apierror.TypeServer, Code: CodeBusy,
			Message: fmt.Sprintf("abridge: %s (%s, BodyMemory); try again", errBusy, envBodyMemory)}
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil && ex.api != (middleware.API{}) && !ex.report.Processed:
		// The time ran out in abridge's processing (a summary): nothing
		// reached the upstream.
		e = apierror.Error{Status: http.StatusGatewayTimeout, Type: apierror.TypeServer, Code: CodeProcessTimeout,
			Message: fmt.Sprintf("abridge: request not processed within %s, so not sent upstream", p.timeout)}
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil:
		p.metrics.upstreamError("timeout")
		e = apierror.Error{Status: http.StatusGatewayTimeout, Type: apierror.TypeUpstream, Code: CodeUpstreamTimeout,
			Message: fmt.Sprintf("abridge: no complete answer from upstream within %s", p.timeout)}
	case r.Context().Err() != nil:
		// The client went away: nobody to answer.
		ex.failure = clientGone
		w.WriteHeader(499)
		return
	default:
		p.metrics.upstreamError("connection")
		e = apierror.Error{Status: http.StatusBadGateway, Type: apierror.TypeUpstream, Code: CodeUnreachable,
			Message: "abridge: upstream unreachable: " + err.Error()}
	}
	ex.failure = e.Code
	if slices.Contains(refusals, e.Code) {
		p.metrics.rejectedRequest(e.Code)
		p.log.Info("proxy: request refused", zap.String("path", r.URL.Path), zap.String("code", e.Code), zap.Error(err))
	} else {
		p.log.Warn("proxy: no answer from upstream", zap.String("path", r.URL.Path), zap.String("code", e.Code), zap.Error(err))
	}
	writeError(w, ex.family, e)
}

// finish logs the request and counts it.
func (p *Proxy) finish(r *http.Request, rec *recorder, ex *exchange, start time.Time) {
	if err := ex.report.AnswerErr; err != nil {
		p.cutOff(ex.ctx, ex, err) // a stream, or a whole answer past what readWhole reads
	}
	d := time.Since(start)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	p.metrics.request(ex.apiName(), status, d)
	rep := &ex.report
	if p.receipts != nil {
		p.receipts.finish(ex, status)
	}
	if rep.Processed {
		p.metrics.forwarded(rep.API, rep.Sent.Tokens)
	}
	level := zap.InfoLevel
	if status >= 500 || (ex.cut != "" && ex.cut != clientGone) {
		level = zap.WarnLevel
	}
	ce := p.log.Check(level, "proxy: request")
	if ce == nil {
		return
	}
	fields := []zap.Field{zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.Int("status", status), zap.Duration("duration", d)}
	if rep.Processed {
		fields = append(fields, zap.String("model", rep.Model), zap.Bool("stream", rep.Stream),
			zap.Int("messages_before", rep.Client.Messages), zap.Int("messages_after", rep.Sent.Messages),
			zap.Int("tokens_before", rep.Client.Tokens), zap.Int("tokens_after", rep.Sent.Tokens),
			zap.Duration("abridge", rep.Duration))
	}
	if rep.Overflow {
		fields = append(fields, zap.Bool("overflow_retried", rep.Retried))
		if rep.Retried && rep.Processed {
			fields = append(fields, zap.Int("messages_first_try", rep.FirstTry.Messages), zap.Int("tokens_first_try", rep.FirstTry.Tokens))
		}
	}
	if ex.failure != "" {
		fields = append(fields, zap.String("error", ex.failure))
	}
	if ex.cut != "" {
		fields = append(fields, zap.String("answer_cut_off", ex.cut))
	}
	if ex.receipt != "" {
		fields = append(fields, zap.String("receipt", ex.receipt), zap.Bool("compacted", ex.compacted))
	}
	ce.Write(fields...)
}

// recorder notes the status a handler answers with. It unwraps to the
// ResponseWriter it wraps, so streams are flushed through it.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush sends what was written so far.
func (r *recorder) Flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// forwardedHeaders are the headers of a client's request a summary
// request to its upstream is given: its credential (credentialHeaders),
// and what Anthropic reads with one, the API version and the beta flags
// (only the OAuth ones: see clientCredential).
var forwardedHeaders = append(slices.Clone(credentialHeaders), "Anthropic-Version", "Anthropic-Beta")

// clientCredential returns the headers of h, which has a credential, a
// summary request is given (forwardedHeaders). Of anthropic-beta only the
// OAuth flags are kept (Claude Code's bearer token is refused without
// them); the others would change the summary request's meaning.
func clientCredential(h http.Header) http.Header {
	out := http.Header{}
	for _, name := range forwardedHeaders {
		v := h.Get(name)
		if name == "Anthropic-Beta" {
			var flags []string
			for _, vv := range h.Values(name) {
				for f := range strings.SplitSeq(vv, ",") {
					if f = strings.TrimSpace(f); strings.HasPrefix(f, "oauth-") {
						flags = append(flags, f)
					}
				}
			}
			v = strings.Join(flags, ",")
		}
		if v != "" {
			out.Set(name, v)
		}
	}
	return out
}

// ForwardAuthorization returns a RoundTripper that gives a request to
// origin (the same scheme and host) without a credential header
// (Authorization, api-key, x-api-key) the credential of the client request
// the proxy is serving, when its context comes from that request (a
// summarizer's model call made while the proxy processes it), then sends it
// with next (nil means http.DefaultTransport). Requests to any other origin
// go out as they are: a client's key is never sent anywhere but where the
// client sent it.
//
// The credential is the client's credential headers, and with them its
// anthropic-version and the OAuth flags of its anthropic-beta (a Claude
// Code bearer token needs them): a summary request for Anthropic's
// Messages API is paid with the x-api-key or token of the client's own
// Messages request. The client's headers go only to the origin the
// client's own request was sent to: the key of an Anthropic Messages
// request, forwarded to ANTHROPIC_BASE_URL, is never given to a summary
// request for OPENAI_BASE_URL.
//
// [ClientPaidSummarizers] builds its summarizers' HTTP clients on it, one
// per upstream, so that when the proxy has no API key of its own the client
// whose conversation is summarized pays for its summaries. The headers are
// copied, never logged, and their values are replaced by "[redacted key]"
// in the error answers to the requests they went with (an upstream
// refusing a key often quotes it), whatever its shape.
func ForwardAuthorization(origin *url.URL, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		ex := exchangeOf(req.Context())
		if ex == nil || ex.credential == nil || hasCredential(req.Header) || origin == nil ||
			!sameOrigin(req.URL, origin) || !sameOrigin(req.URL, ex.upstream) {
			return next.RoundTrip(req)
		}
		r := req.Clone(req.Context())
		for name, v := range ex.credential {
			r.Header[name] = slices.Clone(v)
		}
		resp, err := next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		var secrets []string
		for _, name := range credentialHeaders {
			if v := ex.credential.Get(name); v != "" {
				secrets = append(secrets, v)
			}
		}
		if err := redactBody(resp, secrets...); err != nil {
			return nil, fmt.Errorf("read the upstream's error answer: %w", err)
		}
		return resp, nil
	})
}

// hasCredential reports whether h has a credential header of its own.
func hasCredential(h http.Header) bool {
	_, has := credentialID(h)
	return has
}

// apiOf returns the wire API of the client request ctx comes from ("chat",
// "responses", "messages", "other"), or "" when it comes from none.
func apiOf(ctx context.Context) string {
	if ex := exchangeOf(ctx); ex != nil {
		return ex.apiName()
	}
	return ""
}

// sameOrigin reports whether u and origin have the same scheme and host.
func sameOrigin(u, origin *url.URL) bool {
	return strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Host, origin.Host)
}
