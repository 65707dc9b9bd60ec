// Command proxyload puts abridge's proxy under load: N conversations at
// once (200 by default), each a client replaying an agent conversation
// with its full history, request after request, through one proxy in front
// of a fake upstream (package openaitest) on the loopback interface. It
// reports the errors (there must be none), the upstream's own time per
// request, the latency the proxy adds (what the client waited minus the
// upstream's own time), abridge's processing inside it (reading the body,
// the trimmer and the window, writing the body), over all requests and over
// those that did not wait for a summary (the window writes its summaries
// ahead, in the background: a request waits for one only past the hard
// limits; -summary-latency sets how long the summarizer's model takes,
// apart from the upstream's answers to clients), how many requests waited
// for a summary and how many went out uncompacted while theirs was
// written, where the added time went (from the client to the proxy's
// handler, to the body processed, to the upstream's handler, and back),
// and, for scale, the time
// encoding/json takes to decode the same request bodies, one at a time
// after the run: into a generic value, and into openai-go's request type
// (what a Go service that reads the request decodes it into). Then it
// replays every request again, alone, through the middleware on the same
// chain, and reports abridge's processing against the decode of the same
// body, each the least of 3 passes: under load the percentiles of both
// are mostly the scheduler's, alone they compare like with like.
//
// The conversations start spread evenly over -ramp (by default one upstream
// latency), as clients arrive, not all in the same millisecond; with an
// upstream that answers at once they all start together and the run
// measures the proxy saturated. -bare puts a plain reverse proxy without
// abridge in its place, the cost of the extra hop alone; -bare -decode json
// makes that proxy read each body whole and decode it with encoding/json
// before it forwards it unchanged, the cost of a proxy whose processing is
// the decode abridge's is measured against (-decode jsonv2: with
// github.com/go-json-experiment/json, which reads a body in one pass).
//
//	go run ./cmd/proxyload -latency 1s -summary-latency 3s   # 200 conversations, an upstream that takes 1 s, summaries 3 s
//	go run ./cmd/proxyload -latency 1s          # the same, the summaries taking 1 s too
//	go run ./cmd/proxyload -latency 1s -bare    # the same through a reverse proxy without abridge
//	go run ./cmd/proxyload -latency 1s -bare -decode json  # through one that decodes each body first
//	go run ./cmd/proxyload                      # an upstream that answers at once: the proxy saturated
//	go run ./cmd/proxyload -conversations 1     # one at a time: no queueing
//	go run ./cmd/proxyload -db postgres://…     # summaries in PostgreSQL, as replicas keep them
//	go run ./cmd/proxyload -conversations 500 -runs 2   # twice through one proxy: the memory after each run
//	go run ./cmd/proxyload -stalled 40          # the stalled-body attack: 40 bodies of 32 MiB, all but 1 MiB sent
//	go run ./cmd/proxyload -stalled 60 -stalled-sent 0  # 60 connections announcing 32 MiB, the headers alone
//
// The conversations are the shared transcripts (../shared/transcripts,
// each made distinct by a first system message naming the conversation),
// their first -messages messages, or made-up tool conversations when the
// shared set is absent. Every second request is streamed. -api sends them
// as Chat Completions (the default), as OpenAI Responses API requests
// (input items, function calls and their outputs) or as Anthropic Messages
// requests (tool_use and tool_result blocks):
//
//	go run ./cmd/proxyload -latency 1s -api responses
//	go run ./cmd/proxyload -latency 1s -api messages -bare
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"go.uber.org/zap"

	"github.com/abridge-go/abridge/config"
	"github.com/abridge-go/abridge/middleware"
	openaimodel "github.com/abridge-go/abridge/model/openai"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/summarizer/llm"
	"github.com/abridge-go/abridge/testkit/openaitest"
	"github.com/abridge-go/abridge/testkit/transcripts"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "proxyload:", err)
		os.Exit(1)
	}
}

