package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/receipt"
)

// RequestMaxRows bounds the request records kept: past it the oldest are
// deleted. Receipts are kept as summaries are (see [SummaryMaxAge]), and
// request records for SummaryMaxAge too.
const RequestMaxRows = 1_000_000

// Bounds of what one read of the receipts returns.
const (
	// conversationsRead bounds the conversations a listing returns, the
	// most recently active first.
	conversationsRead = 500
	// conversationRequestsRead bounds the requests of one conversation
	// read, the most recent.
	conversationRequestsRead = 5000
	// conversationReceiptsRead bounds its receipts read, the most recent.
	conversationReceiptsRead = 1000
)

// Receipts holds the receipts of compactions (receipt.Receipt) and the
// records of the requests a proxy forwarded (receipt.Request), on a session
// database: every process sharing the database (the replicas of a proxy)
// sees what the others recorded. It is safe for concurrent use and lives as
// long as its store.
type Receipts struct {
	st *Store
}

// Receipts returns the receipts on this database.
func (s *Store) Receipts() *Receipts { return &Receipts{st: s} }

// SaveReceipt records r, unless a receipt with its id is recorded already
// (the same compaction, made by another request or replica). Its usages
// are recorded by SetUsage.
func (rs *Receipts) SaveReceipt(ctx context.Context, r receipt.Receipt) error {
	r.FirstUsage, r.NextUsage = nil, nil
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save receipt: %w", err)
	}
	now := time.Now()
	err = rs.st.write(ctx, "save receipt", func(t backend.Tx) error {
		_, err := t.Exec(ctx, `INSERT INTO receipts (id, conversation, ref, created, used, data)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			r.ID, r.Conversation, r.Ref, r.Time.UnixNano(), now.UnixNano(), string(data))
		return err
	})
	if err != nil {
		return err
	}
	rs.maybePrune(ctx, now)
	return nil
}

// SetUsage records u as the provider's usage of the first request sent
// with receipt id's marker (first), or of the next one; a usage recorded
// already is kept.
func (rs *Receipts) SetUsage(ctx context.Context, id string, first bool, u receipt.Usage) error {
	data, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("set receipt usage: %w", err)
	}
	column := "next_usage"
	if first {
		column = "first_usage"
	}
	return rs.st.write(ctx, "set receipt usage", func(t backend.Tx) error {
		_, err := t.Exec(ctx, `UPDATE receipts SET `+column+` = $1 WHERE id = $2 AND `+column+` = ''`, string(data), id)
		return err
	})
}

// Receipt returns the receipt with id; found is false when there is none.
func (rs *Receipts) Receipt(ctx context.Context, id string) (r receipt.Receipt, found bool, err error) {
	err = rs.st.readOne(ctx, "read receipt", func(t backend.Tx) error {
		rows, err := t.Query(ctx, `SELECT data, first_usage, next_usage FROM receipts WHERE id = $1`, id)
		if err != nil {
			return err
		}
		all, err := scanReceipts(rows)
		if len(all) > 0 {
			r, found = all[0], true
		}
		return err
	})
	return r, found, err
}

// FindReceipt returns the id of the newest receipt of conversation whose
// summary has reference ref, and records it as used when that was lately
// not done; found is false when there is none.
func (rs *Receipts) FindReceipt(ctx context.Context, conversation, ref string) (id string, found bool, err error) {
	var used int64
	err = rs.st.readOne(ctx, "find receipt", func(t backend.Tx) error {
		found, err = present(queryRow(ctx, t, `SELECT id, used FROM receipts WHERE ref = $1 AND conversation = $2
			ORDER BY created DESC LIMIT 1`, ref, conversation).Scan(&id, &used))
		return err
	})
	if err != nil || !found {
		return "", false, err
	}
	if now := time.Now(); now.Sub(time.Unix(0, used)) > summaryTouchAge {
		err := rs.st.write(ctx, "touch receipt", func(t backend.Tx) error {
			_, err := t.Exec(ctx, `UPDATE receipts SET used = $1 WHERE id = $2`, now.UnixNano(), id)
			return err
		})
		if err != nil {
			// Costs only an earlier deletion.
			rs.st.log.Warn("session: receipts", zap.Error(err))
		}
	}
	return id, true, nil
}

// AddRequests records the requests reqs, in one transaction.
func (rs *Receipts) AddRequests(ctx context.Context, reqs ...receipt.Request) error {
	if len(reqs) == 0 {
		return nil
	}
	err := rs.st.write(ctx, "record requests", func(t backend.Tx) error {
		for _, q := range reqs {
			usage := ""
			if q.Usage != nil {
				data, err := json.Marshal(q.Usage)
				if err != nil {
					return err
				}
				usage = string(data)
			}
			_, err := t.Exec(ctx, `INSERT INTO requests (conversation, created, api, model, status, client_messages, client_tokens,
				sent_messages, sent_tokens, provider_usage, receipt, compacted) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				q.Conversation, q.Time.UnixNano(), q.API, q.Model, int64(q.Status), int64(q.Client.Messages), int64(q.Client.Tokens),
				int64(q.Sent.Messages), int64(q.Sent.Tokens), usage, q.Receipt, q.Compacted)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rs.maybePrune(ctx, time.Now())
	return nil
}

// conversationColumns are the columns a conversation's summary is read
// from, grouped by conversation (q is the requests table).
const conversationColumns = `q.conversation, COUNT(*), CAST(SUM(q.client_tokens - q.sent_tokens) AS BIGINT), MIN(q.created), MAX(q.created),
	(SELECT COUNT(*) FROM receipts r WHERE r.conversation = q.conversation),
	(SELECT l.api FROM requests l WHERE l.conversation = q.conversation ORDER BY l.created DESC, l.id DESC LIMIT 1),
	(SELECT l.model FROM requests l WHERE l.conversation = q.conversation ORDER BY l.created DESC, l.id DESC LIMIT 1)`

// Conversations returns the conversations with recorded requests, the
// most recently active first (at most 500).
func (rs *Receipts) Conversations(ctx context.Context) ([]receipt.Conversation, error) {
	var out []receipt.Conversation
	err := rs.st.readOne(ctx, "list conversations", func(t backend.Tx) error {
		rows, err := t.Query(ctx, `SELECT `+conversationColumns+` FROM requests q
			GROUP BY q.conversation ORDER BY MAX(q.created) DESC LIMIT $1`, int64(conversationsRead))
		if err != nil {
			return err
		}
		out, err = scanConversations(rows)
		return err
	})
	return out, err
}

// Conversation returns the summary of the conversation with id, its
// requests (the last 5000, oldest first) and its receipts (the last 1000,
// oldest first), read in one snapshot; found is false when it has no
// recorded request.
func (rs *Receipts) Conversation(ctx context.Context, id string) (c receipt.Conversation, reqs []receipt.Request, rcpts []receipt.Receipt, found bool, err error) {
	err = rs.st.read(ctx, "read conversation", func(t backend.Tx) error {
		rows, err := t.Query(ctx, `SELECT `+conversationColumns+` FROM requests q WHERE q.conversation = $1
			GROUP BY q.conversation`, id)
		if err != nil {
			return err
		}
		cs, err := scanConversations(rows)
		if err != nil || len(cs) == 0 {
			return err
		}
		c, found = cs[0], true
		if reqs, err = rs.requests(ctx, t, id); err != nil {
			return err
		}
		rows, err = t.Query(ctx, `SELECT data, first_usage, next_usage FROM receipts WHERE conversation = $1
			ORDER BY created DESC LIMIT $2`, id, int64(conversationReceiptsRead))
		if err != nil {
			return err
		}
		rcpts, err = scanReceipts(rows)
		reverse(rcpts)
		return err
	})
	return c, reqs, rcpts, found, err
}

// requests reads the last requests of conversation id, oldest first.
func (rs *Receipts) requests(ctx context.Context, t backend.Tx, id string) ([]receipt.Request, error) {
	rows, err := t.Query(ctx, `SELECT created, api, model, status, client_messages, client_tokens, sent_messages, sent_tokens,
		provider_usage, receipt, compacted FROM requests WHERE conversation = $1 ORDER BY created DESC, id DESC LIMIT $2`,
		id, int64(conversationRequestsRead))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []receipt.Request
	for rows.Next() {
		var (
			q                                   = receipt.Request{Conversation: id}
			created, status, cm, ct, sm, sentTk int64
			usage                               string
		)
		if err := rows.Scan(&created, &q.API, &q.Model, &status, &cm, &ct, &sm, &sentTk, &usage, &q.Receipt, &q.Compacted); err != nil {
			return nil, err
		}
		q.Time, q.Status = time.Unix(0, created), int(status)
		q.Client, q.Sent = receipt.Size{Messages: int(cm), Tokens: int(ct)}, receipt.Size{Messages: int(sm), Tokens: int(sentTk)}
		if usage != "" {
			q.Usage = &receipt.Usage{}
			if err := json.Unmarshal([]byte(usage), q.Usage); err != nil {
				return nil, fmt.Errorf("request usage: %w", err)
			}
		}
		out = append(out, q)
	}
	reverse(out)
	return out, rows.Err()
}

// Version returns a value that changes whenever a request or a receipt is
// recorded: a page polls it to know when to refresh.
func (rs *Receipts) Version(ctx context.Context) (string, error) {
	var requests, receipts int64
	err := rs.st.readOne(ctx, "receipts version", func(t backend.Tx) error {
		return queryRow(ctx, t, `SELECT COALESCE((SELECT MAX(id) FROM requests), 0),
			COALESCE((SELECT MAX(created) FROM receipts), 0)`).Scan(&requests, &receipts)
	})
	return fmt.Sprintf("%d.%d", requests, receipts), err
}

// scanConversations reads rows of conversationColumns, closing them.
func scanConversations(rows backend.Rows) ([]receipt.Conversation, error) {
	defer rows.Close()
	var out []receipt.Conversation
	for rows.Next() {
		var (
			c                                  receipt.Conversation
			n, saved, first, last, compactions int64
		)
		if err := rows.Scan(&c.ID, &n, &saved, &first, &last, &compactions, &c.API, &c.Model); err != nil {
			return nil, err
		}
		c.Requests, c.Compactions, c.Saved = int(n), int(compactions), saved
		c.First, c.Last = time.Unix(0, first), time.Unix(0, last)
		out = append(out, c)
	}
	return out, rows.Err()
}

// scanReceipts reads rows of data, first_usage and next_usage, closing
// them.
func scanReceipts(rows backend.Rows) ([]receipt.Receipt, error) {
	defer rows.Close()
	var out []receipt.Receipt
	for rows.Next() {
		var data, first, next string
		if err := rows.Scan(&data, &first, &next); err != nil {
			return nil, err
		}
		var r receipt.Receipt
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			return nil, fmt.Errorf("receipt: %w", err)
		}
		for _, u := range []struct {
			data string
			to   **receipt.Usage
		}{{first, &r.FirstUsage}, {next, &r.NextUsage}} {
			if u.data == "" {
				continue
			}
			*u.to = &receipt.Usage{}
			if err := json.Unmarshal([]byte(u.data), *u.to); err != nil {
				return nil, fmt.Errorf("receipt %s usage: %w", r.ID, err)
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// present turns the error of a row's scan into whether the row was
// there: errNoRows is no error.
func present(err error) (bool, error) {
	if err == errNoRows {
		return false, nil
	}
	return err == nil, err
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// maybePrune deletes what retention forgets, at most once every
// summaryPruneEvery; a failure is logged.
func (rs *Receipts) maybePrune(ctx context.Context, now time.Time) {
	last := rs.st.receiptsPruned.Load()
	if now.UnixNano()-last < int64(summaryPruneEvery) || !rs.st.receiptsPruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	if err := rs.prune(ctx, now); err != nil {
		rs.st.log.Warn("session: receipts", zap.Error(err))
	}
}

// prune deletes the receipts not used since SummaryMaxAge before now and
// the least recently used beyond SummaryMaxSpans, and the requests older
// than SummaryMaxAge and the oldest beyond RequestMaxRows (or what the
// store was given in their place).
func (rs *Receipts) prune(ctx context.Context, now time.Time) error {
	maxAge, maxReceipts := rs.st.retention()
	maxRequests := int64(RequestMaxRows)
	if rs.st.maxRequests > 0 {
		maxRequests = rs.st.maxRequests
	}
	return rs.st.write(ctx, "prune receipts", func(t backend.Tx) error {
		cutoff := now.Add(-maxAge).UnixNano()
		for _, q := range []string{`DELETE FROM receipts WHERE used < $1`, `DELETE FROM requests WHERE created < $1`} {
			if _, err := t.Exec(ctx, q, cutoff); err != nil {
				return err
			}
		}
		for _, table := range []struct {
			count, trim string
			limit       int64
		}{
			{`SELECT COUNT(*) FROM receipts`, `DELETE FROM receipts WHERE id IN (SELECT id FROM receipts ORDER BY used ASC LIMIT $1)`, maxReceipts},
			{`SELECT COUNT(*) FROM requests`, `DELETE FROM requests WHERE id IN (SELECT id FROM requests ORDER BY id ASC LIMIT $1)`, maxRequests},
		} {
			var n int64
			if err := queryRow(ctx, t, table.count).Scan(&n); err != nil {
				return err
			}
			if n > table.limit {
				if _, err := t.Exec(ctx, table.trim, n-table.limit); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
