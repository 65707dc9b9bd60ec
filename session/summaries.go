package session

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// SummariesPerKey is how many spans a summary store keeps under one
// conversation key: saving one more deletes the oldest.
const SummariesPerKey = 8

// summaries is the window.Store on a session database.
type summaries struct {
	st *store
}

var _ window.Store = summaries{}

// Summaries returns the window's summary store on this database: windows in
// any process sharing it reuse the summaries the others wrote for the same
// content (a restarted process, the replicas of a service). It is safe for
// concurrent use and lives as long as the store.
func (s *store) Summaries() window.Store { return summaries{s} }

// Spans returns the spans saved under key, the most recently saved first.
func (s summaries) Spans(ctx context.Context, key window.Key) ([]window.Span, error) {
	var out []window.Span
	err := s.st.readOne(ctx, "load summaries", func(t tx) error {
		out = out[:0]
		rs, err := t.query(ctx, `SELECT digest, head, count, cleared, last, summary FROM summaries
			WHERE key = $1 ORDER BY created DESC, count DESC LIMIT $2`, key.String(), int64(SummariesPerKey))
		if err != nil {
			return err
		}
		defer rs.close()
		for rs.next() {
			var (
				digest, last         string
				head, count, cleared int64
				sp                   window.Span
			)
			if err := rs.scan(&digest, &head, &count, &cleared, &last, &sp.Summary); err != nil {
				return err
			}
			if err := decodeHex(sp.Digest[:], digest); err != nil {
				return fmt.Errorf("digest %q: %w", digest, err)
			}
			if err := decodeHex(sp.Last[:], last); err != nil {
				return fmt.Errorf("last %q: %w", last, err)
			}
			sp.Head, sp.Count, sp.Cleared = int(head), int(count), int(cleared)
			out = append(out, sp)
		}
		return rs.err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Save records span under key, replacing a span with the same digest, and
// deletes the key's spans beyond the SummariesPerKey most recent.
func (s summaries) Save(ctx context.Context, key window.Key, span window.Span) error {
	k := key.String()
	ref := ""
	if span.Summary != "" {
		ref = summary.Ref(span.Summary)
		span.Summary = storableText(span.Summary) // NUL and invalid UTF-8 as the marker carries them
	}
	return s.st.write(ctx, "save summary", func(t tx) error {
		now := time.Now().UnixNano()
		if _, err := t.exec(ctx, `INSERT INTO summaries (key, digest, head, count, cleared, last, ref, summary, created)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (key, digest) DO UPDATE SET head = excluded.head, count = excluded.count, cleared = excluded.cleared,
				last = excluded.last, ref = excluded.ref, summary = excluded.summary, created = excluded.created`,
			k, span.Digest.String(), int64(span.Head), int64(span.Count), int64(span.Cleared), span.Last.String(),
			ref, span.Summary, now); err != nil {
			return err
		}
		_, err := t.exec(ctx, `DELETE FROM summaries WHERE key = $1 AND digest NOT IN
			(SELECT digest FROM summaries WHERE key = $1 ORDER BY created DESC, count DESC LIMIT $2)`, k, int64(SummariesPerKey))
		return err
	})
}

// Summary returns the summary with reference ref, when a span holding it
// was saved.
func (s summaries) Summary(ctx context.Context, ref string) (string, bool, error) {
	var text string
	found := false
	err := s.st.readOne(ctx, "find summary", func(t tx) error {
		err := t.queryRow(ctx, `SELECT summary FROM summaries WHERE ref = $1 LIMIT 1`, ref).scan(&text)
		switch err {
		case nil:
			found = true
			return nil
		case errNoRows:
			return nil
		}
		return err
	})
	return text, found, err
}

// decodeHex decodes s into dst, which it must fill exactly.
func decodeHex(dst []byte, s string) error {
	if hex.DecodedLen(len(s)) != len(dst) {
		return fmt.Errorf("%d hexadecimal digits, want %d", len(s), 2*len(dst))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}