type options struct {
	conversations int
	messages      int
	latency       time.Duration
	ramp          time.Duration
	db            string
	bare          bool
	decode        string
	api           string
	runs          int
	summary       time.Duration
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("proxyload", flag.ContinueOnError)
	var o options
	fs.IntVar(&o.conversations, "conversations", 200, "conversations at once")
	fs.IntVar(&o.messages, "messages", 120, "messages of each conversation replayed")
	fs.DurationVar(&o.latency, "latency", 0, "how long the fake upstream takes over each answer to a client")
	fs.DurationVar(&o.summary, "summary-latency", 0, "how long the fake upstream takes over each summary (when not given: -latency)")
	fs.DurationVar(&o.ramp, "ramp", 0, "the conversations start spread evenly over this time (when not given: -latency)")
	fs.BoolVar(&o.bare, "bare", false, "a plain reverse proxy without abridge in place of abridge's (the cost of the hop alone)")
	fs.StringVar(&o.decode, "decode", "", "with -bare: the reverse proxy reads each body whole and decodes it into a generic value before it forwards it unchanged, with `json` (encoding/json) or jsonv2 (github.com/go-json-experiment/json): a proxy whose processing is that decode and nothing more")
	fs.StringVar(&o.db, "db", "", "summary store: empty for memory, else a session database DSN (a SQLite path or a postgres:// URL)")
	fs.StringVar(&o.api, "api", openaitest.APIChat, "the API of the requests: chat, responses or messages")
	fs.IntVar(&o.runs, "runs", 1, "replay the conversations this many times through the same proxy, reporting the memory before the first run and after each")
	stalled := fs.Int("stalled", 0, "instead of the load, the stalled-body attack: `N` connections each announce a -stalled-mb body, send all of it but 1 MiB and stall")
	stalledMB := fs.Int("stalled-mb", 32, "the body each stalled connection announces, in MiB")
	stalledTimeout := fs.Duration("stalled-timeout", proxy.DefaultBodyTimeout, "the proxy's body timeout under the attack")
	stalledSent := fs.Int("stalled-sent", -1, "how much of it each stalled connection sends, in MiB (-1: all but the last MiB; 0: the headers alone)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stalled > 0 {
		if *stalledSent < 0 {
			*stalledSent = *stalledMB - 1
		}
		if *stalledMB < 1 || *stalledSent >= *stalledMB {
			return errors.New("-stalled-mb must be ≥ 1 and -stalled-sent less than it")
		}
		return stalledAttack(*stalled, int64(*stalledMB)<<20, int64(*stalledSent)<<20, *stalledTimeout, stdout)
	}
	if o.decode != "" && !o.bare {
		return errors.New("-decode goes with -bare")
	}
	unmarshal, ok := decoders[o.decode]
	if !ok {
		return fmt.Errorf("-decode %q: want json or jsonv2", o.decode)
	}
	if o.conversations < 1 || o.messages < 3 || o.runs < 1 {
		return errors.New("-conversations and -runs must be ≥ 1 and -messages ≥ 3")
	}
	rampSet := false
	fs.Visit(func(f *flag.Flag) { rampSet = rampSet || f.Name == "ramp" })
	if !rampSet {
		o.ramp = o.latency
	}
	if o.ramp < 0 || o.latency < 0 || o.summary < 0 {
		return errors.New("-ramp, -latency and -summary-latency must be ≥ 0")
	}
	if _, err := openaitest.NewBodies(o.api, nil); err != nil {
		return fmt.Errorf("-api: %w", err)
	}
	convs, source, err := conversations(o)
	if err != nil {
		return err
	}
	// Each conversation converted to the API once, so that the clients
	// spend little on each body.
	bodies := make([]*openaitest.Bodies, len(convs))
	for c, msgs := range convs {
		if bodies[c], err = openaitest.NewBodies(o.api, msgs); err != nil {
			return fmt.Errorf("conversation %d: %w", c, err)
		}
	}

	var st stamps
	up := &openaitest.Upstream{Discard: true, Latency: o.latency, SummaryLatency: o.summary}
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.stamp(r.Header.Get(requestHeader), atUpstream)
		up.ServeHTTP(w, r)
	}))
	defer upSrv.Close()

	ctx := context.Background()
	cfg := config.Default()
	var mu sync.Mutex
	var store window.Store
	if o.db != "" {
		d, err := config.SessionDriver(o.db)
		if err != nil {
			return err
		}
		st, err := session.Open(ctx, d, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		store = st.Summaries()
	}
	var waits []time.Duration
	var deferred, aheadWritten, aheadWasted atomic.Int64
	chain, win, err := newChain(cfg, upSrv.URL, store, func(e window.Event) {
		switch e.Type {
		case window.EventFinished:
			if e.Waited > 0 {
				mu.Lock()
				waits = append(waits, e.Waited)
				mu.Unlock()
			}
		case window.EventDeferred:
			deferred.Add(1)
		case window.EventAheadFinished:
			aheadWritten.Add(1)
		case window.EventAheadWasted:
			aheadWasted.Add(1)
		}
	})
	if err != nil {
		return err
	}
	defer win.Close(context.Background())
	var processing, processingPlain []time.Duration
	summarized := map[string]bool{}
	base, _ := url.Parse(upSrv.URL + "/v1")
	p := proxy.New(proxy.Options{
		Upstream:  base,
		Chain:     chain,
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024},
		OnEvent: func(ctx context.Context, e middleware.Event) {
			info, ok := ctx.Value(reqKey{}).(*reqInfo)
			if e.Type != middleware.EventProcessed || !ok {
				return
			}
			st.stamp(info.id, atProcessed)
			mu.Lock()
			defer mu.Unlock()
			processing = append(processing, e.Duration)
			if info.summarized.Load() {
				summarized[info.id] = true
			} else {
				processingPlain = append(processingPlain, e.Duration)
			}
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var handler http.Handler = p
	if o.bare {
		handler = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(base)
				pr.Out.URL.Path = base.Path + strings.TrimPrefix(pr.In.URL.Path, proxy.Prefix)
			},
			Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024},
		}
		if unmarshal != nil {
			handler = decodingFirst(handler, unmarshal, &st)
		}
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &reqInfo{id: r.Header.Get(requestHeader)}
		st.stamp(info.id, atProxy)
		handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reqKey{}, info)))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	proxyURL := "http://" + ln.Addr().String() + proxy.Prefix + openaitest.APIPath(o.api)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024}}
	var (
		samples []sample
		errs    []error
		wg      sync.WaitGroup
	)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	var elapsed time.Duration
	var memory []string
	if o.runs > 1 {
		// Where the heap starts, the conversations loaded: each run's
		// memory is read against it.
		memory = append(memory, "before run 1: "+memoryInUse())
	}
	for run := 1; run <= o.runs; run++ {
		start := time.Now()
		for c, msgs := range convs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(c) * o.ramp / time.Duration(len(convs)))
				for i, n := range openaitest.RequestLengths(msgs) {
					id := fmt.Sprintf("%d/%d/%d", run, c, i)
					st.stamp(id, atClient)
					s, err := send(client, proxyURL, bodies[c].Body(n, i%2 == 1), c, id)
					s.at = st.of(id)
					mu.Lock()
					if err != nil {
						errs = append(errs, fmt.Errorf("run %d, conversation %d, request %d: %w", run, c, i, err))
					} else {
						s.summarized = summarized[id]
						samples = append(samples, s)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
		if o.runs > 1 {
			memory = append(memory, fmt.Sprintf("after run %d: %s", run, memoryInUse()))
		}
	}
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}

	// encoding/json over the same bodies, one at a time: into a generic
	// value, and into openai-go's request type (none for Messages).
	var decode, decodeParams []time.Duration
	params, paramsName := typedParams(o.api)
	for c, msgs := range convs {
		for i, n := range openaitest.RequestLengths(msgs) {
			body := bodies[c].Body(n, i%2 == 1)
			t0 := time.Now()
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				return err
			}
			decode = append(decode, time.Since(t0))
			if params == nil {
				continue
			}
			t1 := time.Now()
			if err := json.Unmarshal(body, params()); err != nil {
				return err
			}
			decodeParams = append(decodeParams, time.Since(t1))
		}
	}

	// Each request again, alone, through the same chain (its window as
	// the run left it): abridge's processing and the decode, least of
	// alonePasses each, with no other request competing for the cores.
	var lone aloneResult
	if !o.bare {
		if lone, err = replayAlone(chain, o.api, convs, bodies, alonePasses); err != nil {
			return err
		}
	}

	var added, addedPlain, own []time.Duration
	for _, s := range samples {
		own = append(own, s.upstream)
		added = append(added, s.total-s.upstream)
		if !s.summarized {
			addedPlain = append(addedPlain, s.total-s.upstream)
		}
	}
	chats, summaries := up.Counts()
	through := "abridge's proxy"
	if o.bare {
		through = "a reverse proxy without abridge (-bare)"
		if o.decode != "" {
			through = fmt.Sprintf("a reverse proxy without abridge that decodes each body first (-bare -decode %s)", o.decode)
		}
	}
	summaryLatency := o.summary
	if summaryLatency == 0 {
		summaryLatency = o.latency
	}
	fmt.Fprintf(stdout, "%d conversations of up to %d messages (%s) as %s requests through %s, summaries in %s, upstream latency %s (summaries %s), started over %s\n",
		len(convs), o.messages, source, apiName[o.api], through, storeName(o.db), o.latency, summaryLatency, o.ramp)
	if o.runs > 1 {
		fmt.Fprintf(stdout, "%d runs, the figures below over all of them\n", o.runs)
		for _, line := range memory {
			fmt.Fprintln(stdout, line)
		}
	}
	fmt.Fprintf(stdout, "%d requests in %.1f s (%.0f a second), %d errors, %d forwarded, %d summaries\n",
		len(samples)+len(errs), elapsed.Seconds(), float64(len(samples))/elapsed.Seconds(), len(errs), chats, summaries)
	fmt.Fprintf(stdout, "%-44s %9s %9s\n", "", "p50", "p99")
	row := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return // abridge's rows, under -bare
		}
		fmt.Fprintf(stdout, "%-44s %9s %9s\n", name, ms(percentile(d, 50)), ms(percentile(d, 99)))
	}
	row("upstream's own time", own)
	row("added by the proxy (client's wait − upstream)", added)
	row("  of which abridge's processing", processing)
	row("added, requests that waited for no summary", addedPlain)
	row("  of which abridge's processing", processingPlain)
	row("encoding/json decode of the same bodies", decode)
	row("  into "+paramsName, decodeParams)
	decodes := []struct {
		name string
		p99  time.Duration
	}{{"decode", percentile(decode, 99)}}
	if params != nil {
		decodes = append(decodes, struct {
			name string
			p99  time.Duration
		}{"openai-go decode", percentile(decodeParams, 99)})
	}
	for _, d := range decodes {
		fmt.Fprintf(stdout, "p99 ÷ p99 %s: added %.2f, without summary waits %.2f", d.name,
			ratio(percentile(added, 99), d.p99), ratio(percentile(addedPlain, 99), d.p99))
		if len(processingPlain) > 0 {
			fmt.Fprintf(stdout, ", abridge's processing without summary waits %.2f", ratio(percentile(processingPlain, 99), d.p99))
		}
		fmt.Fprintln(stdout)
	}
	if !o.bare {
		over := 0
		for _, s := range samples {
			if s.total-s.upstream > time.Second {
				over++
			}
		}
		fmt.Fprintf(stdout, "summaries: %d requests waited for one (p99 of those %s), %d added over 1 s; %d went out uncompacted while theirs was written; "+
			"%d written ahead, %d of them or of those to be abandoned unused\n",
			len(waits), ms(percentile(waits, 99)), over, deferred.Load(), aheadWritten.Load(), aheadWasted.Load())
	}
	breakdown(stdout, samples, o.bare && o.decode == "")
	if !o.bare {
		lone.report(stdout)
	}
	for i, err := range errs {
		if i == 5 {
			fmt.Fprintf(stdout, "… %d more errors\n", len(errs)-5)
			break
		}
		fmt.Fprintln(stdout, "error:", err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d requests failed", len(errs), len(samples)+len(errs))
	}
	return nil
}

