package middleware_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/trimtools"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// memoryShape is a body of one shape, for the measures of the memory
// processing takes.
type memoryShape struct {
	name, api string
	body      []byte
}

// tinyMessages returns a body of n one-letter user messages in api.
func tinyMessages(api string, n int) []byte {
	var b bytes.Buffer
	switch api {
	case openaitest.APIChat:
		b.WriteString(`{"model":"m","messages":[`)
	case openaitest.APIResponses:
		b.WriteString(`{"model":"m","input":[`)
	default:
		b.WriteString(`{"model":"m","max_tokens":10,"messages":[`)
	}
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"a"}`)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// memoryShapes returns bodies of the shapes that cost the most per byte
// (many tiny messages) and of the common ones (a tool conversation, long
// texts), in each API.
func memoryShapes(t testing.TB) []memoryShape {
	var shapes []memoryShape
	long := strings.Repeat("a line of a long document\n", 40000) // 1 MiB
	for _, api := range []string{openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages} {
		shapes = append(shapes, memoryShape{"tiny messages", api, tinyMessages(api, 100_000)})
		bodies, err := openaitest.NewBodies(api, openaitest.ToolConversation(120, "memory"))
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, memoryShape{"tool conversation", api, bodies.Body(120, false)})
		texts, err := openaitest.NewBodies(api, []json.RawMessage{
			json.RawMessage(`{"role":"user","content":` + quote(long) + `}`),
			json.RawMessage(`{"role":"assistant","content":` + quote(long) + `}`),
			json.RawMessage(`{"role":"user","content":"go on"}`)})
		if err != nil {
			t.Fatal(err)
		}
		shapes = append(shapes, memoryShape{"long texts", api, texts.Body(3, false)})
	}
	return shapes
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tokensOf returns the JSON tokens the codec of s counts in its body.
func tokensOf(t testing.TB, s memoryShape) int {
	tokens := 0
	if _, err := wire.ForPath("/v1"+openaitest.APIPath(s.api)).Parse(s.body, func(n int) error { tokens = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return tokens
}

// serveOnce sends one request of s, received by a server (its body read
// in pieces as it arrives), through the middleware on a fresh trimmer and
// window (the digest writes the summary), to an upstream that calls
// waiting, then reads the body sent and answers 200.
func serveOnce(t testing.TB, s memoryShape, waiting func()) {
	win := window.New(window.Options{})
	mw := middleware.New(processor.Chain(trimtools.New(trimtools.Options{}), win), middleware.Options{Compactor: win})
	req, err := http.NewRequest(http.MethodPost, "http://upstream.invalid/v1"+openaitest.APIPath(s.api), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(s.body)), int64(len(s.body))
	next := func(r *http.Request) (*http.Response, error) {
		waiting()
		_, err := io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}, err
	}
	resp, err := mw(req, next)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %v, %v", s.api, s.name, resp, err)
	}
	runtime.KeepAlive(win)
}

// processAlloc returns the bytes the middleware allocates over one
// request of s (see serveOnce).
func processAlloc(t testing.TB, s memoryShape) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	serveOnce(t, s, func() {})
	runtime.ReadMemStats(&after)
	// The body as it was read, in pieces joined into one slice, a proxy
	// counts apart.
	return after.TotalAlloc - before.TotalAlloc - 2*uint64(len(s.body))
}

// TestProcessingMemory checks that what middleware.ProcessingMemory gives
// Options.Reserve covers what the middleware allocates to decode and
// process a body, on bodies of every shape in every API.
func TestProcessingMemory(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's sync.Pool drops what is put back: allocations are not the program's (run without -race)")
	}
	for _, s := range memoryShapes(t) {
		t.Run(s.api+"/"+s.name, func(t *testing.T) {
			tokens := tokensOf(t, s)
			got, limit := processAlloc(t, s), middleware.ProcessingMemory(len(s.body), tokens)
			if int64(got) > limit {
				t.Errorf("%d bytes allocated for a body of %d bytes and %d tokens, over the %d estimated", got, len(s.body), tokens, limit)
			}
		})
	}
}

// BenchmarkProcessingMemory reports, for bodies of every shape in every
// API, what the middleware allocates to decode and process one (the
// trimmer and the window, the digest writing the summary) per byte of the
// body and per JSON token, and as a share of ProcessingMemory's estimate:
//
//	go test ./middleware -run '^$' -bench BenchmarkProcessingMemory
func BenchmarkProcessingMemory(b *testing.B) {
	for _, s := range memoryShapes(b) {
		tokens := tokensOf(b, s)
		b.Run(s.api+"/"+s.name, func(b *testing.B) {
			var total uint64
			for b.Loop() {
				total += processAlloc(b, s)
			}
			per := float64(total) / float64(b.N)
			b.ReportMetric(per/float64(len(s.body)), "B/body-byte")
			b.ReportMetric(per/float64(tokens), "B/token")
			b.ReportMetric(per/float64(middleware.ProcessingMemory(len(s.body), tokens)), "of-estimate")
		})
	}
}

// waitingLive returns the bytes of live heap the middleware holds while
// the upstream answers one request of s (a GC run there; see serveOnce),
// beyond the body as it was read.
func waitingLive(t testing.TB, s memoryShape) int64 {
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	serveOnce(t, s, func() {
		runtime.GC()
		runtime.ReadMemStats(&during)
	})
	return int64(during.HeapAlloc) - int64(before.HeapAlloc) - int64(len(s.body))
}

// TestWaitingMemory checks that middleware.WaitingMemory, the part of the
// reservation a request holds until its answer's headers come back,
// covers the heap the middleware holds live while the upstream answers,
// on bodies of every shape in every API.
func TestWaitingMemory(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's sync.Pool drops what is put back: allocations are not the program's (run without -race)")
	}
	for _, s := range memoryShapes(t) {
		t.Run(s.api+"/"+s.name, func(t *testing.T) {
			tokens := tokensOf(t, s)
			live, limit := waitingLive(t, s), middleware.WaitingMemory(len(s.body), tokens)
			t.Logf("%d bytes live for a body of %d bytes and %d tokens (%.2f a byte, %.1f a token); %d estimated", live, len(s.body), tokens, float64(live)/float64(len(s.body)), float64(live)/float64(tokens), limit)
			if live > limit {
				t.Errorf("%d bytes live while the answer is awaited, over the %d estimated", live, limit)
			}
		})
	}
}
