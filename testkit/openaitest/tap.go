package openaitest

import (
	"bytes"
	"io"
	"net/http"
	"sync"

	"github.com/abridge-go/abridge/middleware"
)

// Tap records the body of every chat completions request an openai-go
// client sends through its Middleware (option.WithMiddleware), as the
// client wrote it: put it first, before any other middleware.
type Tap struct {
	mu     sync.Mutex
	bodies [][]byte
}

// Middleware records the request's body when it is a chat completions
// request, and passes the request on with the same body.
func (t *Tap) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if middleware.IsChatCompletions(req) {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
		t.mu.Lock()
		t.bodies = append(t.bodies, data)
		t.mu.Unlock()
	}
	return next(req)
}

// Bodies returns the bodies recorded so far, in the order they were sent.
func (t *Tap) Bodies() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]byte(nil), t.bodies...)
}