// newChain returns the chain of the configuration cfg and its window,
// whose summarizer calls the upstream at upURL and keeps its summaries in
// store (memory when nil). The window marks the reqInfo of a request's
// context when the request waited for a summary, and gives each event to
// on.
func newChain(cfg *config.Config, upURL string, store window.Store, on func(window.Event)) (processor.Processor, *window.Window, error) {
	sm := openaimodel.New(openaimodel.WithBaseURL(upURL+"/v1"), openaimodel.WithAPIKey("sk-load"), openaimodel.WithMaxRetries(0))
	comp, err := cfg.Build(config.BuildOptions{Logger: zap.NewNop(), Summarizer: llm.New(sm, llm.Options{}), Store: store,
		OnEvent: func(ctx context.Context, e window.Event) {
			if info, ok := ctx.Value(reqKey{}).(*reqInfo); ok && e.Type == window.EventFinished && e.Waited > 0 {
				info.summarized.Store(true)
			}
			if on != nil {
				on(e)
			}
		}})
	if err != nil {
		return nil, nil, err
	}
	return comp.Chain, comp.Window, nil
}

// requestHeader names each request for the report.
const requestHeader = "Proxyload-Request"

// reqInfo is what the proxy tells of one request.
type reqInfo struct {
	id         string
	summarized atomic.Bool
}

