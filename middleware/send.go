package middleware

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
)

// API is the wire API of a request the middleware processes, as its
// method and path name it ([APIOf]): Chat Completions, Responses or
// Anthropic Messages. The zero API names none: a request of it passes
// untouched.
type API struct{ codec wire.Codec }

// APIOf returns the API of a request with method and path: a POST to a
// path ending in /chat/completions, /responses or /v1/messages is one the
// middleware processes; any other request has the zero API.
func APIOf(method, path string) API {
	if method != http.MethodPost {
		return API{}
	}
	return API{wire.ForPath(path)}
}

// Name returns "chat", "responses" or "messages", or "" for the zero API.
func (a API) Name() string {
	if a.codec == nil {
		return ""
	}
	return a.codec.API()
}

// IsChatCompletions reports whether req is a POST to a path ending in
// /chat/completions.
func IsChatCompletions(req *http.Request) bool {
	return APIOf(req.Method, req.URL.Path).Name() == "chat"
}

// Report is what the middleware did with one request, as [Rewriter.Send]
// fills it in: the history's size as the app sent it and as it was sent
// on, the body sent, and the receipts of the compactions made for it. Its
// fields are the figures of the events it emitted for the request; Usage
// is filled in once the answer has been read to its end or closed.
type Report struct {
	// API is the request's wire API ("chat", "responses", "messages"),
	// "" when the request passed untouched.
	API string
	// Model is the request's model, Stream whether it asked for a stream.
	Model  string
	Stream bool
	// Processed is set when the history was given to the processors and
	// the request was sent on (EventProcessed); ChainFailed when they
	// failed, or gave a history the codec could not write, and it went as
	// the app wrote it (EventChainFailed).
	Processed, ChainFailed bool
	// Stored is set when the history is held by the provider and the
	// request was sent on unprocessed (EventStored).
	Stored bool
	// Rejected is the code of the error the request was answered with in
	// the upstream's place (EventRejected), "" when it was sent on.
	Rejected string
	// Client is the history as the app sent it; Sent as it was sent on the
	// last time (the compacted retry after a context overflow), prefill
	// included; FirstTry as it was sent the first time, when Retried. All
	// count tokens alike, from characters (processor.ContentTokens).
	Client, Sent, FirstTry receipt.Size
	// Duration is the time abridge took on the request before sending it
	// the first time (Event.Duration of EventProcessed).
	Duration time.Duration
	// Overflow is set when the provider reported a context overflow
	// (EventOverflow); Retried when the history was compacted and sent
	// again.
	Overflow, Retried bool
	// Body is the body sent on the last time: pieces of the body received
	// and of what the codec wrote.
	Body net.Buffers
	// Conversation is the conversation's opaque id
	// (receipt.ConversationID of the conversation header's id and the
	// history the processors were given), "" when they were not.
	Conversation string
	// Carried is the reference of the last summary marker the processors'
	// history holds (receipt.LastMarkerRef), "" when none or when they
	// failed.
	Carried string
	// Receipts are the receipts of the compactions made for the request,
	// in the order they finished, by the chain's window and by the
	// compaction after a context overflow. Their Writer is
	// receipt.WriterModel unless the digest stood in for the summarizer;
	// the caller sets the conversation, API, model, time and client size.
	Receipts []receipt.Receipt
	// Usage is what the provider reported for the request as it was sent
	// the last time (EventUsage), once the answer has been read to its end
	// or closed; UsageRead says it reported some.
	Usage     processor.Usage
	UsageRead bool
	// AnswerErr is the error a read of the answer's body broke off with
	// (the upstream reset the connection, a deadline passed), nil while
	// none has: the answer of every request Send sends on is watched,
	// one passed untouched included.
	AnswerErr error
}

