package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/cmd/abridge/internal/ui"
	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/model"
	"github.com/abridge-go/abridge/model/anthropic"
	"github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/summarizer"
	"github.com/abridge-go/abridge/summarizer/llm"
)

var serveCommand = &command{
	name:    "serve",
	summary: "run a proxy that compacts every chat, responses and messages request",
	usage:   "abridge serve [--addr HOST:PORT]",
	about: `Serve runs an OpenAI-compatible proxy. Point any OpenAI client at it
(OPENAI_BASE_URL=http://127.0.0.1:8787/v1) and it forwards every request
under /v1/ to the upstream named by OPENAI_BASE_URL (the OpenAI API when
unset), headers and Authorization included, answers streamed through as
they arrive. Anthropic clients point ANTHROPIC_BASE_URL at it
(http://127.0.0.1:8787); their requests (/v1/messages and the paths under
it) go to the upstream named by ANTHROPIC_BASE_URL (the Anthropic API when
unset), x-api-key and anthropic-version included. Before a POST
/v1/chat/completions, /v1/responses or /v1/messages goes on, abridge's
processors (trimmer, window) rewrite its history; every other byte of the
body, and what abridge does not model in the history (encrypted
reasoning, thinking signatures), is sent as the client wrote it. A
Responses request naming previous_response_id passes untouched. A body
that is not JSON, has no history or holds an invalid one is answered 400,
in its API's error shape, and sent nowhere.

A whole (not streamed) answer to a chat, responses or messages request is
read before its status is sent on, up to 8 MiB: one the upstream cuts
short is answered 502 upstream_reset (504 upstream_timeout once
ABRIDGE_SERVE_TIMEOUT passes) in its API's error shape, and its log line
and abridge_requests_total say 502 (504), the line with
error=upstream_reset (upstream_timeout). A stream cut mid-event was sent
its 200: its client sees the connection end, its log line says status 200
and answer_cut_off=upstream_reset (or upstream_timeout), and
abridge_requests_total counts a 200. Either cut counts once in
abridge_upstream_errors_total (reason reset or timeout), and is logged at
warn as "proxy: answer cut off" with its reason and the read's error.

Summaries are kept in the session database (ABRIDGE_SESSION_DB: a SQLite
file by default, or a PostgreSQL URL that several replicas share) and found
by content, or by the conversation named in an optional
Abridge-Conversation request header. They are written by the summarizer's
model (unless ABRIDGE_SUMMARIZER=digest) and paid with the proxy's key
(ABRIDGE_SUMMARY_API_KEY or OPENAI_API_KEY, a Chat Completions model on
the summary endpoint) or, when it has none, with the credential of the
client whose conversation is summarized, through the API of its own
request at its own upstream: Chat Completions or Responses on
OPENAI_BASE_URL with its Authorization, Anthropic Messages on
ANTHROPIC_BASE_URL (model ABRIDGE_SUMMARY_ANTHROPIC_MODEL) with its
x-api-key or OAuth token. A client's credential goes to its upstream only:
with an ABRIDGE_SUMMARY_BASE_URL elsewhere and no key, that API's
summaries are the offline digest, and no request is made.
By default the model is called only for requests whose credential the
upstream has accepted before (ABRIDGE_SERVE_SUMMARIZE_FOR); the others are
compacted with the offline digest, and nothing is stored for them. Each
client's failures stop only its own summaries. A summarizer that fails
never fails a request: the offline digest stands in, and the model is asked
again when that part of the conversation is next sent.

Every answer to a processed request says what abridge did, in headers:
Abridge-Messages and Abridge-Tokens give the history's messages and
estimated tokens (about 4 characters each) as the client sent it and as
forwarded, "BEFORE AFTER"; Abridge-Receipt gives the path of the receipt of
the compaction the forwarded history carries (/ui/receipts/ID), and
Abridge-Compaction says whether this request made it ("new") or carries one
made before ("carried"). A receipt, kept in the session database as long as
the summaries (replicas read each other's), holds the messages replaced
(role, tool, size), the summary marker as the model received it, who wrote
it (the model, or the digest and why), the summarizer's tokens and time, and
the provider's usage of the requests sent with it.

The operator's page, GET /ui/, lists the conversations (requests,
compactions, tokens not sent, last activity), each with a chart of its
prompt tokens per request with and without abridge, its requests and its
compactions, and a page per receipt; it updates while the proxy works. Its
JSON is under /ui/api/ (conversations, conversations/ID, receipts/ID,
version). It shows conversation content: without ABRIDGE_UI_TOKEN it is
served only when the proxy listens on a loopback address (and answers only
requests for a loopback host), and is off otherwise, as the start-up line
says; with the token, every request must bring it, as "Authorization:
Bearer TOKEN" or once as /ui/?token=TOKEN, which sets an HttpOnly,
SameSite=Strict cookie; others get 401. No key or token is ever shown.

GET /healthz answers 200 while the proxy serves; GET /metrics gives the
Prometheus metrics (OpenMetrics when the client asks for it); other methods
get 405. A body must arrive within a minute (else 408), and the bodies
held at once, with what processing them takes, take at most
ABRIDGE_SERVE_BODY_MEMORY_MB (past it a request gets 503; one that would
need more than all of it, 413). ABRIDGE_SUMMARY_TIMEOUT must be shorter than
ABRIDGE_SERVE_TIMEOUT. SIGTERM or Ctrl-C stops it after the requests in flight
have finished (ABRIDGE_SERVE_SHUTDOWN_TIMEOUT at most). Logs go to stderr at
ABRIDGE_LOG_LEVEL (info unless set), a line per request (method, path,
status, duration, sizes before and after, error, answer_cut_off); no line
repeats a key, and no header is ever logged. A SQLite ABRIDGE_SESSION_DB
in a directory that does not exist is an error, unless it is abridge's
default directory, which is created.`,
	env:      []config.Group{config.GroupServe, config.GroupSession, config.GroupModel, config.GroupProcessors, config.GroupLog},
	logLevel: "info",
	flags:    serveFlags,
}