type reqKey struct{}

// sample is what the client measured of one request.
type sample struct {
	// at is when the request reached each place on its way (see
	// stamps), zero where it did not.
	at              [places]time.Time
	total, upstream time.Duration
	summarized      bool // it waited for a summary
}

// send posts one request and reads the whole answer.
func send(client *http.Client, url string, body []byte, conv int, id string) (s sample, err error) {
	anthropic := strings.HasSuffix(url, openaitest.APIPath(openaitest.APIMessages))
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return s, err
	}
	req.Header.Set("Content-Type", "application/json")
	if anthropic {
		req.Header.Set("X-Api-Key", "sk-ant-load")
		req.Header.Set("Anthropic-Version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer sk-load")
	}
	req.Header.Set(middleware.ConversationHeader, strconv.Itoa(conv))
	req.Header.Set(requestHeader, id)
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return s, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.total = time.Since(t0)
	if err != nil {
		return s, err
	}
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	ns, err := strconv.ParseInt(resp.Header.Get(openaitest.DurationHeader), 10, 64)
	if err != nil {
		return s, fmt.Errorf("no %s header", openaitest.DurationHeader)
	}
	s.upstream = time.Duration(ns)
	return s, nil
}

// apiName names each -api in the report.
var apiName = map[string]string{
	openaitest.APIChat:      "Chat Completions",
	openaitest.APIResponses: "Responses API",
	openaitest.APIMessages:  "Anthropic Messages",
}

