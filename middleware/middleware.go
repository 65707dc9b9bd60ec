// Package middleware adds abridge to an app built on openai-go v3 or
// anthropic-sdk-go with one client option:
//
//	client := openai.NewClient(option.WithMiddleware(middleware.New(chain, middleware.Options{})))
//	client := anthropic.NewClient(aoption.WithMiddleware(middleware.New(chain, middleware.Options{})))
//
// and to any other Go HTTP client through [Transport].
//
// Before every POST request to …/chat/completions (OpenAI Chat
// Completions), …/responses (OpenAI Responses) or …/v1/messages (Anthropic
// Messages) leaves the app, the middleware reads the body's history into
// abridge's message model, runs the chain over it (typically the trimmer
// and the window that config.Build returns) and sends the body with the
// processed history in its place and every other byte (model, tools,
// instructions or system prompt where unchanged, stream, fields it does
// not know) as the app wrote it; what abridge does not model (encrypted
// reasoning, thinking signatures, item types it does not know) goes back
// byte for byte. The API's own rules are checked after the chain: a
// result the provider would refuse is not sent, the request goes as the
// app wrote it (unless the chain fails closed, below). Streaming and
// non-streaming requests alike; every other request passes untouched, and
// so does a Responses request naming previous_response_id (its history is
// on the server). The app keeps its full history as it always did: the
// window finds what it summarized by content, so each message is
// summarized about once even though the middleware sees the history
// decoded afresh every time.
//
// When the provider answers a processed request with a context overflow
// (OpenAI: 400, code context_length_exceeded; Anthropic: 400, "prompt is
// too long"), the middleware compacts the history once more with the
// chain's window (or [Options.Compactor]) and retries once, as abridge's
// agent does. A request whose body abridge cannot read (not JSON, no
// history, a message it cannot decode, a history no provider accepts) is
// answered with a 400 in the shape of the request's API naming what is
// wrong, and sent nowhere.
//
// # Failing open, or closed
//
// When the processors fail on a valid history, or give a result the API
// would refuse or the codec cannot write, the request is sent as the app
// wrote it (EventChainFailed): right for the window, whose work saves
// tokens, and wrong for a processor whose work is a guarantee, such as one
// that redacts secrets. Mark such a processor with processor.Required (or
// the whole chain: processor.Required(chain)): a chain that holds a
// required processor fails closed. When any of its processors fails, the
// request is answered with a 500 in the shape of the request's API (code
// processing_failed, [ErrRequiredFailed]) and nothing is sent upstream
// (EventRejected). A Responses request naming previous_response_id, whose
// history abridge cannot process, is refused the same way. An assistant
// prefill that ends a history (a response without tool calls, which the
// model is to continue) is never given to the processors: it goes as the
// app wrote it whatever the chain.
//
// The middleware does not import the SDKs: [Middleware] and [Next] are the
// same types as their option.Middleware and option.MiddlewareNext, so the
// value New returns goes straight into either SDK's WithMiddleware. The proxy
// (package proxy, abridge serve) is this middleware in front of an
// upstream, through [Rewriter.Send]: the per-request call that returns what
// the middleware did ([Report]: the sizes, the body sent, the receipts of
// its compactions). The wire formats live in one codec each
// (internal/wire); this package picks one by the request's method and path
// ([APIOf]; the proxy decides it once as a request arrives and gives it to
// Send) and holds no API of its own.
package middleware

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/compact"
	"github.com/abridge-go/abridge/internal/apierror"
	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
)

// ConversationHeader is the request header that names the conversation a
// request belongs to. It is optional: without it the window tells
// conversations apart by their content, which is enough unless two
// conversations begin with the same messages and must not share summaries.
// The middleware removes it before the request is sent on; a context
// carrying a window.Request with a Conversation does the same for a Go
// host.
const ConversationHeader = "Abridge-Conversation"

// Next sends a request on and returns the response: the same type as
// openai-go's option.MiddlewareNext.
type Next = func(*http.Request) (*http.Response, error)

// Middleware intercepts a request on its way out: the same type as
// openai-go's option.Middleware.
type Middleware = func(*http.Request, Next) (*http.Response, error)

var _ compact.Compactor = (*window.Window)(nil)