func serveFlags(fs *flag.FlagSet) func(ctx context.Context, c *cli, args []string) error {
	addr := fs.String("addr", "", "listen on `HOST:PORT` (default: ABRIDGE_SERVE_ADDR, else 127.0.0.1:8787)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) > 0 {
			return usagef("serve: unexpected arguments: %s", strings.Join(args, " "))
		}
		if *addr != "" {
			if _, port, err := net.SplitHostPort(*addr); err != nil || port == "" {
				return usagef("serve: --addr %q: want HOST:PORT, e.g. 127.0.0.1:8787 or :8787", *addr)
			}
		}
		// Unlike the other commands, serve logs at info unless told
		// otherwise: its log is the record of what it did.
		cfg, err := config.LoadFrom(c.environ)
		if err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
		if err := fitsServeTimeout(cfg); err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
		if *addr != "" {
			cfg.ServeAddr = *addr
		}
		logger, err := cfg.LoggerTo(c.stderr)
		if err != nil {
			return fmt.Errorf("logger: %w", err)
		}
		defer func() { _ = logger.Sync() }()
		return serve(ctx, c, cfg, logger)
	}
}

// serve runs the proxy until ctx ends, then lets the requests in flight
// finish.
func serve(ctx context.Context, c *cli, cfg *config.Config, logger *zap.Logger) error {
	upstream, err := url.Parse(cfg.Upstream())
	if err != nil {
		return fmt.Errorf("serve: %s: %w", config.EnvOpenAIBaseURL, err)
	}
	anthropicUpstream, err := url.Parse(cfg.AnthropicUpstream())
	if err != nil {
		return fmt.Errorf("serve: %s: %w", config.EnvAnthropicBaseURL, err)
	}
	store, err := openStore(ctx, cfg.SessionDB, logger, true)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer store.Close()

	reg := prometheus.NewRegistry()
	for _, col := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	metrics, err := proxy.NewMetrics(reg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s, kind, payer, digests := serveSummarizer(cfg, upstream, anthropicUpstream, logger, metrics)
	receipts := proxy.NewReceipts(store.Receipts(), proxy.ReceiptOptions{Logger: logger, Writer: func(api string) string {
		if slices.Contains(digests, api) {
			return receipt.WriterDigest
		}
		return receipt.WriterModel
	}})
	defer receipts.Close()
	comp, err := cfg.Build(config.BuildOptions{Logger: logger, Store: store.Summaries(), Summarizer: s,
		OnEvent: metrics.WindowEvent})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	p := proxy.New(proxy.Options{
		Upstream:     upstream,
		Upstreams:    map[string]*url.URL{"messages": anthropicUpstream},
		Chain:        comp.Chain,
		MaxBodyBytes: int64(cfg.ServeMaxBodyMB) << 20,
		BodyMemory:   int64(cfg.ServeBodyMemoryMB) << 20,
		Timeout:      cfg.ServeTimeout,
		Logger:       logger,
		Metrics:      metrics,
		Receipts:     receipts,
		SummarizeFor: cfg.ServeSummarizeFor,
		ClientsPay:   !cfg.SummaryKeySet(),
	})

	mux := http.NewServeMux()
	mux.Handle("/", p)
	mux.Handle("/healthz", getOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})))
	mux.Handle("/metrics", getOnly(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})))

	ln, err := net.Listen("tcp", cfg.ServeAddr)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", cfg.ServeAddr, err)
	}
	if loopsBack(upstream, ln.Addr()) {
		_ = ln.Close()
		return fmt.Errorf("serve: %s (%s) is this proxy's own address: set it to the upstream, and the clients' OPENAI_BASE_URL to http://%s%s",
			config.EnvOpenAIBaseURL, shownUpstream(cfg), ln.Addr(), proxy.Prefix)
	}
	pages, pagesNote := operatorPage(cfg, ln.Addr(), store.Receipts(), logger)
	mux.Handle(ui.Prefix, pages)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(logger.Named("http")),
	}
	say := func(msg string, fields ...zap.Field) {
		// A JSON log keeps stderr all JSON: the status lines are entries.
		if cfg.LogFormat == "json" {
			logger.Info(msg, fields...)
			return
		}
		c.note(msg)
	}
	listening := []zap.Field{zap.String("addr", ln.Addr().String()), zap.String("upstream", shownUpstream(cfg)),
		zap.String("summarizer", kind), zap.String("summaries_paid_by", payer)}
	listening = append(listening, zap.String("operator_page", pagesNote))
	say(fmt.Sprintf("serving on http://%s%s (upstream %s; summaries: %s, kept in %s, paid by %s); %s",
		ln.Addr(), proxy.Prefix, shownUpstream(cfg), kind, describeStore(cfg.SessionDB), payer, pagesNote), listening...)
	if cfg.LogFormat != "json" {
		logger.Info("serve: listening", listening...)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	say(fmt.Sprintf("stopping: letting the requests in flight finish (at most %s)", cfg.ServeShutdownTimeout),
		zap.Duration("shutdown_timeout", cfg.ServeShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ServeShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		<-served
		return fmt.Errorf("serve: requests still in flight after %s (%s) were cut off", cfg.ServeShutdownTimeout,
			config.Prefix+"SERVE_SHUTDOWN_TIMEOUT")
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	// The summaries being written ahead finish in the time left, or are
	// abandoned whole: nothing half-written is saved.
	if err := comp.Window.Close(sctx); err != nil {
		logger.Info("serve: summaries being written ahead abandoned at shutdown", zap.Error(err))
	}
	logger.Info("serve: stopped")
	return nil
}

// serveSummarizer returns the window's summarizer, counted by metrics,
// its kind, who pays for its summaries, and the APIs whose summaries the
// digest writes when the model is not called (every API's, for the kind
// digest).
//
// With a key of its own, the proxy pays for every summary, written by the
// Chat Completions model on the summary endpoint. Without one, each client
// pays with its own credential, through the API of its own request, at the
// upstream that request went to: a Chat Completions client's summaries are
// Chat Completions requests, a Responses client's Responses requests
// (both on OPENAI_BASE_URL), a Messages client's Messages requests on
// ANTHROPIC_BASE_URL. ABRIDGE_SUMMARY_BASE_URL, when set, is the endpoint
// of every API's summaries: an API whose upstream it is not on (every
// API's, when it is elsewhere; the Messages API's, when it is on
// OPENAI_BASE_URL) gets the offline digest, and no request is made: a
// client's credential goes nowhere but its upstream
// (proxy.ClientPaidSummarizers).
func serveSummarizer(cfg *config.Config, upstream, anthropicUpstream *url.URL, logger *zap.Logger, metrics *proxy.Metrics) (summarizer.Summarizer, string, string, []string) {
	digest := metrics.Digest(summarizer.NewDigest(summarizer.DigestOptions{}))
	every := []string{"chat", "responses", "messages"}
	if cfg.Summarizer == config.SummarizerDigest {
		return metrics.Summarizer(digest), config.SummarizerDigest, "nobody (no model calls)", every
	}
	newLLM := func(m model.Model) summarizer.Summarizer {
		return llm.New(model.Observe(m, metrics.SummarizerRequest), llm.Options{Timeout: cfg.SummaryTimeout, Logger: logger})
	}
	if cfg.SummaryKeySet() {
		// The proxy always has an endpoint, the upstream: auto means llm.
		return metrics.Summarizer(newLLM(openai.New(cfg.SummaryModelOptions(logger)...))), config.SummarizerLLM, "the proxy's API key", nil
	}
	endpoint := cfg.SummaryEndpoint()
	// A summary endpoint of its own is where every summary goes; it takes
	// a Messages client's credential only if it is on that client's
	// upstream.
	anthropicEndpoint := anthropicUpstream.String()
	if cfg.SummaryBaseURL != "" {
		anthropicEndpoint = cfg.SummaryBaseURL
	}
	openAIOpts := append(cfg.SummaryModelOptions(logger), openai.WithBaseURL(endpoint))
	// The summary models read no key from the environment: the client's
	// credential, added by the HTTP client they are given, pays.
	paid := func(opts []openai.Option, client *http.Client) []openai.Option {
		return append(slices.Clone(opts), openai.WithoutEnvironment(), openai.WithHTTPClient(client))
	}
	anthropicOpts := cfg.AnthropicSummaryModelOptions(logger)
	paidAnthropic := func(client *http.Client) []anthropic.Option {
		return append(slices.Clone(anthropicOpts), anthropic.WithoutEnvironment(), anthropic.WithHTTPClient(client))
	}
	routes := []proxy.SummaryRoute{
		{API: "chat", Upstream: upstream, Endpoint: endpoint, New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(openai.New(paid(openAIOpts, c)...))
		}},
		{API: "responses", Upstream: upstream, Endpoint: endpoint, New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(openai.NewResponses(paid(openAIOpts, c)...))
		}},
		{API: "messages", Upstream: anthropicUpstream, Endpoint: anthropicEndpoint, New: func(c *http.Client) summarizer.Summarizer {
			return newLLM(anthropic.New(paidAnthropic(c)...))
		}},
	}
	sums, digests := proxy.ClientPaidSummarizers(routes, digest)
	payer := "each client's own credential, through its own API at its own upstream (no API key configured)"
	kind := config.SummarizerLLM
	switch {
	case len(digests) == len(routes):
		kind = config.SummarizerDigest
		payer = "nobody: no API key for " + config.Prefix + "SUMMARY_BASE_URL (set " + config.Prefix + "SUMMARY_API_KEY to use it; a client's key is only sent to its upstream)"
	case len(digests) > 0:
		payer += "; the digest for " + strings.Join(digests, ", ") + " (no API key for " + config.Prefix + "SUMMARY_BASE_URL)"
	}
	return metrics.Summarizer(sums), kind, payer, digests
}