// Rewriter is the middleware as a value: its Middleware method goes into
// an SDK's WithMiddleware (that is what [New] returns), and [Rewriter.Send]
// is its per-request call, for a host that decided the request's API
// itself and wants to know what the middleware did (the proxy).
type Rewriter struct {
	chain     processor.Processor
	compactor compact.Compactor
	required  bool // the chain holds a required processor: it fails closed
	log       *zap.Logger
	onEvent   func(context.Context, Event)
	anchors   *anchors // nil: no anchoring
	reserve   func(context.Context, int64) (func(), error)
}

// New returns the middleware: chain runs over the history of every request
// of a wire API it knows before it is sent on. A nil chain checks the
// history and sends it unchanged.
func New(chain processor.Processor, opts Options) Middleware {
	return NewRewriter(chain, opts).Middleware
}

// NewRewriter returns the middleware as a value (see [New]).
func NewRewriter(chain processor.Processor, opts Options) *Rewriter {
	if chain == nil {
		chain = processor.Chain()
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	m := &Rewriter{chain: chain, compactor: opts.Compactor, required: processor.IsRequired(chain),
		log: logger, onEvent: opts.OnEvent, reserve: opts.Reserve}
	if m.compactor == nil {
		m.compactor, _ = processor.Last[compact.Compactor](chain)
	}
	switch {
	case opts.Anchors == 0:
		m.anchors = newAnchors(DefaultAnchors)
	case opts.Anchors > 0:
		m.anchors = newAnchors(opts.Anchors)
	}
	return m
}

// Middleware processes req, a request of the API its method and path name
// (APIOf), and sends it on with next: the [Middleware] of [New].
func (m *Rewriter) Middleware(req *http.Request, next Next) (*http.Response, error) {
	return m.send(req, APIOf(req.Method, req.URL.Path), nil, next)
}

// Send processes req as a request of api (the zero API: it passes
// untouched) and sends it on with next, as the middleware does, and fills
// in rep with what it did: rep is complete when Send returns, but for its
// Usage, filled in as the answer's body is read; what Send has done so far
// is in it each time it calls next (a host saves the receipts then, before
// the request they name goes on).
func (m *Rewriter) Send(req *http.Request, api API, rep *Report, next Next) (*http.Response, error) {
	return m.send(req, api, rep, next)
}

// send is Middleware (rep nil: nobody reads what it did) and Send. With a
// rep, the receipts, the conversation and the usage are gathered for it.
func (m *Rewriter) send(req *http.Request, api API, rep *Report, next Next) (*http.Response, error) {
	codec := api.codec
	report := rep != nil
	if rep == nil {
		rep = &Report{}
	}
	*rep = Report{}
	if codec == nil {
		resp, err := next(req)
		if err == nil {
			m.watch(req.Context(), nil, rep, nil, resp, report)
		}
		return resp, err
	}
	rep.API = codec.API()
	start := time.Now()
	ctx := req.Context()
	header := req.Header
	id := req.Header.Get(ConversationHeader)
	if id != "" {
		header = req.Header.Clone()
		header.Del(ConversationHeader)
	}
	var rec *receipt.Recorder
	if id != "" || report {
		// The window learns the conversation's name, and tells this
		// request's recorder of its compactions.
		wr := window.RequestOf(ctx)
		if id != "" {
			wr.Conversation = id
		}
		if report {
			rec = &receipt.Recorder{}
			if prev := wr.OnEvent; prev != nil {
				wr.OnEvent = func(e window.Event) { prev(e); rec.Observe(e) }
			} else {
				wr.OnEvent = rec.Observe
			}
		}
		ctx = window.WithRequest(ctx, wr)
	}
	if err := checkEncoding(req); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return m.reject(ctx, req, codec, nil, rep, err), nil
	}
	data, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("abridge: read request body: %w", err)
	}
	// The body is checked and its tokens counted, then the memory its
	// processing takes is reserved, and only then is it decoded. What
	// processing alone takes is given back once the body to send is
	// written (processed), what the request holds until its answer
	// comes at the end (release).
	release, processed := func() {}, func() {}
	defer func() { processed(); release() }()
	var reserve func(int) error
	var reserved error
	var extra int64 // what processing takes beyond what the request holds
	if m.reserve != nil {
		reserve = func(tokens int) error {
			held := WaitingMemory(len(data), tokens)
			extra = ProcessingMemory(len(data), tokens) - held
			free, err := m.reserve(ctx, held)
			if err == nil {
				release = free
				processed, err = m.reserve(ctx, extra)
			}
			if err != nil {
				processed, reserved = func() {}, err
			}
			return err
		}
	}
	body, err := codec.Parse(data, reserve)
	if reserved != nil {
		return nil, fmt.Errorf("abridge: %w", reserved)
	}
	if err != nil {
		return m.reject(ctx, req, codec, body, rep, err), nil
	}
	rep.Model, rep.Stream = body.Model, body.Stream
	if body.Stored {
		if m.required {
			return m.reject(ctx, req, codec, body, rep, fmt.Errorf("%w: the history is held by the provider (previous_response_id), out of the processors' reach", ErrRequiredFailed)), nil
		}
		// The history is on the provider's side: nothing to process.
		m.emit(ctx, Event{Type: EventStored, API: codec.API(), Model: body.Model, Stream: body.Stream,
			MessagesBefore: len(body.Messages), Duration: time.Since(start)})
		rep.Stored, rep.Body = true, net.Buffers{data}
		return m.forward(ctx, req, header, codec, rep, nil, next, report)
	}
	in, prefill := splitPrefill(body.Messages)
	if err := body.Check(in); err != nil {
		return m.reject(ctx, req, codec, body, rep, err), nil
	}
	var conv conversation
	if m.anchors != nil {
		// The history's last response takes the usage reported for the
		// request it answers; the window's token trigger counts from it.
		conv = m.anchors.keys(codec.API(), body.Model, id, in)
		m.anchors.anchor(in, conv)
	}
	ev := Event{Type: EventProcessed, API: codec.API(), Model: body.Model, Stream: body.Stream,
		MessagesBefore: len(body.Messages), TokensBefore: processor.ContentTokens(body.Messages)}
	if report {
		rep.Conversation = receipt.ConversationID(id, in)
	}
	out, err := m.chain.Process(ctx, in)
	if err == nil {
		if report {
			rep.Carried = receipt.LastMarkerRef(out)
		}
		err = codec.Validate(in, out)
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("abridge: process messages: %w", err)
		}
		if m.required {
			return m.reject(ctx, req, codec, body, rep, fmt.Errorf("%w: %w", ErrRequiredFailed, err)), nil
		}
		// abridge's failure, not the app's: send the request as written.
		m.failed(ctx, rep, ev, err, "middleware: processors failed; request sent unprocessed")
		out = in
	}
	sent, err := body.Buffers(withPrefill(out, prefill))
	if err != nil && m.required {
		return m.reject(ctx, req, codec, body, rep, fmt.Errorf("%w: write request body: %w", ErrRequiredFailed, err)), nil
	}
	if err != nil {
		// A history the codec cannot write (an item of another API):
		// abridge's failure, the request goes as the app wrote it.
		m.failed(ctx, rep, ev, fmt.Errorf("write request body: %w", err), "middleware: processed history not writable; request sent unprocessed")
		out, sent = in, net.Buffers{data}
	}
	processed()
	processed = func() {}
	track := newSentRequest(conv, out, prefill, len(prefill) == 0)
	ev.MessagesAfter, ev.TokensAfter, ev.Estimate, ev.Anchored = track.messages, track.tokens, track.estimate, track.anchored
	ev.Duration = time.Since(start)
	if ce := m.log.Check(zap.DebugLevel, "middleware: processed"); ce != nil {
		ce.Write(zap.String("model", body.Model), zap.Bool("stream", body.Stream),
			zap.Int("messages_before", ev.MessagesBefore), zap.Int("messages_after", ev.MessagesAfter),
			zap.Int("tokens_before", ev.TokensBefore), zap.Int("tokens_after", ev.TokensAfter),
			zap.Duration("duration", ev.Duration))
	}
	rep.Processed, rep.Duration, rep.Body = true, ev.Duration, sent
	rep.Client = receipt.Size{Messages: ev.MessagesBefore, Tokens: ev.TokensBefore}
	rep.Sent = receipt.Size{Messages: track.messages, Tokens: track.tokens}
	rep.Receipts = takeReceipts(rec, rep.Receipts)
	m.emit(ctx, ev)

	resp, err := m.forward(ctx, req, header, codec, rep, track, next, report)
	if err != nil || m.compactor == nil || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	overflow, err := isOverflow(resp, codec)
	if err != nil || !overflow {
		return resp, err
	}
	return m.retry(ctx, req, header, codec, body, out, prefill, track, extra, resp, rep, rec, next, report)
}

