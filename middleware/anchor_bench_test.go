package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/internal/wire"
	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// BenchmarkAnchor measures what anchoring adds to a request of a
// 120-message tool-using conversation in each API ("keys": the one hash
// of its history; "keys+anchor": that, the lookup and the response's new
// usage),
// beside decoding the same request ("decode"):
//
//	go test ./middleware -run '^$' -bench BenchmarkAnchor -benchmem -count 6
func BenchmarkAnchor(b *testing.B) {
	msgs := openaitest.ToolConversation(120, "benchmark")
	for _, api := range []string{openaitest.APIChat, openaitest.APIResponses, openaitest.APIMessages} {
		bodies, err := openaitest.NewBodies(api, msgs)
		if err != nil {
			b.Fatal(err)
		}
		data := bodies.Body(len(msgs), false)
		codec := wire.ForPath("/v1" + openaitest.APIPath(api))
		body, err := codec.Parse(data, nil)
		if err != nil {
			b.Fatal(err)
		}
		in := body.Messages
		a := middleware.NewTestAnchors(middleware.DefaultAnchors)
		// The previous request: without the last call and its output.
		a.Put(in[:len(in)-2], processor.Usage{InputTokens: 1000, OutputTokens: 10})
		b.Run(api+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := codec.Parse(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(api+"/keys", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				a.Keys(in)
			}
		})
		b.Run(api+"/keys+anchor", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			if !a.Anchor(in) {
				b.Fatal("not anchored")
			}
			for b.Loop() {
				a.Anchor(in)
			}
		})
	}
}

// BenchmarkMiddlewareAnchors measures the middleware over one request of
// that conversation, the answer read, with anchoring on and off (the same
// body each time: the hash and the lookup, which finds nothing, and the
// usage remembered).
//
//	go test ./middleware -run '^$' -bench BenchmarkMiddlewareAnchors -benchmem -count 6
func BenchmarkMiddlewareAnchors(b *testing.B) {
	msgs := openaitest.ToolConversation(120, "benchmark")
	bodies, err := openaitest.NewBodies(openaitest.APIChat, msgs)
	if err != nil {
		b.Fatal(err)
	}
	data := string(bodies.Body(len(msgs), false))
	answer := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9000,"completion_tokens":2,"total_tokens":9002}}`
	next := func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: readCloser{strings.NewReader(answer)}, Request: req}, nil
	}
	for _, tc := range []struct {
		name    string
		anchors int
	}{{"anchors=off", -1}, {"anchors=on", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			// OnEvent set, as the proxy sets it: the answer's usage is
			// read either way.
			mw := middleware.New(nil, middleware.Options{Anchors: tc.anchors, OnEvent: func(context.Context, middleware.Event) {}})
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://upstream/v1/chat/completions", strings.NewReader(data))
				resp, err := mw(req, next)
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, 512)
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
