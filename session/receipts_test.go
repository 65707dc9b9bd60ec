package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/receipt"
)

// sampleReceipt is a receipt of conversation conv made at t.
func sampleReceipt(id, conv, ref string, t time.Time) receipt.Receipt {
	return receipt.Receipt{
		ID: id, Conversation: conv, API: "chat", Model: "gpt-test", Time: t,
		Client: receipt.Size{Messages: 41, Tokens: 9000}, Before: receipt.Size{Messages: 41, Tokens: 8000},
		After: receipt.Size{Messages: 23, Tokens: 3000}, From: 2, To: 20,
		Replaced: []receipt.Replaced{{Role: "assistant", Tools: []string{"bash"}, Chars: 120}, {Role: "tool", Tools: []string{"bash"}, Chars: 4000}},
		Summary:  "The user asks for <script>alert(1)</script> and\x00 more", Ref: ref, Writer: receipt.WriterDigest, Reason: "timeout",
		SummarizerUsage: receipt.Usage{Input: 5000, Output: 300}, Duration: 1500 * time.Millisecond,
	}
}

func sampleRequest(conv string, t time.Time, rcpt string, compacted bool, usage *receipt.Usage) receipt.Request {
	return receipt.Request{Conversation: conv, Time: t, API: "chat", Model: "gpt-test", Status: 200,
		Client: receipt.Size{Messages: 41, Tokens: 9000}, Sent: receipt.Size{Messages: 23, Tokens: 3000},
		Usage: usage, Receipt: rcpt, Compacted: compacted}
}

// TestReceipts saves receipts and requests and reads them back: a
// receipt saved twice keeps its first record, is found by its
// conversation and reference (not by another conversation's), takes the
// first and the next usage once each, and the conversations sum up their
// requests and receipts.
func TestReceipts(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		rs := openStore(t, newDSN(t)).Receipts()
		t0 := time.Unix(1_700_000_000, 0)
		a := sampleReceipt("aaaaaaaaaaaaaaaaaaaaaaaa", "c1", "sum-1", t0)
		if err := rs.SaveReceipt(ctx, a); err != nil {
			t.Fatal(err)
		}
		again := a
		again.Summary = "another"
		if err := rs.SaveReceipt(ctx, again); err != nil {
			t.Fatal(err)
		}
		got, found, err := rs.Receipt(ctx, a.ID)
		if err != nil || !found {
			t.Fatalf("Receipt = %v, %v", found, err)
		}
		want := a
		want.Summary = "The user asks for <script>alert(1)</script> and\x00 more"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("receipt read back (-want +got):\n%s", diff)
		}
		if _, found, err := rs.Receipt(ctx, "bbbbbbbbbbbbbbbbbbbbbbbb"); err != nil || found {
			t.Errorf("Receipt of an unknown id = %v, %v", found, err)
		}

		for _, tc := range []struct {
			conv, ref string
			want      string
		}{{"c1", "sum-1", a.ID}, {"c2", "sum-1", ""}, {"c1", "sum-2", ""}} {
			id, found, err := rs.FindReceipt(ctx, tc.conv, tc.ref)
			if err != nil || id != tc.want || found != (tc.want != "") {
				t.Errorf("FindReceipt(%s, %s) = %q, %v, %v; want %q", tc.conv, tc.ref, id, found, err, tc.want)
			}
		}

		first, next := receipt.Usage{Input: 3100, Cached: 1200, Output: 20}, receipt.Usage{Input: 3200, Cached: 3000, Output: 30}
		for _, u := range []struct {
			first bool
			u     receipt.Usage
		}{{true, first}, {false, next}, {true, next}, {false, first}} {
			if err := rs.SetUsage(ctx, a.ID, u.first, u.u); err != nil {
				t.Fatal(err)
			}
		}
		got, _, _ = rs.Receipt(ctx, a.ID)
		if diff := cmp.Diff([]*receipt.Usage{&first, &next}, []*receipt.Usage{got.FirstUsage, got.NextUsage}); diff != "" {
			t.Errorf("usages (-want +got):\n%s", diff)
		}

		v0, err := rs.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reqs := []receipt.Request{
			sampleRequest("c1", t0.Add(-time.Minute), "", false, nil),
			sampleRequest("c1", t0, a.ID, true, &first),
			sampleRequest("c2", t0.Add(time.Minute), "", false, &next),
		}
		reqs[0].Sent = reqs[0].Client
		reqs[2].API, reqs[2].Model = "messages", "claude-test"
		if err := rs.AddRequests(ctx, reqs...); err != nil {
			t.Fatal(err)
		}
		if v1, _ := rs.Version(ctx); v1 == v0 {
			t.Errorf("Version stayed %s after requests were recorded", v1)
		}
		convs, err := rs.Conversations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantConvs := []receipt.Conversation{
			{ID: "c2", API: "messages", Model: "claude-test", Requests: 1, Saved: 6000, First: t0.Add(time.Minute), Last: t0.Add(time.Minute)},
			{ID: "c1", API: "chat", Model: "gpt-test", Requests: 2, Compactions: 1, Saved: 6000, First: t0.Add(-time.Minute), Last: t0},
		}
		if diff := cmp.Diff(wantConvs, convs); diff != "" {
			t.Errorf("conversations (-want +got):\n%s", diff)
		}
		c, gotReqs, gotRcpts, found, err := rs.Conversation(ctx, "c1")
		if err != nil || !found {
			t.Fatalf("Conversation = %v, %v", found, err)
		}
		if diff := cmp.Diff(wantConvs[1], c); diff != "" {
			t.Errorf("conversation (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(reqs[:2], gotReqs); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if len(gotRcpts) != 1 || gotRcpts[0].ID != a.ID || gotRcpts[0].NextUsage == nil {
			t.Errorf("receipts of the conversation: %+v", gotRcpts)
		}
		if _, _, _, found, err := rs.Conversation(ctx, "c3"); err != nil || found {
			t.Errorf("Conversation of an unknown id = %v, %v", found, err)
		}
	})
}

