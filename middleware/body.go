package middleware

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
)

// readPiece is the size of the pieces a received body is read in.
const readPiece = 64 << 10

var errTooLong = errors.New("body longer than its Content-Length")

// readBody reads and closes the request's body. A body an app built
// (GetBody set, its length known) is read into one slice of that length.
// Any other, a request a server received, is read in pieces as its bytes
// arrive, never allocated for the length it declares, and joined at the
// end into one slice of what arrived: a client that announces a large body
// and sends little makes the middleware hold little (and, for an instant,
// a body it receives twice). A body longer or shorter than its declared
// length is an error.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	declared := req.ContentLength
	if req.GetBody != nil && declared >= 0 {
		data := make([]byte, declared)
		if _, err := io.ReadFull(req.Body, data); err != nil {
			return nil, err
		}
		return data, readEnd(req.Body)
	}
	var pieces [][]byte
	total := int64(0)
	for {
		size := int64(readPiece)
		if declared >= 0 {
			// Room for one byte past the declared length, to see a body
			// that runs over.
			size = min(size, declared+1-total)
		}
		piece := make([]byte, size)
		n, err := io.ReadFull(req.Body, piece)
		pieces = append(pieces, piece[:n])
		total += int64(n)
		if declared >= 0 && total > declared {
			return nil, errTooLong
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if declared >= 0 && total < declared {
		return nil, io.ErrUnexpectedEOF
	}
	return bytes.Join(pieces, nil), nil
}

// readEnd reports errTooLong when body has more to read.
func readEnd(body io.Reader) error {
	var one [1]byte
	if k, _ := body.Read(one[:]); k > 0 {
		return errTooLong
	}
	return nil
}

// withBody returns a shallow copy of req with ctx, header and a body made
// of the pieces of body (slices of the body received and of what the
// codec wrote), read one after the other without being copied into one.
// GetBody gives them again, for as long as the request lives.
func withBody(ctx context.Context, req *http.Request, header http.Header, body net.Buffers) *http.Request {
	r := req.WithContext(ctx)
	r.Header = header
	n := 0
	for _, b := range body {
		n += len(b)
	}
	open := func() (io.ReadCloser, error) {
		// Reading consumes the list of pieces: each reader has its own.
		bufs := slices.Clone(body)
		return io.NopCloser(&bufs), nil
	}
	r.Body, _ = open()
	r.ContentLength = int64(n)
	r.GetBody = open
	return r
}