// Options configures the middleware. The zero value means: after a
// context overflow, one retry compacted by the chain's window, if it has
// one; no logging, no events.
type Options struct {
	// Compactor compacts the history after the provider reported a
	// context overflow, before the one retry. Nil means the last processor
	// of the chain that is a Compactor (the window; see processor.Last);
	// with none, the overflow goes back to the app as the provider sent
	// it. To keep the chain's window from compacting after an overflow,
	// give the chain processor.Func(win.Process) in its place.
	Compactor compact.Compactor
	// Logger receives a debug line for each processed request, a warning
	// when the processors fail and the request is sent unprocessed, and an
	// info line for each retry after a context overflow. Nil means no
	// logging. Headers are never logged.
	Logger *zap.Logger
	// OnEvent, when set, is called synchronously with each [Event]. It must
	// be safe for concurrent use.
	OnEvent func(ctx context.Context, e Event)
	// Anchors bounds the number of conversations whose last reported
	// usage the middleware remembers, to anchor their next request's
	// token estimate on it (see [Event.Anchored]): the provider's input
	// tokens for the history it was sent, plus about 4 characters a token
	// for what the client added since, rather than the characters alone.
	// The window's token trigger counts with that estimate. Conversations
	// are found by content, in one API and to one model (the conversation
	// header's id, when sent, keeps them apart too); the least recently
	// used is forgotten first, each
	// costs about a hundred bytes. 0 means DefaultAnchors (4096); -1 turns
	// anchoring off.
	Anchors int
	// Reserve, when set, is called for each request the middleware
	// processes once its body has been read and checked, before its
	// history is decoded, twice: first with the bytes of memory the
	// request holds beyond the body itself until the answer's headers
	// have come back (see [WaitingMemory]: the history decoded and
	// written), then with the rest of what decoding and processing it
	// may take at the most (see [ProcessingMemory]). Each call returns a
	// function the middleware calls to give the bytes back: the second's
	// once the request's body is written, before it is sent, the first's
	// once the answer's headers have come back (the history is no longer
	// held then). A compaction after a context overflow reserves the
	// second part again while it runs. An error means the request is not
	// processed: it is returned from the round trip. A proxy bounds its
	// memory with it; nil means no bound.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
}

// Memory that decoding and processing a request may take, beyond the
// body as it was read (twice its bytes for a body a server received: the
// pieces it arrived in and the slice they were joined into), by the bytes
// of the body and its JSON tokens: what the middleware allocates, with the
// trimmer and the window (the digest writing the summary), on bodies of
// every shape in every API, as BenchmarkProcessingMemory measures it
// (TestProcessingMemory holds the estimate to it), with a margin. Long
// texts take about 2 bytes a byte (their strings decoded, with the room
// decoding grows them in); a 120-message tool conversation about 900
// bytes a token beyond its bytes' share in Responses, 540 to 590 in Chat
// and Messages, most of it the digest reading the shell commands of the
// messages it summarizes; one-letter messages 106 (Chat) to 279
// (Messages) bytes a token, 5 tokens a message.
const (
	memoryPerByte  = 4
	memoryPerToken = 1000
)

// ProcessingMemory returns the bytes of memory the middleware may take to
// decode and process a request body of bodyBytes bytes whose history holds
// tokens JSON tokens (counted by the codec's Parse before it decodes them),
// beyond the body as it was read: what it passes to Options.Reserve, in
// two parts.
func ProcessingMemory(bodyBytes, tokens int) int64 {
	return memoryPerByte*int64(bodyBytes) + memoryPerToken*int64(tokens)
}

// Memory a request holds once it has been processed, while its answer is
// awaited, beyond the body as it was read: the history decoded (its
// texts, about a byte a byte, and the messages and parts that hold them)
// and the body written anew (the body's own bytes for the most part).
// TestWaitingMemory measures it live, after a GC, on the shapes of
// TestProcessingMemory: 29 to 31 bytes a token on many tiny messages
// (5 tokens a message), 0.5 to 3.3 bytes a byte and 8 to 84 a token on
// a tool conversation, 1 byte a byte on long texts.
const (
	waitingPerByte  = 2
	waitingPerToken = 64
)

// WaitingMemory returns the part of [ProcessingMemory] a request holds
// until its answer's headers have come back: the first reservation of
// Options.Reserve.
func WaitingMemory(bodyBytes, tokens int) int64 {
	return min(waitingPerByte*int64(bodyBytes)+waitingPerToken*int64(tokens), ProcessingMemory(bodyBytes, tokens))
}

// EventType tells what an Event reports.
type EventType int

