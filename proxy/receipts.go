package proxy

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/receipt"
)

// The headers the proxy adds to the answer to every request it processed.
const (
	// HeaderReceipt is the path of the receipt's page (ReceiptPath) of the
	// compaction the forwarded history carries: the newest, made for this
	// request or before. Absent when the history carries none, or when
	// the proxy keeps no receipts.
	HeaderReceipt = "Abridge-Receipt"
	// HeaderCompaction is "new" when this request was compacted, and
	// "carried" when its history carries a compaction made before; absent
	// with HeaderReceipt.
	HeaderCompaction = "Abridge-Compaction"
	// HeaderMessages and HeaderTokens give the history's size as the
	// client sent it and as it was forwarded, "BEFORE AFTER" (messages,
	// and tokens estimated at about 4 characters each: the
	// tokens_before and tokens_after of the request's log line).
	HeaderMessages = "Abridge-Messages"
	HeaderTokens   = "Abridge-Tokens"
)

// ReceiptPath is the path of the page of the receipt with id, as
// HeaderReceipt gives it: abridge serve serves it.
func ReceiptPath(id string) string { return "/ui/receipts/" + id }

// ReceiptStore is where a proxy keeps receipts and request records: the
// Receipts of a session store (session.Store) is one. It must be safe for
// concurrent use.
type ReceiptStore interface {
	// SaveReceipt records a receipt, unless one with its id is recorded.
	SaveReceipt(ctx context.Context, r receipt.Receipt) error
	// FindReceipt returns the id of the newest receipt of conversation
	// whose summary has reference ref.
	FindReceipt(ctx context.Context, conversation, ref string) (id string, found bool, err error)
	// SetUsage records the provider's usage of the first request sent
	// with a receipt's marker (first), or of the next one, unless
	// recorded.
	SetUsage(ctx context.Context, id string, first bool, u receipt.Usage) error
	// AddRequests records requests.
	AddRequests(ctx context.Context, reqs ...receipt.Request) error
}

// ReceiptOptions configures [NewReceipts]. The zero value means: the
// summaries are the model's, no logging.
type ReceiptOptions struct {
	// Writer names who writes the summaries of an API's requests when the
	// window's summarizer succeeds (receipt.WriterModel, or
	// receipt.WriterDigest when the digest is the summarizer). Nil means
	// receipt.WriterModel for every API.
	Writer func(api string) string
	// Logger receives a warning when the store fails. Nil means none.
	Logger *zap.Logger
}

// Receipts records, for a [Proxy], a receipt of every compaction made
// while it processes a request and a record of every request it forwards,
// in a [ReceiptStore], and names the receipt in each answer's
// HeaderReceipt. The window of the proxy's chain must pass its events to
// receipt.Observe (its Options.OnEvent, or a callback that calls it).
//
// A receipt is saved before its request is sent on, so that its page
// exists when the answer names it; the request records, and the
// provider's usage of the requests sent with a receipt, are written in
// the background, in the order the answers ended, and [Receipts.Close]
// waits for them. It is safe for concurrent use.
type Receipts struct {
	store  ReceiptStore
	writer func(api string) string
	log    *zap.Logger

	mu     sync.RWMutex
	queue  chan record
	closed bool
	done   chan struct{}

	refs refCache
}

// record is what the background writer writes for one request.
type record struct {
	req   receipt.Request
	usage *receipt.Usage // the usage of req.Receipt's first or next request
}

// receiptQueue bounds the records waiting to be written; past it a
// record is dropped and a warning logged.
const receiptQueue = 4096

// receiptBatch bounds the records written in one transaction.
const receiptBatch = 64