// typedParams returns a function making a new value of openai-go's request
// type of api, and its name; nil for Messages (openai-go has none).
func typedParams(api string) (func() any, string) {
	switch api {
	case openaitest.APIChat:
		return func() any { return &openai.ChatCompletionNewParams{} }, "openai.ChatCompletionNewParams"
	case openaitest.APIResponses:
		return func() any { return &responses.ResponseNewParams{} }, "responses.ResponseNewParams"
	}
	return nil, ""
}

// conversations returns the replayed conversations and where they come
// from.
func conversations(o options) ([][]json.RawMessage, string, error) {
	var files []string
	if dir, ok := transcripts.SharedDir(); ok {
		files, _ = filepath.Glob(filepath.Join(dir, "*.json"))
		slices.Sort(files)
	}
	if len(files) == 0 {
		out := make([][]json.RawMessage, o.conversations)
		for i := range out {
			out[i] = openaitest.ToolConversation(o.messages, fmt.Sprintf("project %d", i))
		}
		return out, "made-up tool conversations", nil
	}
	out, err := fromFiles(files, o.conversations, o.messages)
	if err != nil {
		return nil, "", err
	}
	return out, fmt.Sprintf("the %d shared transcripts, in turn", len(files)), nil
}

// fromFiles returns n conversations of the transcripts files, in turn:
// the first messages-1 messages of each, after a first system message
// naming the conversation, so that no two are the same.
func fromFiles(files []string, n, messages int) ([][]json.RawMessage, error) {
	out := make([][]json.RawMessage, n)
	for i := range out {
		msgs, err := openaitest.LoadConversation(files[i%len(files)], messages-1)
		if err != nil {
			return nil, err
		}
		first, _ := json.Marshal(map[string]string{"role": "system", "content": fmt.Sprintf("Conversation %d.", i)})
		out[i] = append([]json.RawMessage{first}, msgs...)
	}
	return out, nil
}