// TestReceiptsShared: what one store (a replica) records, another on the
// same database reads.
func TestReceiptsShared(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		dsn := newDSN(t)
		one, two := openStore(t, dsn).Receipts(), openStore(t, dsn).Receipts()
		r := sampleReceipt("cccccccccccccccccccccccc", "c1", "sum-1", time.Now())
		if err := one.SaveReceipt(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := one.AddRequests(ctx, sampleRequest("c1", time.Now(), r.ID, true, nil)); err != nil {
			t.Fatal(err)
		}
		if got, found, err := two.Receipt(ctx, r.ID); err != nil || !found || got.Summary != r.Summary {
			t.Errorf("the other store reads %v, %v, %v", got.ID, found, err)
		}
		if convs, err := two.Conversations(ctx); err != nil || len(convs) != 1 || convs[0].Compactions != 1 {
			t.Errorf("the other store lists %+v, %v", convs, err)
		}
	})
}

// TestReceiptsRetention: receipts not used for the retention's age go, and
// the least recently used beyond its count; requests older than the age
// go, and the oldest beyond their bound.
func TestReceiptsRetention(t *testing.T) {
	backends(t, func(t *testing.T, newDSN newDSN) {
		ctx := context.Background()
		st := openStore(t, newDSN(t))
		st.maxAge, st.maxSpans, st.maxRequests = time.Hour, 2, 3
		rs := st.Receipts()
		now := time.Now()
		ids := []string{"100000000000000000000000", "200000000000000000000000", "300000000000000000000000", "400000000000000000000000"}
		for i, id := range ids {
			if err := rs.SaveReceipt(ctx, sampleReceipt(id, "c1", "sum-"+id, now)); err != nil {
				t.Fatal(err)
			}
			if err := rs.AddRequests(ctx, sampleRequest("c1", now.Add(time.Duration(i)*time.Second), id, true, nil)); err != nil {
				t.Fatal(err)
			}
		}
		// The first receipt and request are old; the second receipt was
		// used before the third and fourth.
		if err := st.write(ctx, "test", func(t backend.Tx) error {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`UPDATE receipts SET used = $1 WHERE id = $2`, []any{now.Add(-2 * time.Hour).UnixNano(), ids[0]}},
				{`UPDATE receipts SET used = $1 WHERE id = $2`, []any{now.Add(-time.Minute).UnixNano(), ids[1]}},
				{`UPDATE requests SET created = $1 WHERE receipt = $2`, []any{now.Add(-2 * time.Hour).UnixNano(), ids[0]}},
			} {
				if _, err := t.Exec(ctx, q.sql, q.args...); err != nil {
					return err
				}
			}
			// One more request: 4 left after the age, one over the bound.
			_, err := t.Exec(ctx, `INSERT INTO requests (conversation, created, api, model, status, client_messages, client_tokens,
				sent_messages, sent_tokens, provider_usage, receipt, compacted) VALUES ('c1', $1, '', '', 200, 1, 1, 1, 1, '', 'last', FALSE)`,
				now.Add(time.Hour).UnixNano())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := rs.prune(ctx, now); err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, id := range ids {
			if _, found, _ := rs.Receipt(ctx, id); found {
				kept = append(kept, id)
			}
		}
		if diff := cmp.Diff(ids[2:], kept); diff != "" {
			t.Errorf("receipts kept (-want +got):\n%s", diff)
		}
		_, reqs, _, _, err := rs.Conversation(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, q := range reqs {
			left = append(left, q.Receipt)
		}
		if diff := cmp.Diff([]string{ids[2], ids[3], "last"}, left); diff != "" {
			t.Errorf("requests kept (-want +got):\n%s", diff)
		}
	})
}

// checkReceiptsWork saves a receipt and a request in st and reads them.
func checkReceiptsWork(t *testing.T, st *Store) {
	t.Helper()
	ctx := context.Background()
	rs := st.Receipts()
	r := sampleReceipt("dddddddddddddddddddddddd", "c9", "sum-9", time.Now())
	if err := rs.SaveReceipt(ctx, r); err != nil {
		t.Fatalf("save a receipt: %v", err)
	}
	if err := rs.AddRequests(ctx, sampleRequest("c9", time.Now(), r.ID, true, nil)); err != nil {
		t.Fatalf("record a request: %v", err)
	}
	if _, reqs, rcpts, found, err := rs.Conversation(ctx, "c9"); err != nil || !found || len(reqs) != 1 || len(rcpts) != 1 {
		t.Errorf("Conversation = %d requests, %d receipts, %v, %v", len(reqs), len(rcpts), found, err)
	}
}