// operatorPage returns the handler of the operator's page (/ui/) of a
// proxy listening on addr, and what the start-up line says of it: with
// ABRIDGE_UI_TOKEN, it asks for the token; without, it is served only
// when addr is a loopback address, and is off otherwise.
func operatorPage(cfg *config.Config, addr net.Addr, src ui.Source, logger *zap.Logger) (http.Handler, string) {
	at := "http://" + addr.String() + ui.Prefix
	if cfg.UIToken != "" {
		return ui.Handler(ui.Options{Source: src, Token: cfg.UIToken, Logger: logger}),
			"operator's page at " + at + " (" + config.Prefix + "UI_TOKEN asked for)"
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return ui.Handler(ui.Options{Source: src, Logger: logger}), "operator's page at " + at + " (loopback only, no token)"
	}
	why := "this proxy listens on " + addr.String() + ", not a loopback address, and " + config.Prefix +
		"UI_TOKEN is unset (set it to serve the page, which shows the conversations, to whoever has the token)"
	return ui.Off(why), "operator's page off: " + why
}

// fitsServeTimeout refuses a summary timeout that does not leave the
// request it is written for time to reach the upstream: a summarizer that
// hangs would then end every request it compacts in a 504, where it should
// fall back to the digest.
func fitsServeTimeout(cfg *config.Config) error {
	if cfg.Summarizer == config.SummarizerDigest || cfg.SummaryTimeout < cfg.ServeTimeout {
		return nil
	}
	return fmt.Errorf("%sSUMMARY_TIMEOUT (%s) must be shorter than %sSERVE_TIMEOUT (%s): a summary is written inside the request it compacts, which must then still reach the upstream",
		config.Prefix, cfg.SummaryTimeout, config.Prefix, cfg.ServeTimeout)
}

// getOnly answers a request other than GET or HEAD with 405 and the
// methods allowed.
func getOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			apierror.Error{Status: http.StatusMethodNotAllowed, Type: apierror.TypeInvalidRequest, Code: "method_not_allowed",
				Message: fmt.Sprintf("abridge: %s %s: only GET and HEAD are allowed", r.Method, r.URL.Path)}.Write(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopsBack reports whether upstream names the address the proxy listens
// on: a proxy forwarding to itself.
func loopsBack(upstream *url.URL, addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || upstream.Port() != strconv.Itoa(tcp.Port) {
		return false
	}
	host := upstream.Hostname()
	if host == "localhost" {
		return tcp.IP.IsLoopback() || tcp.IP.IsUnspecified()
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(tcp.IP) || tcp.IP.IsUnspecified() || (ip.IsLoopback() && tcp.IP.IsLoopback()))
}

// shownUpstream is the upstream's URL with any secret in it redacted.
func shownUpstream(cfg *config.Config) string {
	if v := cfg.Redacted()[config.EnvOpenAIBaseURL]; v != "" && v != `""` {
		return strings.Trim(v, `"`)
	}
	return cfg.Upstream()
}
