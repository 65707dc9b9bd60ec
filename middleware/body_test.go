package middleware_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/middleware"
)

// receivedRequest returns a request whose body reads as one a server
// received: no GetBody, its length declared.
func receivedRequest(t *testing.T, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body, req.GetBody = io.NopCloser(bytes.NewReader(body)), nil
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// chatBody is a Chat Completions body of one user message, named by id,
// padded to about size bytes.
func chatBody(id, size int) []byte {
	return fmt.Appendf(nil, `{"model":"m","messages":[{"role":"user","content":"request %d %s"}]}`, id, strings.Repeat("x", size))
}

// TestReceivedBodiesForwardedWhole sends received bodies of many sizes
// (most of them read in several pieces) from several clients at once,
// through the middleware and a real transport, to an upstream that checks
// each body it gets is the one its client sent, byte for byte (run it
// with -race).
func TestReceivedBodiesForwardedWhole(t *testing.T) {
	const clients, each = 6, 20
	bodies := map[string][]byte{}
	for c := range clients {
		for i := range each {
			id := c*each + i
			bodies[fmt.Sprint(id)] = chatBody(id, 1000+id*4111%300000)
		}
	}
	var mu sync.Mutex
	var wrong []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err := io.ReadAll(r.Body)
		id := r.Header.Get("X-Test-Id")
		if err != nil || !bytes.Equal(got, bodies[id]) {
			mu.Lock()
			wrong = append(wrong, fmt.Sprintf("request %s: %d bytes, want %d (%v)", id, len(got), len(bodies[id]), err))
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer up.Close()
	rt := middleware.Transport(middleware.New(nil, middleware.Options{}), nil)
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprint(c*each + i)
				req := receivedRequest(t, up.URL+"/v1/chat/completions", bodies[id])
				req.Header.Set("X-Test-Id", id)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					errs <- err
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("request %s: status %d", id, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(wrong) > 0 {
		t.Errorf("%d bodies arrived otherwise than sent, the first: %s", len(wrong), wrong[0])
	}
}

// TestSentBodyHeld checks the body the middleware sends on: GetBody gives
// the same bytes again while the request is in hand (a transport's retry,
// the retry after an overflow), also after the first reader is closed,
// and still once the request is done: nothing the request holds is given
// to another.
func TestSentBodyHeld(t *testing.T) {
	body := chatBody(1, 100<<10)
	mw := middleware.New(nil, middleware.Options{})
	var sent *http.Request
	var during []string
	read := func(get func() (io.ReadCloser, error)) string {
		r, err := get()
		if err != nil {
			return fmt.Sprintf("GetBody: %v", err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		return fmt.Sprintf("read %d bytes, same %v, %v", len(got), bytes.Equal(got, body), err)
	}
	_, err := mw(receivedRequest(t, "http://upstream.invalid/v1/chat/completions", body), func(r *http.Request) (*http.Response, error) {
		sent = r
		during = append(during, read(func() (io.ReadCloser, error) { return r.Body, nil }))
		n, err := r.Body.Read(make([]byte, 10))
		during = append(during, fmt.Sprintf("after close: %d bytes, error %v", n, err != nil))
		during = append(during, read(r.GetBody))
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	during = append(during, read(sent.GetBody))
	same := fmt.Sprintf("read %d bytes, same true, <nil>", len(body))
	want := []string{same, "after close: 0 bytes, error true", same, same}
	if diff := cmp.Diff(want, during); diff != "" {
		t.Errorf("the body sent, while the request is in hand and after (-want +got):\n%s", diff)
	}
}

// TestReceivedBodyDeclared checks received bodies against the length
// they declare: one as long as it declares goes through whole, again and
// again; one shorter or longer is refused.
func TestReceivedBodyDeclared(t *testing.T) {
	mw := middleware.New(nil, middleware.Options{})
	body := chatBody(1, 100<<10)
	var got []byte
	next := func(r *http.Request) (*http.Response, error) {
		var err error
		got, err = io.ReadAll(r.Body)
		r.Body.Close()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}, err
	}
	tests := []struct {
		name     string
		sent     []byte
		declared int
		wantErr  string
	}{
		{"first", body, len(body), ""},
		{"as declared", body, len(body), ""},
		{"shorter than declared", body[:len(body)/2], len(body), "unexpected EOF"},
		{"longer than declared", append(bytes.Clone(body), "  "...), len(body), "longer than its Content-Length"},
		{"as declared again", body, len(body), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			req := receivedRequest(t, "http://upstream.invalid/v1/chat/completions", tt.sent)
			req.ContentLength = int64(tt.declared)
			_, err := mw(req, next)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			case tt.wantErr == "" && !bytes.Equal(got, tt.sent):
				t.Errorf("sent on %d bytes, want the %d received", len(got), len(tt.sent))
			}
		})
	}
}