// failed reports that the processors failed on ev's request, or gave a
// history the codec cannot write (err): it is sent as the app wrote it.
func (m *Rewriter) failed(ctx context.Context, rep *Report, ev Event, err error, msg string) {
	ev.Type, ev.Err = EventChainFailed, err
	rep.ChainFailed = true
	m.log.Warn(msg, zap.Error(err), zap.String("model", ev.Model))
	m.emit(ctx, ev)
}

// takeReceipts appends to to the receipts rec has recorded since it was
// last taken from; a nil rec has none.
func takeReceipts(rec *receipt.Recorder, to []receipt.Receipt) []receipt.Receipt {
	if rec == nil {
		return to
	}
	return append(to, rec.Take(receipt.WriterModel)...)
}

// sentRequest is what the middleware sent for a request: the history's
// keys, the size of what it forwarded and the basis of its estimate.
type sentRequest struct {
	conv     conversation
	messages int  // messages forwarded, prefill included
	tokens   int  // their tokens, from characters (Event.TokensAfter)
	estimate int  // their estimate (Event.Estimate)
	anchored bool // its basis (Event.Anchored)
	// remember is set when the provider's usage is to anchor the
	// conversation's next request: the history forwarded had no prefill,
	// so the answer follows it as a response of its own.
	remember bool
}

