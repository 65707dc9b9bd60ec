package openaimw

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/bits"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
)

// received is a request's body as the middleware read it. A body a
// server received is read into a buffer of a pool (bodyPools) when it is
// larger than a small allocation, and the buffer goes back to its pool
// once nothing can read it any more: the request in hand is done with it
// (handle released it) and every reader of the body sent upstream, which
// holds pieces of it, is closed. A new buffer's memory is cold, and
// copying a body into it cost about four times reading the body; a buffer
// used before is not. A reader that is never closed (a next that drops the
// request) only keeps the buffer from its pool: the garbage collector
// takes it.
type received struct {
	data []byte
	pool *sync.Pool // where buf goes back; nil when data is not pooled
	buf  *[]byte    // data's buffer, as the pool holds it
	// refs counts the holders of data: the request in hand (1 from the
	// start) and each open reader of the body sent.
	refs atomic.Int32
}

func newReceived(data []byte, pool *sync.Pool, buf *[]byte) *received {
	r := &received{data: data, pool: pool, buf: buf}
	r.refs.Store(1)
	return r
}

// acquire counts one more holder, and reports false when data is no
// longer held (it may be in another request's hands).
func (r *received) acquire() bool {
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release counts one holder less, and gives the buffer back to its pool
// after the last.
func (r *received) release() {
	if r.refs.Add(-1) == 0 && r.pool != nil {
		r.pool.Put(r.buf)
	}
}

// readBody reads and closes the request's body. A body an app built
// (GetBody set, its length known) is read into one buffer of that length.
// Any other, a request a server received, is read in pieces taken as its
// bytes arrive, never for the length it declares, and joined at the end
// into one slice of what arrived (a buffer of bodyPools when it is large):
// a client that announces a large body and sends little makes the
// middleware hold little. When the pool for the declared length holds a
// buffer, the body is read straight into it: memory already held.
func readBody(req *http.Request) (*received, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return newReceived(nil, nil, nil), nil
	}
	defer req.Body.Close()
	declared := req.ContentLength
	if req.GetBody != nil && declared >= 0 {
		data, err := readKnown(req.Body, declared)
		if err != nil {
			return nil, err
		}
		return newReceived(data, nil, nil), nil
	}
	if pool := bodyPool(int(min(declared, 1<<maxPooled+1))); pool != nil && declared >= 0 {
		// A buffer the pool holds, read before, is taken for the length
		// declared, and the body read straight into it; none is allocated
		// for that length.
		if buf, _ := pool.Get().(*[]byte); buf != nil {
			data, err := readDeclared(req.Body, (*buf)[:declared])
			if err != nil {
				pool.Put(buf)
				return nil, err
			}
			return newReceived(data, pool, buf), nil
		}
	}
	var pieces [][]byte // views of buffers from piecePool, given back at the end
	defer func() {
		for _, p := range pieces {
			piecePool.Put((*[readPiece]byte)(p[:readPiece]))
		}
	}()
	total := 0
	for {
		size := readPiece
		if declared >= 0 {
			// Room for one byte past the declared length, to see a body
			// that runs over.
			size = int(min(int64(size), declared+1-int64(total)))
		}
		piece := piecePool.Get().(*[readPiece]byte)[:size]
		n, err := io.ReadFull(req.Body, piece)
		pieces = append(pieces, piece[:n])
		total += n
		if declared >= 0 && int64(total) > declared {
			return nil, errTooLong
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if declared >= 0 && int64(total) < declared {
		return nil, io.ErrUnexpectedEOF
	}
	// The one copy that outlives the read.
	pool := bodyPool(total)
	if pool == nil {
		if len(pieces) == 1 {
			return newReceived(bytes.Clone(pieces[0]), nil, nil), nil
		}
		return newReceived(bytes.Join(pieces, nil), nil, nil), nil
	}
	buf, _ := pool.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, 0, 1<<bits.Len(uint(total-1)))
		buf = &b
	}
	data := (*buf)[:0]
	for _, p := range pieces {
		data = append(data, p...)
	}
	return newReceived(data, pool, buf), nil
}

// piecePool holds the buffers a received body is read into. They are
// needed only until the body is joined into one slice, and a pool saves
// allocating, zeroing and collecting them on every request.
var piecePool = sync.Pool{New: func() any { return new([readPiece]byte) }}

// readPiece is the size of the pieces a received body is read in.
const readPiece = 64 << 10

// Received bodies of more than 1<<minPooled bytes, and up to
// 1<<maxPooled, are kept in buffers of bodyPools: the k-th holds buffers
// of 1<<(minPooled+1+k) bytes. Smaller ones are small allocations, whose
// memory the runtime reuses; larger ones are rare.
const (
	minPooled = 15 // 32 KiB
	maxPooled = 25 // 32 MiB
)

var bodyPools [maxPooled - minPooled]sync.Pool

// bodyPool returns the pool of the buffers for a body of n bytes, or nil.
func bodyPool(n int) *sync.Pool {
	if n <= 1<<minPooled || n > 1<<maxPooled {
		return nil
	}
	return &bodyPools[bits.Len(uint(n-1))-minPooled-1]
}

var errTooLong = errors.New("body longer than its Content-Length")

// readDeclared reads a body of len(data) bytes, as declared, into data.
func readDeclared(body io.Reader, data []byte) ([]byte, error) {
	if _, err := io.ReadFull(body, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // shorter than declared
		}
		return nil, err
	}
	// Nothing may follow what the length announced.
	var one [1]byte
	if k, _ := body.Read(one[:]); k > 0 {
		return nil, errTooLong
	}
	return data, nil
}

// readKnown reads a body of n bytes, an app's own.
func readKnown(body io.Reader, n int64) ([]byte, error) {
	data := make([]byte, n)
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, err
	}
	// Nothing may follow what the length announced.
	var one [1]byte
	if k, _ := body.Read(one[:]); k > 0 {
		return nil, errTooLong
	}
	return data, nil
}

// withBody returns a shallow copy of req with ctx, header and a body
// made of the pieces of body, read one after the other without being
// copied into one. The pieces are slices of recv's data (and of the
// cache's rewrites): each reader of the body holds recv until it is
// closed, and GetBody fails once recv is no longer held.
func withBody(ctx context.Context, req *http.Request, header http.Header, recv *received, body net.Buffers) *http.Request {
	r := req.WithContext(ctx)
	r.Header = header
	n := 0
	for _, b := range body {
		n += len(b)
	}
	open := func() (io.ReadCloser, error) {
		if !recv.acquire() {
			return nil, errBodyGone
		}
		// Reading consumes the pieces' list: each reader has its own.
		return &sentBody{bufs: slices.Clone(body), recv: recv}, nil
	}
	r.Body, _ = open() // recv is held by the request in hand
	r.ContentLength = int64(n)
	r.GetBody = open
	return r
}

var errBodyGone = errors.New("abridge: the request's body is no longer held (the request is done)")

// sentBody reads the pieces of a body sent upstream. Close may come from
// another goroutine than Read (a transport aborting a request does so):
// a lock keeps any read from the pieces from overlapping or following it,
// since the buffer they are in then goes back to its pool.
type sentBody struct {
	mu     sync.Mutex
	bufs   net.Buffers
	recv   *received
	closed bool
}

func (s *sentBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errBodyClosed
	}
	return s.bufs.Read(p)
}

// Close releases the reader's hold on the body received, once.
func (s *sentBody) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.bufs = nil
		s.recv.release()
	}
	return nil
}

var errBodyClosed = errors.New("abridge: read of a closed request body")