// NewReceipts returns the receipts of a proxy kept in store, and starts
// its background writer: give it to the proxy (Options.Receipts), and
// Close it once the proxy serves no more requests.
func NewReceipts(store ReceiptStore, opts ReceiptOptions) *Receipts {
	r := &Receipts{store: store, writer: opts.Writer, log: opts.Logger, queue: make(chan record, receiptQueue),
		done: make(chan struct{}), refs: refCache{m: map[[2]string]string{}}}
	if r.writer == nil {
		r.writer = func(string) string { return receipt.WriterModel }
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	go r.write()
	return r
}

// Close writes the records waiting to be written, then stops the
// background writer. Records of requests ending after Close are dropped.
func (r *Receipts) Close() error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	<-r.done
	return nil
}

// write writes the queued records, a batch at a time, until Close.
func (r *Receipts) write() {
	defer close(r.done)
	for first := range r.queue {
		batch := []record{first}
	fill:
		for len(batch) < receiptBatch {
			select {
			case rec, ok := <-r.queue:
				if !ok {
					break fill
				}
				batch = append(batch, rec)
			default:
				break fill
			}
		}
		r.writeBatch(batch)
	}
}

func (r *Receipts) writeBatch(batch []record) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reqs := make([]receipt.Request, len(batch))
	for i, b := range batch {
		reqs[i] = b.req
	}
	if err := r.store.AddRequests(ctx, reqs...); err != nil {
		r.log.Warn("proxy: request records not written", zap.Int("requests", len(reqs)), zap.Error(err))
	}
	for _, b := range batch {
		if b.usage == nil {
			continue
		}
		if err := r.store.SetUsage(ctx, b.req.Receipt, b.req.Compacted, *b.usage); err != nil {
			r.log.Warn("proxy: receipt usage not written", zap.String("receipt", b.req.Receipt), zap.Error(err))
		}
	}
}

// enqueue hands rec to the background writer, or drops it when the
// writer is closed or too far behind.
func (r *Receipts) enqueue(rec record) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.queue <- rec:
	default:
		r.log.Warn("proxy: request record dropped: the session store is too far behind", zap.Int("waiting", receiptQueue))
	}
}

// trail is what the receipts learn of one request.
type trail struct {
	rec          *receipt.Recorder
	scope        string // the conversation header's id
	conversation string // receipt.ConversationID, once the chain ran
	carried      string // the reference of the last marker the chain's output holds
	chainFailed  bool
	api, model   string
	client, sent receipt.Size
	usage        *receipt.Usage
	receipt      string // the id of the compaction the forwarded history carries
	compacted    bool   // made for this request
}

// begin starts the trail of a request the proxy processes, in ex, and
// returns ctx with the recorder the window's events go to.
func (r *Receipts) begin(ctx context.Context, ex *exchange, req *http.Request) context.Context {
	ctx, rec := receipt.WithRecorder(ctx)
	ex.trail = &trail{rec: rec, scope: req.Header.Get(middleware.ConversationHeader)}
	return ctx
}

// chain puts next between two steps that change nothing: the first tells
// the trail of each request its conversation, the last the marker it
// forwards. Being steps of the chain, not a wrapper around it, they leave
// next's processors in sight of the middleware, which finds the window and
// the processors marked required among them.
func (r *Receipts) chain(next processor.Processor) processor.Processor {
	first := processor.Func(func(ctx context.Context, in []processor.Message) ([]processor.Message, error) {
		if t := trailOf(ctx); t != nil {
			t.conversation = receipt.ConversationID(t.scope, in)
		}
		return in, nil
	})
	last := processor.Func(func(ctx context.Context, out []processor.Message) ([]processor.Message, error) {
		if t := trailOf(ctx); t != nil {
			t.carried = receipt.LastMarkerRef(out)
		}
		return out, nil
	})
	return processor.Chain(first, next, last)
}

// trailOf returns the trail of the request ctx comes from, or nil.
func trailOf(ctx context.Context) *trail {
	ex := exchangeOf(ctx)
	if ex == nil {
		return nil
	}
	return ex.trail
}