// newSentRequest measures the history a request forwards, out then
// prefill, for the conversation with keys conv.
func newSentRequest(conv conversation, out, prefill []processor.Message, remember bool) *sentRequest {
	return &sentRequest{conv: conv, messages: len(out) + len(prefill),
		tokens:   processor.ContentTokens(out) + processor.ContentTokens(prefill),
		estimate: processor.EstimateTokens(out) + processor.ContentTokens(prefill),
		anchored: anchored(out), remember: remember}
}

// forward sends the request with rep.Body on, and watches the answer for
// the usage the provider reports for sent (nil for a request sent
// unprocessed).
func (m *Rewriter) forward(ctx context.Context, req *http.Request, header http.Header, codec wire.Codec, rep *Report, sent *sentRequest, next Next, report bool) (*http.Response, error) {
	resp, err := next(withBody(ctx, req, header, rep.Body))
	if err == nil {
		m.watch(ctx, codec, rep, sent, resp, report)
	}
	return resp, err
}

// retry compacts out after the provider answered resp, a context
// overflow, and sends the request (out, then prefill) once more when that
// made it smaller; otherwise it returns resp. The compaction takes extra
// bytes of Options.Reserve once more, what processing took, given back
// once the body to send again is written.
func (m *Rewriter) retry(ctx context.Context, req *http.Request, header http.Header, codec wire.Codec, body *wire.Body, out, prefill []processor.Message, first *sentRequest, extra int64, resp *http.Response, rep *Report, rec *receipt.Recorder, next Next, report bool) (*http.Response, error) {
	ev := Event{Type: EventOverflow, API: codec.API(), Model: body.Model, Stream: body.Stream,
		MessagesBefore: len(out), TokensBefore: processor.ContentTokens(out)}
	rep.Overflow = true
	start := time.Now()
	free := func() {}
	var err error
	if m.reserve != nil {
		if free, err = m.reserve(ctx, extra); err != nil {
			free = func() {}
		}
	}
	defer func() { free() }()
	var smaller []processor.Message
	if err == nil {
		smaller, err = m.compactor.Compact(ctx, out)
		rep.Receipts = takeReceipts(rec, rep.Receipts)
	}
	if err == nil {
		if verr := codec.Validate(out, smaller); verr != nil {
			err = fmt.Errorf("the compacted history is not one the %s API accepts: %w", codec.API(), verr)
		}
	}
	ev.Duration = time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("abridge: compact after context overflow: %w", err)
		}
		ev.Err = err
		m.log.Warn("middleware: compaction after context overflow failed", zap.Error(err))
		m.emit(ctx, ev)
		return resp, nil
	}
	ev.MessagesAfter, ev.TokensAfter = len(smaller), processor.ContentTokens(smaller)
	if len(smaller) >= len(out) {
		// Nothing left to compact: the provider's answer stands.
		m.emit(ctx, ev)
		return resp, nil
	}
	sent, err := body.Buffers(withPrefill(smaller, prefill))
	if err != nil {
		// Not writable in the request's API: the provider's answer stands.
		ev.Err = fmt.Errorf("write request body: %w", err)
		m.log.Warn("middleware: compacted history not writable; no retry", zap.Error(err))
		m.emit(ctx, ev)
		return resp, nil
	}
	free()
	free = func() {}
	_ = resp.Body.Close()
	ev.Retried = true
	m.log.Info("middleware: context overflow; compacted and retrying",
		zap.String("model", body.Model), zap.Int("messages_before", ev.MessagesBefore), zap.Int("messages_after", ev.MessagesAfter),
		zap.Int("tokens_before", ev.TokensBefore), zap.Int("tokens_after", ev.TokensAfter))
	track := newSentRequest(first.conv, smaller, prefill, first.remember)
	rep.Retried, rep.Body, rep.FirstTry = true, sent, rep.Sent
	rep.Sent = receipt.Size{Messages: track.messages, Tokens: track.tokens}
	m.emit(ctx, ev)
	return m.forward(ctx, req, header, codec, rep, track, next, report)
}

