package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/proxy"
	"github.com/abridge-go/abridge/receipt"
	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
	"github.com/abridge-go/abridge/testkit/openaitest"
)

// chatBody is a chat completions body of msgs.
func chatBody(t *testing.T, msgs []json.RawMessage) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "gpt-test", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chat posts body to the fixture's chat completions path with the
// client's key and header h (names and values), and returns the answer's
// header.
func (f *fixture) chat(t *testing.T, body []byte, h ...string) http.Header {
	t.Helper()
	header := http.Header{"Authorization": {"Bearer " + secret}}
	for i := 0; i+1 < len(h); i += 2 {
		header.Set(h[i], h[i+1])
	}
	resp, data := f.post(t, "/v1/chat/completions", string(body), header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	return resp.Header
}

// receiptStore opens a SQLite session store of the test's, and the
// receipts of a proxy on it.
func receiptStore(t *testing.T) (*session.Store, *proxy.Receipts) {
	t.Helper()
	st, err := session.Open(context.Background(), sqlite.Driver{Path: filepath.Join(t.TempDir(), "s.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, proxy.NewReceipts(st.Receipts(), proxy.ReceiptOptions{})
}

// TestReceipts replays a conversation through a proxy keeping receipts in
// a SQLite session store: no answer names a receipt before the first
// compaction; the compacted request's answer names a new one, whose page
// path holds the receipt saved (the upstream's summary, the messages
// replaced, the client's size); each later answer names the compaction its
// history carries, a client sending the forwarded history back included;
// every request is recorded with the provider's usage, and the receipt
// with the usage of its first and next requests.
func TestReceipts(t *testing.T) {
	ctx := context.Background()
	st, rcpts := receiptStore(t)
	up := &openaitest.Upstream{Summary: "The agent ran go test in pkg0 to pkg9; pkg3 still fails."}
	f := newFixture(t, up, func(o *proxy.Options) { o.Receipts = rcpts })

	msgs := openaitest.ToolConversation(70, "parser")
	var ids []string // the receipt path of each answer
	var kinds []string
	for _, n := range openaitest.RequestLengths(msgs) {
		h := f.chat(t, chatBody(t, msgs[:n]))
		ids, kinds = append(ids, h.Get(proxy.HeaderReceipt)), append(kinds, h.Get(proxy.HeaderCompaction))
		fields := strings.Fields(h.Get(proxy.HeaderTokens))
		if len(fields) != 2 || len(strings.Fields(h.Get(proxy.HeaderMessages))) != 2 {
			t.Fatalf("request of %d messages: %s %q, %s %q", n, proxy.HeaderTokens, h.Get(proxy.HeaderTokens),
				proxy.HeaderMessages, h.Get(proxy.HeaderMessages))
		}
		before, _ := strconv.Atoi(fields[0])
		after, _ := strconv.Atoi(fields[1])
		if (ids[len(ids)-1] != "") != (after < before) {
			t.Errorf("request of %d messages: %s %q with %s %q", n, proxy.HeaderTokens, h.Get(proxy.HeaderTokens), proxy.HeaderReceipt, ids[len(ids)-1])
		}
	}
	first := -1
	for i, k := range kinds {
		if k == "new" {
			first = i
			break
		}
	}
	if first < 1 {
		t.Fatalf("compactions: %q; want a first one after some requests", kinds)
	}
	for i, id := range ids {
		switch {
		case i < first && id != "":
			t.Errorf("request %d, before the first compaction, names %s", i, id)
		case i > first && (id == "" || kinds[i] == "new" && id == ids[i-1] || kinds[i] == "carried" && id != ids[i-1]):
			t.Errorf("request %d names %q (%s) after %q", i, id, kinds[i], ids[i-1])
		}
	}
	id, ok := strings.CutPrefix(ids[first], "/ui/receipts/")
	if !ok || !receipt.ValidID(id) {
		t.Fatalf("%s %q: want /ui/receipts/ID", proxy.HeaderReceipt, ids[first])
	}

	// A client that keeps the history it forwarded sends the marker back.
	chats := up.Chats()
	forwarded, _, err := openaitest.SplitBody(chats[len(chats)-1].Body)
	if err != nil {
		t.Fatal(err)
	}
	var back []json.RawMessage
	if err := json.Unmarshal(forwarded, &back); err != nil {
		t.Fatal(err)
	}
	h := f.chat(t, chatBody(t, back))
	if got := h.Get(proxy.HeaderReceipt); got != ids[len(ids)-1] || h.Get(proxy.HeaderCompaction) != "carried" {
		t.Errorf("the forwarded history sent back: %s %q (%s), want %q carried", proxy.HeaderReceipt, got, h.Get(proxy.HeaderCompaction), ids[len(ids)-1])
	}

	// The request log names the receipts, and so do the window's lines.
	logged := map[string]map[string]bool{}
	for _, l := range f.logs.All() {
		if r, ok := l.ContextMap()["receipt"].(string); ok {
			if logged[l.Message] == nil {
				logged[l.Message] = map[string]bool{}
			}
			logged[l.Message][r] = true
		}
	}
	if !logged["proxy: request"][id] || !logged["window: compacted"][id] {
		t.Errorf("receipt %s in the log lines: %v", id, logged)
	}

	if err := rcpts.Close(); err != nil {
		t.Fatal(err)
	}
	r, found, err := st.Receipts().Receipt(ctx, id)
	if err != nil || !found {
		t.Fatalf("receipt %s: %v, %v", id, found, err)
	}
	if !strings.Contains(r.Summary, up.Summary) || r.Writer != receipt.WriterModel || len(r.Replaced) == 0 ||
		r.API != "chat" || r.Model != "gpt-test" || r.Client.Messages == 0 || r.Before.Tokens <= r.After.Tokens {
		t.Errorf("receipt: %+v", r)
	}
	if r.FirstUsage == nil || r.FirstUsage.Input == 0 || r.NextUsage == nil {
		t.Errorf("receipt usages: first %v, next %v", r.FirstUsage, r.NextUsage)
	}
	_, reqs, rs, found, err := st.Receipts().Conversation(ctx, r.Conversation)
	if err != nil || !found {
		t.Fatalf("conversation %s: %v, %v", r.Conversation, found, err)
	}
	if len(reqs) != len(ids)+1 || len(rs) == 0 {
		t.Errorf("conversation: %d requests recorded of %d sent, %d receipts", len(reqs), len(ids)+1, len(rs))
	}
	for i, q := range reqs {
		if q.Usage == nil || q.Usage.Input == 0 || q.Status != http.StatusOK {
			t.Errorf("request %d recorded: %+v", i, q)
			break
		}
	}
}

// TestReceiptsConversations: requests naming conversations apart
// (the conversation header) are recorded apart, though they begin alike.
func TestReceiptsConversations(t *testing.T) {
	ctx := context.Background()
	st, rcpts := receiptStore(t)
	f := newFixture(t, &openaitest.Upstream{}, func(o *proxy.Options) { o.Receipts = rcpts })
	msgs := openaitest.ToolConversation(5, "lexer")
	for _, conv := range []string{"", "a", "b", "a"} {
		f.chat(t, chatBody(t, msgs), "Abridge-Conversation", conv)
	}
	if err := rcpts.Close(); err != nil {
		t.Fatal(err)
	}
	convs, err := st.Receipts().Conversations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var counts []int
	for _, c := range convs {
		counts = append(counts, c.Requests)
	}
	if len(counts) != 3 || counts[0]+counts[1]+counts[2] != 4 {
		t.Errorf("conversations' requests: %v, want 3 conversations of 4 requests", counts)
	}
}
