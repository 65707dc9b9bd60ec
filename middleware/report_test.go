package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/middleware"
	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// TestReport checks what Rewriter.Send reports of each kind of request:
// the API, the sizes before and after, whether it was processed, failed,
// refused or passed untouched, the receipts of its compactions, the
// conversation and the usage the answer reported.
func TestReport(t *testing.T) {
	failing := processor.Func(func(context.Context, []processor.Message) ([]processor.Message, error) {
		return nil, errors.New("boom")
	})
	type brief struct {
		API                            string
		Processed, ChainFailed, Stored bool
		Rejected                       string
		ClientMessages, SentMessages   int
		Receipts                       int
		Conversation, UsageRead        bool
	}
	tests := []struct {
		name   string
		chain  processor.Processor
		method string
		path   string
		body   string
		want   brief
	}{
		{"compacted", window.New(window.Options{MaxMessages: 20}), http.MethodPost, "/v1/chat/completions", overflowBody(),
			brief{API: "chat", Processed: true, ClientMessages: 61, SentMessages: 14, Receipts: 1, Conversation: true, UsageRead: true}},
		{"left alone", nil, http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			brief{API: "chat", Processed: true, ClientMessages: 1, SentMessages: 1, Conversation: true, UsageRead: true}},
		{"chain failed", failing, http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			brief{API: "chat", Processed: true, ChainFailed: true, ClientMessages: 1, SentMessages: 1, Conversation: true, UsageRead: true}},
		{"refused", nil, http.MethodPost, "/v1/chat/completions", `{"model":"m","messages":[`,
			brief{API: "chat", Rejected: middleware.CodeInvalidJSON}},
		{"untouched", nil, http.MethodGet, "/v1/models", "",
			brief{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &openaitest.Upstream{}
			srv := httptest.NewServer(up)
			defer srv.Close()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			var rep middleware.Report
			resp, err := middleware.NewRewriter(tt.chain, middleware.Options{}).Send(req, middleware.APIOf(tt.method, tt.path), &rep, http.DefaultClient.Do)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			got := brief{API: rep.API, Processed: rep.Processed, ChainFailed: rep.ChainFailed, Stored: rep.Stored, Rejected: rep.Rejected,
				ClientMessages: rep.Client.Messages, SentMessages: rep.Sent.Messages, Receipts: len(rep.Receipts),
				Conversation: receipt.ValidID(rep.Conversation), UsageRead: rep.UsageRead}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
			if rep.Processed && len(up.Requests()) == 1 {
				sent := 0
				for _, b := range rep.Body {
					sent += len(b)
				}
				if sent != len(up.Requests()[0].Body) {
					t.Errorf("Report.Body holds %d bytes, the upstream received %d", sent, len(up.Requests()[0].Body))
				}
			}
		})
	}
}