func (m *Rewriter) emit(ctx context.Context, e Event) {
	if m.onEvent != nil {
		m.onEvent(ctx, e)
	}
}

// reject answers the request with a 400 (415 for a compressed body)
// naming what is wrong with it.
func (m *Rewriter) reject(ctx context.Context, req *http.Request, codec wire.Codec, body *wire.Body, rep *Report, err error) *http.Response {
	e := Rejection(err)
	ev := Event{Type: EventRejected, API: codec.API(), Code: e.Code, Err: err}
	if body != nil {
		ev.Model, ev.Stream, ev.MessagesBefore = body.Model, body.Stream, len(body.Messages)
	}
	rep.Rejected = e.Code
	if e.Status >= http.StatusInternalServerError {
		m.log.Warn("middleware: processing failed; request refused, not sent unprocessed", zap.String("code", e.Code), zap.Error(err))
	} else {
		m.log.Debug("middleware: request rejected", zap.String("code", e.Code), zap.Error(err))
	}
	m.emit(ctx, ev)
	data := codec.Refuse(e.Status, e.Code, e.Message)
	return &http.Response{
		Status:        strconv.Itoa(e.Status) + " " + http.StatusText(e.Status),
		StatusCode:    e.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(data))}},
		Body:          io.NopCloser(bytes.NewReader(data)),
		ContentLength: int64(len(data)),
		Request:       req,
	}
}