// Event types.
const (
	// EventProcessed: a request of one of the three APIs went through
	// the chain and was sent on (sizes before and after, Duration).
	EventProcessed EventType = iota + 1
	// EventRejected: the request's body could not be read or its history
	// is not one a provider accepts; it was answered with a 400, or a 415
	// for a compressed body, or a 500 when processing failed and the chain
	// holds a required processor (Code, Err), and sent nowhere.
	EventRejected
	// EventChainFailed: the processors failed on a valid history (Err);
	// the request was sent with its messages as the app wrote them (a
	// chain holding a required processor refuses it instead:
	// EventRejected).
	EventChainFailed
	// EventOverflow: the provider reported a context overflow for a
	// processed request; the history was compacted again (sizes before
	// and after) and, when that made it smaller, sent once more (Retried).
	EventOverflow
	// EventUsage: the provider's answer to a request reported its usage
	// (Usage), read as the answer passed to the app (a whole answer, or
	// the events of a stream); sent when the app has read it to its end
	// or closed it.
	EventUsage
	// EventStored: the request's history is held by the provider (a
	// Responses request naming previous_response_id); it was sent on
	// unprocessed.
	EventStored
)

// String returns "processed", "rejected", "chain failed", "overflow",
// "stored", "usage" or "event(N)".
func (t EventType) String() string {
	switch t {
	case EventProcessed:
		return "processed"
	case EventRejected:
		return "rejected"
	case EventChainFailed:
		return "chain failed"
	case EventOverflow:
		return "overflow"
	case EventStored:
		return "stored"
	case EventUsage:
		return "usage"
	}
	return "event(" + strconv.Itoa(int(t)) + ")"
}

// Event reports what the middleware did with one request. The window's own
// events (a compaction started, finished or failed, with the tokens before
// and after and the summarizer's duration) come through its
// Options.OnEvent; config.Build wires them to zap and to a callback.
type Event struct {
	// Type is what happened.
	Type EventType
	// API is the request's wire API: "chat", "responses" or "messages".
	API string
	// Model is the request's model, Stream whether it asked for a stream.
	Model  string
	Stream bool
	// MessagesBefore and TokensBefore measure the history the app sent;
	// MessagesAfter and TokensAfter the history sent on. Tokens before and
	// after are counted alike, from the messages' characters alone
	// (processor.ContentTokens), so that the two compare; Estimate is the
	// estimate the window's token trigger makes.
	MessagesBefore, TokensBefore int
	MessagesAfter, TokensAfter   int
	// Estimate is the prompt tokens of the history sent on as
	// processor.EstimateTokens counts them (EventProcessed, EventUsage):
	// anchored on the usage the provider reported for the conversation's
	// previous request when Anchored is set, else TokensAfter.
	Estimate int
	// Duration is the time abridge took on the request before sending it:
	// reading the body, the processors (summaries included) and writing
	// the body back.
	Duration time.Duration
	// Usage is what the provider reported (EventUsage): the input tokens
	// of the request as it was sent, those read from its cache, those
	// written to it (Anthropic), and the output tokens. Anthropic's cache
	// reads and writes are counted in InputTokens. MessagesAfter,
	// TokensAfter and Estimate then measure the history of the request the
	// usage is for, as it was sent, and Anchored tells the basis of the
	// estimate: Usage.InputTokens ÷ Estimate is how far off it was.
	Usage processor.Usage
	// Anchored is set (EventProcessed, EventUsage) when Estimate is
	// anchored on the usage the provider reported for the conversation's
	// previous request (see Options.Anchors): the history sent began with
	// what that request forwarded and its answer, and only what follows
	// was estimated from its characters. Unset, the whole estimate is
	// from characters: the conversation's first request, a history the
	// client or the processors changed before that point, or one whose
	// previous usage was not reported or is forgotten.
	Anchored bool
	// Retried is set on EventOverflow when the compacted request was sent
	// again.
	Retried bool
	// Code is the error code answered (EventRejected).
	Code string
	// Err is why the request was rejected (EventRejected) or why the
	// processors failed (EventChainFailed, EventOverflow).
	Err error
}

// Codes of the 400 answers to requests abridge cannot process.
const (
	// CodeInvalidJSON: the body is not a JSON object.
	CodeInvalidJSON = "invalid_json"
	// CodeMissingMessages: the body has no "messages" array, or an empty
	// one.
	CodeMissingMessages = wire.CodeMissingMessages
	// CodeInvalidMessage: a message cannot be decoded.
	CodeInvalidMessage = wire.CodeInvalidMessage
	// CodeInvalidHistory: the messages are not a history a provider
	// accepts (processor.Validate names the rule and the message).
	CodeInvalidHistory = wire.CodeInvalidHistory
	// CodeUnsupportedEncoding: the body is compressed (a Content-Encoding
	// such as gzip); it is answered 415.
	CodeUnsupportedEncoding = "unsupported_encoding"
	// CodeProcessingFailed: processing failed and the chain holds a
	// required processor (see [ErrRequiredFailed]); it is answered 500.
	CodeProcessingFailed = "processing_failed"
)

