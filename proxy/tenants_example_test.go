package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/abridge-go/abridge/processor"
	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/summarizer"
)

// calls counts the summaries written.
type calls struct{ n int }

func (c *calls) Summarize(context.Context, []processor.Message, string, string) (string, error) {
	c.n++
	return "What was done so far.", nil
}

// A proxy that pays for its clients' summaries writes them only for a
// client whose key the upstream has accepted once (SummarizeAccepted); a
// client whose key it refuses gets the offline digest, and nobody pays
// for it.
func ExampleOptions_summarizeFor() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	defer upstream.Close()
	base, _ := url.Parse(upstream.URL + "/v1")

	sum := &calls{}
	// Each summary written when its compaction is due (not ahead, in the
	// background), so that what this example prints is the same each run.
	win := window.New(window.Options{MaxMessages: 6, Summarizer: sum, Ahead: -1})
	p := proxy.New(proxy.Options{Upstream: base, Chain: win, SummarizeFor: proxy.SummarizeAccepted})
	srv := httptest.NewServer(p)
	defer srv.Close()

	post := func(key string, turns int) {
		msgs := []string{`{"role":"user","content":"Start."}`, `{"role":"assistant","content":"Started."}`}
		for i := range turns {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"Step %d: %s"}`, i, strings.Repeat("details ", 50)),
				fmt.Sprintf(`{"role":"assistant","content":"Done %d."}`, i))
		}
		msgs = append(msgs, `{"role":"user","content":"Next?"}`)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4.1-mini","messages":[`+strings.Join(msgs, ",")+`]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%s, %d turns: %d; summaries written: %d\n", key, turns, resp.StatusCode, sum.n)
	}
	post("refused-key", 4)
	post("good-key", 1) // short: accepted, nothing to summarize
	post("good-key", 4)
	// Output:
	// refused-key, 4 turns: 401; summaries written: 0
	// good-key, 1 turns: 200; summaries written: 0
	// good-key, 4 turns: 200; summaries written: 1
}

// A proxy with no key of its own lets each client pay for its summaries,
// at its own upstream only: summaries of Messages conversations, sent to
// an endpoint on the OpenAI upstream, would need an Anthropic client's key
// to go elsewhere, so the offline digest writes them.
func ExampleClientPaidSummarizers() {
	openAI, _ := url.Parse("https://api.openai.com/v1")
	anthropic, _ := url.Parse("https://api.anthropic.com/v1")
	// In abridge serve: an llm.New on a model built with
	// openai.WithHTTPClient(client), whose transport adds the credential.
	paidBy := func(client *http.Client) summarizer.Summarizer { return &calls{} }
	_, unpaid := proxy.ClientPaidSummarizers([]proxy.SummaryRoute{
		{API: "chat", Upstream: openAI, Endpoint: "https://api.openai.com/v1", New: paidBy},
		{API: "messages", Upstream: anthropic, Endpoint: "https://api.openai.com/v1", New: paidBy},
	}, summarizer.NewDigest(summarizer.DigestOptions{}))
	fmt.Println("written by the digest:", unpaid)
	// Output: written by the digest: [messages]
}