// storeName says where the summaries are kept: in memory without a
// database, else as the database's driver says (config.SessionDriver).
func storeName(dsn string) string {
	if dsn == "" {
		return "memory"
	}
	d, err := config.SessionDriver(dsn)
	if err != nil {
		return ""
	}
	return d.String()
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// decoders are the decoders of -decode, by name ("": none).
var decoders = map[string]func([]byte, any) error{
	"":       nil,
	"json":   func(data []byte, v any) error { return json.Unmarshal(data, v) },
	"jsonv2": func(data []byte, v any) error { return jsonv2.Unmarshal(data, v) },
}

// decodingFirst returns next after each body is read whole and decoded
// into a generic value by unmarshal, noted as processed in st: a proxy
// whose processing is that decode and nothing more (with encoding/json,
// the decode abridge's processing is measured against).
func decodingFirst(next http.Handler, unmarshal func([]byte, any) error, st *stamps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		var v any
		if err == nil {
			err = unmarshal(data, &v)
		}
		if err != nil {
			http.Error(w, "read the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		st.stamp(r.Header.Get(requestHeader), atProcessed)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
		next.ServeHTTP(w, r)
	})
}

// Places a request passes on its way, where the load command notes the
// time: the client sends it, the proxy's handler starts on it, abridge has
// processed it (under -bare, only with -decode: decoded it), the upstream's
// handler starts on it.
const (
	atClient = iota
	atProxy
	atProcessed
	atUpstream
	places
)

// stamps holds when each request, by ID, reached each place.
type stamps struct {
	mu sync.Mutex
	at map[string][places]time.Time
}

// stamp notes that the request id reached place now ("" is no request of
// the load's: a summary).
func (s *stamps) stamp(id string, place int) {
	if id == "" {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string][places]time.Time{}
	}
	at := s.at[id]
	at[place] = now
	s.at[id] = at
}

// of returns and forgets when the request id reached each place.
func (s *stamps) of(id string) [places]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.at[id]
	delete(s.at, id)
	return at
}

// breakdown writes where the time the proxy added went: from the client to
// the proxy's handler (connecting, the headers, waiting for a core), from
// there to the body processed (reading it, abridge's processing, and
// waiting for a core), from there to the upstream's handler (forwarding),
// and the rest (the answer's way back), at p50 and p99 over all requests
// and on average over the slowest 1% (by added time). Through the bare
// proxy the second and third are one.
func breakdown(w io.Writer, samples []sample, bare bool) {
	type segment struct {
		name       string
		from, to   int
		all, worst []time.Duration
	}
	segs := []*segment{{name: "client → proxy's handler", from: atClient, to: atProxy}}
	if bare {
		segs = append(segs, &segment{name: "proxy's handler → upstream's handler", from: atProxy, to: atUpstream})
	} else {
		segs = append(segs, &segment{name: "proxy's handler → body processed", from: atProxy, to: atProcessed},
			&segment{name: "body processed → upstream's handler", from: atProcessed, to: atUpstream})
	}
	rest := &segment{name: "the rest: the answer's way back"}
	byAdded := slices.Clone(samples)
	slices.SortFunc(byAdded, func(a, b sample) int { return cmp.Compare(a.total-a.upstream, b.total-b.upstream) })
	slowest := len(byAdded) - max(1, len(byAdded)/100)
	for i, s := range byAdded {
		left := s.total - s.upstream
		complete := true
		for _, seg := range segs {
			if s.at[seg.from].IsZero() || s.at[seg.to].IsZero() {
				complete = false
			}
		}
		if !complete {
			continue
		}
		for _, seg := range segs {
			d := s.at[seg.to].Sub(s.at[seg.from])
			left -= d
			seg.all = append(seg.all, d)
			if i >= slowest {
				seg.worst = append(seg.worst, d)
			}
		}
		rest.all = append(rest.all, left)
		if i >= slowest {
			rest.worst = append(rest.worst, left)
		}
	}
	if len(rest.all) == 0 {
		return
	}
	fmt.Fprintln(w, "where the added time went (the upstream's handler reads the body and answers in its own time):")
	fmt.Fprintf(w, "%-44s %9s %9s %18s\n", "", "p50", "p99", "slowest 1%, mean")
	for _, seg := range append(segs, rest) {
		var sum time.Duration
		for _, d := range seg.worst {
			sum += d
		}
		mean := time.Duration(0)
		if len(seg.worst) > 0 {
			mean = sum / time.Duration(len(seg.worst))
		}
		fmt.Fprintf(w, "  %-42s %9s %9s %18s\n", seg.name, ms(percentile(seg.all, 50)), ms(percentile(seg.all, 99)), ms(mean))
	}
}