// ErrRequiredFailed is why a request is refused rather than sent
// unprocessed: the chain holds a processor marked processor.Required, and
// processing failed (a processor's error, a result the API would refuse or
// the codec cannot write, a history held by the provider).
var ErrRequiredFailed = errors.New("request not processed, and the chain holds a required processor")

// ErrContentEncoding is why a compressed request body is refused: abridge
// reads request bodies only as sent, uncompressed (a client
// compresses them only when told to).
var ErrContentEncoding = errors.New("request body is compressed")

// splitPrefill parts a history that ends with an assistant prefill (a
// response with no tool call, which the model is to continue: Anthropic
// and several OpenAI-compatible servers take one) into the history before
// it, which the processors see, and the prefill, sent after it as it came.
// Any other history is returned whole, with no prefill.
func splitPrefill(history []processor.Message) (before, prefill []processor.Message) {
	n := len(history)
	if n < 2 || history[n-1].Kind != processor.Response || history[n-1].HasToolCalls() {
		return history, nil
	}
	return history[: n-1 : n-1], history[n-1:]
}

// withPrefill returns out followed by prefill, in a new slice when there
// is a prefill.
func withPrefill(out, prefill []processor.Message) []processor.Message {
	if len(prefill) == 0 {
		return out
	}
	return slices.Concat(out, prefill)
}

// Rejection returns the error abridge answers a request with when it
// cannot process it (status, code and message; the middleware writes it in
// the shape of the request's API): err is what reading the body or
// validating its history returned (a 400), ErrContentEncoding (a 415), or
// ErrRequiredFailed (a 500).
func Rejection(err error) apierror.Error {
	e := apierror.Error{Status: http.StatusBadRequest, Type: apierror.TypeInvalidRequest,
		Message: "abridge: " + err.Error()}
	switch {
	case errors.Is(err, ErrRequiredFailed):
		e.Status, e.Type, e.Code = http.StatusInternalServerError, apierror.TypeServer, CodeProcessingFailed
	case errors.Is(err, ErrContentEncoding):
		e.Status, e.Code = http.StatusUnsupportedMediaType, CodeUnsupportedEncoding
	case errors.Is(err, wire.ErrNotJSON):
		e.Code = CodeInvalidJSON
	case errors.Is(err, wire.ErrNoMessages):
		e.Code = CodeMissingMessages
	case errors.Is(err, wire.ErrBadMessage):
		e.Code = CodeInvalidMessage
	default:
		e.Code = CodeInvalidHistory
	}
	return e
}

// checkEncoding returns ErrContentEncoding, naming the encoding, when the
// request's body is compressed.
func checkEncoding(req *http.Request) error {
	enc := strings.TrimSpace(req.Header.Get("Content-Encoding"))
	if enc == "" || strings.EqualFold(enc, "identity") {
		return nil
	}
	return fmt.Errorf("%w (Content-Encoding: %s): send request bodies uncompressed", ErrContentEncoding, enc)
}

// maxErrorBody is the most of a 400 answer read to tell whether it reports
// a context overflow.
const maxErrorBody = 1 << 20

// isOverflow reports whether resp, a 400, reports a context overflow, as
// codec reads it. It reads the body and puts it back (into the answer's
// own wrapper, when the middleware wrapped it).
func isOverflow(resp *http.Response, codec wire.Codec) (bool, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		_ = resp.Body.Close()
		return false, fmt.Errorf("abridge: read error response: %w", err)
	}
	if w, ok := resp.Body.(*answer); ok {
		w.head = data
	} else {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
	}
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return false, nil
		}
		if data, err = io.ReadAll(io.LimitReader(zr, maxErrorBody)); err != nil {
			return false, nil
		}
	}
	return codec.Overflow(resp.StatusCode, data), nil
}

// Transport returns an http.RoundTripper that sends each request through
// mw, then with base (nil means http.DefaultTransport): any Go HTTP client
// gets abridge by setting its Transport, whatever library builds its
// requests (go-openai, langchaingo, an Anthropic or OpenAI-compatible
// client of its own).
func Transport(mw Middleware, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		return mw(req, base.RoundTrip)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