// event follows the middleware's events of the request: its sizes, the
// compactions made for it (saved at once), the one it carries, and the
// provider's usage.
func (r *Receipts) event(ctx context.Context, t *trail, e middleware.Event) {
	switch e.Type {
	case middleware.EventProcessed:
		t.api, t.model = e.API, e.Model
		t.client = receipt.Size{Messages: e.MessagesBefore, Tokens: e.TokensBefore}
		t.sent = receipt.Size{Messages: e.MessagesAfter, Tokens: e.TokensAfter}
		r.settle(ctx, t)
	case middleware.EventOverflow:
		if e.Retried {
			t.sent = receipt.Size{Messages: e.MessagesAfter, Tokens: e.TokensAfter}
		}
		r.settle(ctx, t)
	case middleware.EventChainFailed:
		t.chainFailed = true
	case middleware.EventUsage:
		if u := receipt.UsageOf(e.Usage); !u.IsZero() {
			t.usage = &u
		}
	}
}

// settle saves the receipts of the compactions made for the request so
// far, and finds the receipt of the compaction it forwards.
func (r *Receipts) settle(ctx context.Context, t *trail) {
	now := time.Now()
	for _, rc := range t.rec.Take(r.writer(t.api)) {
		rc.Conversation, rc.API, rc.Model, rc.Time, rc.Client = t.conversation, t.api, t.model, now, t.client
		if err := r.store.SaveReceipt(ctx, rc); err != nil {
			r.log.Warn("proxy: receipt not saved", zap.String("receipt", rc.ID), zap.Error(err))
			continue
		}
		r.refs.put(t.conversation, rc.Ref, rc.ID)
		if !t.chainFailed {
			t.receipt, t.compacted = rc.ID, true
		}
	}
	if t.receipt != "" || t.chainFailed || t.carried == "" {
		return
	}
	if id, ok := r.refs.get(t.conversation, t.carried); ok {
		t.receipt = id
		return
	}
	id, found, err := r.store.FindReceipt(ctx, t.conversation, t.carried)
	if err != nil {
		r.log.Warn("proxy: receipt not found", zap.String("ref", t.carried), zap.Error(err))
		return
	}
	if found {
		r.refs.put(t.conversation, t.carried, id)
		t.receipt = id
	}
}

// finish queues the record of a request answered with status.
func (r *Receipts) finish(t *trail, status int) {
	if t.conversation == "" || t.api == "" {
		return // never processed: refused, or its history is the provider's
	}
	rec := record{req: receipt.Request{Conversation: t.conversation, Time: time.Now(), API: t.api, Model: t.model, Status: status,
		Client: t.client, Sent: t.sent, Usage: t.usage, Receipt: t.receipt, Compacted: t.compacted}}
	if t.receipt != "" && t.usage != nil {
		rec.usage = t.usage
	}
	r.enqueue(rec)
}

// setHeaders adds the Abridge-* headers of a processed request to its
// answer's header h.
func setHeaders(h http.Header, ex *exchange) {
	e := ex.event
	if e == nil {
		return
	}
	sent := e
	if ex.overflow != nil && ex.overflow.Retried {
		sent = ex.overflow
	}
	h.Set(HeaderMessages, strconv.Itoa(e.MessagesBefore)+" "+strconv.Itoa(sent.MessagesAfter))
	h.Set(HeaderTokens, strconv.Itoa(e.TokensBefore)+" "+strconv.Itoa(sent.TokensAfter))
	if t := ex.trail; t != nil && t.receipt != "" {
		h.Set(HeaderReceipt, ReceiptPath(t.receipt))
		h.Set(HeaderCompaction, map[bool]string{true: "new", false: "carried"}[t.compacted])
	}
}

// refCache remembers the receipt ids found by conversation and reference,
// so that the requests of a conversation carrying the same marker look it
// up once. It holds at most refCacheSize ids, forgetting all past it.
type refCache struct {
	mu sync.Mutex
	m  map[[2]string]string
}

const refCacheSize = 4096

func (c *refCache) get(conversation, ref string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.m[[2]string{conversation, ref}]
	return id, ok
}

func (c *refCache) put(conversation, ref, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= refCacheSize {
		clear(c.m)
	}
	c.m[[2]string{conversation, ref}] = id
}
