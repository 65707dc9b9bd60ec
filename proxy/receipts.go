package proxy

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

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
// HeaderReceipt. The compactions are those the middleware reports for each
// request (middleware.Report.Receipts): the window of the proxy's chain
// needs no wiring for them.
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

// settle saves the receipts of the compactions made for ex's request so
// far (the middleware's Report holds them) that are not saved yet, and
// finds the receipt of the compaction it forwards: the newest made for it,
// unless the processors failed, else the one of the marker its history
// carries.
func (r *Receipts) settle(ctx context.Context, ex *exchange) {
	rep := &ex.report
	now := time.Now()
	for _, rc := range rep.Receipts[ex.saved:] {
		ex.saved++
		if rc.Writer == receipt.WriterModel {
			rc.Writer = r.writer(rep.API)
		}
		rc.Conversation, rc.API, rc.Model, rc.Time, rc.Client = rep.Conversation, rep.API, rep.Model, now, rep.Client
		if err := r.store.SaveReceipt(ctx, rc); err != nil {
			r.log.Warn("proxy: receipt not saved", zap.String("receipt", rc.ID), zap.Error(err))
			continue
		}
		r.refs.put(rep.Conversation, rc.Ref, rc.ID)
		if !rep.ChainFailed {
			ex.receipt, ex.compacted = rc.ID, true
		}
	}
	if ex.receipt != "" || rep.ChainFailed || rep.Carried == "" {
		return
	}
	if id, ok := r.refs.get(rep.Conversation, rep.Carried); ok {
		ex.receipt = id
		return
	}
	id, found, err := r.store.FindReceipt(ctx, rep.Conversation, rep.Carried)
	if err != nil {
		r.log.Warn("proxy: receipt not found", zap.String("ref", rep.Carried), zap.Error(err))
		return
	}
	if found {
		r.refs.put(rep.Conversation, rep.Carried, id)
		ex.receipt = id
	}
}

// finish queues the record of ex's request, answered with status.
func (r *Receipts) finish(ex *exchange, status int) {
	rep := &ex.report
	if !rep.Processed {
		return // never processed: refused, or its history is the provider's
	}
	var usage *receipt.Usage
	if u := receipt.UsageOf(rep.Usage); rep.UsageRead && !u.IsZero() {
		usage = &u
	}
	rec := record{req: receipt.Request{Conversation: rep.Conversation, Time: time.Now(), API: rep.API, Model: rep.Model, Status: status,
		Client: rep.Client, Sent: rep.Sent, Usage: usage, Receipt: ex.receipt, Compacted: ex.compacted}}
	if ex.receipt != "" && usage != nil {
		rec.usage = usage
	}
	r.enqueue(rec)
}

// setHeaders adds the Abridge-* headers of a processed request to its
// answer's header h.
func setHeaders(h http.Header, ex *exchange) {
	rep := &ex.report
	if !rep.Processed {
		return
	}
	h.Set(HeaderMessages, strconv.Itoa(rep.Client.Messages)+" "+strconv.Itoa(rep.Sent.Messages))
	h.Set(HeaderTokens, strconv.Itoa(rep.Client.Tokens)+" "+strconv.Itoa(rep.Sent.Tokens))
	if ex.receipt != "" {
		h.Set(HeaderReceipt, ReceiptPath(ex.receipt))
		h.Set(HeaderCompaction, map[bool]string{true: "new", false: "carried"}[ex.compacted])
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
