package session

import (
	"github.com/abridge-go/abridge/session/internal/backend"

	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processors/window"
	"github.com/abridge-go/abridge/summary"
)

// Retention of the summary store: a span not saved or read for
// SummaryMaxAge is deleted, and so are the least recently used spans
// beyond SummaryMaxSpans. Nothing else deletes a span: spans sharing a key
// (conversations that begin alike) never push each other out.
const (
	SummaryMaxAge   = 30 * 24 * time.Hour
	SummaryMaxSpans = 100_000
)

// Timing of the summary store's upkeep.
const (
	// summaryTouchAge is how old a span's use may grow before a read
	// records it again: at most one write per span and hour.
	summaryTouchAge = time.Hour
	// summaryPruneEvery is how often a store deletes what retention
	// forgets, at most.
	summaryPruneEvery = time.Minute
	// summaryLastsPerQuery bounds the keys of a lookup sent in one query.
	summaryLastsPerQuery = 500
	// summarySpansRead bounds the spans one lookup returns.
	summarySpansRead = 256
)

// retention returns the store's SummaryMaxAge and SummaryMaxSpans, or
// what a test set in their place.
func (s *Store) retention() (time.Duration, int64) {
	age, spans := SummaryMaxAge, int64(SummaryMaxSpans)
	if s.maxAge > 0 {
		age = s.maxAge
	}
	if s.maxSpans > 0 {
		spans = s.maxSpans
	}
	return age, spans
}

// summaries is the window.Store on a session database.
type summaries struct {
	st *Store
}

var (
	_ window.Store   = summaries{}
	_ window.Claimer = summaries{}
)

// Summaries returns the window's summary store on this database: windows in
// any process sharing it reuse the summaries the others wrote for the same
// content (a restarted process, the replicas of a service). It is safe for
// concurrent use and lives as long as the store. See [SummaryMaxAge] for
// what it keeps.
func (s *Store) Summaries() window.Store { return summaries{s} }

// Spans returns the spans saved under key that end with one of lasts, the
// most recently saved first, and records them as used when that was
// lately not done.
func (s summaries) Spans(ctx context.Context, key window.Key, ends func() []window.Key) ([]window.Span, error) {
	lasts := ends()
	if len(lasts) == 0 {
		return nil, nil
	}
	type found struct {
		span          window.Span
		created, used int64
	}
	var all []found
	err := s.st.readOne(ctx, "load summaries", func(t backend.Tx) error {
		all = all[:0]
		for chunk := range slices.Chunk(lasts, summaryLastsPerQuery) {
			args := []any{key.String()}
			marks := make([]string, len(chunk))
			for i, l := range chunk {
				args = append(args, l.String())
				marks[i] = "$" + strconv.Itoa(i+2)
			}
			rs, err := t.Query(ctx, `SELECT digest, head, count, cleared, last, summary, fallback, prepared, created, used FROM summaries
				WHERE key = $1 AND last IN (`+strings.Join(marks, ", ")+`) ORDER BY created DESC, count DESC LIMIT `+
				strconv.Itoa(summarySpansRead), args...)
			if err != nil {
				return err
			}
			err = scanSpans(rs, func(sp window.Span, created, used int64) {
				all = append(all, found{sp, created, used})
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b found) int {
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return cmp.Compare(b.span.Count, a.span.Count)
	})
	all = all[:min(len(all), summarySpansRead)]
	out := make([]window.Span, len(all))
	var stale []string
	now := time.Now()
	for i, f := range all {
		out[i] = f.span
		if now.Sub(time.Unix(0, f.used)) > summaryTouchAge {
			stale = append(stale, f.span.Digest.String())
		}
	}
	if len(stale) > 0 {
		s.touch(ctx, key, stale, now)
	}
	return out, nil
}

// scanSpans reads the rows of a lookup, closing them.
func scanSpans(rs backend.Rows, each func(sp window.Span, created, used int64)) error {
	defer rs.Close()
	for rs.Next() {
		var (
			digest, last                        string
			head, count, cleared, created, used int64
			sp                                  window.Span
		)
		if err := rs.Scan(&digest, &head, &count, &cleared, &last, &sp.Summary, &sp.Fallback, &sp.Prepared, &created, &used); err != nil {
			return err
		}
		if err := decodeHex(sp.Digest[:], digest); err != nil {
			return fmt.Errorf("digest %q: %w", digest, err)
		}
		if err := decodeHex(sp.Last[:], last); err != nil {
			return fmt.Errorf("last %q: %w", last, err)
		}
		sp.Head, sp.Count, sp.Cleared = int(head), int(count), int(cleared)
		each(sp, created, used)
	}
	return rs.Err()
}

// touch records the spans with digests under key as used at now. A
// failure costs only an earlier deletion, so it is logged, not returned.
func (s summaries) touch(ctx context.Context, key window.Key, digests []string, now time.Time) {
	err := s.st.write(ctx, "touch summaries", func(t backend.Tx) error {
		for _, d := range digests {
			if _, err := t.Exec(ctx, `UPDATE summaries SET used = $1 WHERE key = $2 AND digest = $3`,
				now.UnixNano(), key.String(), d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.st.log.Warn("session: summary store", zap.Error(err))
	}
}

// Save records span under key, replacing a span with the same digest
// (unless span is a fallback and the saved one is not), and now and then
// deletes what retention forgets (see [SummaryMaxAge]).
func (s summaries) Save(ctx context.Context, key window.Key, span window.Span) error {
	k := key.String()
	ref := ""
	if span.Summary != "" {
		ref = summary.Ref(span.Summary)
		span.Summary = storableText(span.Summary) // NUL and invalid UTF-8 as the marker carries them
	}
	now := time.Now()
	err := s.st.write(ctx, "save summary", func(t backend.Tx) error {
		_, err := t.Exec(ctx, `INSERT INTO summaries (key, digest, head, count, cleared, last, ref, summary, created, fallback, used, prepared)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9, $11)
			ON CONFLICT (key, digest) DO UPDATE SET head = excluded.head, count = excluded.count, cleared = excluded.cleared,
				last = excluded.last, ref = excluded.ref, summary = excluded.summary, created = excluded.created,
				fallback = excluded.fallback, used = excluded.used, prepared = excluded.prepared
			WHERE (summaries.fallback OR NOT excluded.fallback) AND (summaries.prepared OR NOT excluded.prepared)`,
			k, span.Digest.String(), int64(span.Head), int64(span.Count), int64(span.Cleared), span.Last.String(),
			ref, span.Summary, now.UnixNano(), span.Fallback, span.Prepared)
		return err
	})
	if err != nil {
		return err
	}
	if last := s.st.pruned.Load(); now.UnixNano()-last >= int64(summaryPruneEvery) && s.st.pruned.CompareAndSwap(last, now.UnixNano()) {
		if err := s.prune(ctx, now); err != nil {
			s.st.log.Warn("session: summary store", zap.Error(err))
		}
	}
	return nil
}

// prune deletes the spans not used since SummaryMaxAge before now, and the
// least recently used beyond SummaryMaxSpans (or what the store was given
// in their place).
func (s summaries) prune(ctx context.Context, now time.Time) error {
	return s.st.write(ctx, "prune summaries", func(t backend.Tx) error {
		maxAge, maxSpans := s.st.retention()
		if _, err := t.Exec(ctx, `DELETE FROM summaries WHERE used < $1`, now.Add(-maxAge).UnixNano()); err != nil {
			return err
		}
		// Claims whose holders died without releasing them.
		if _, err := t.Exec(ctx, `DELETE FROM summary_claims WHERE expires < $1`, now.Add(-time.Hour).UnixNano()); err != nil {
			return err
		}
		var n int64
		if err := queryRow(ctx, t, `SELECT COUNT(*) FROM summaries`).Scan(&n); err != nil {
			return err
		}
		if n <= maxSpans {
			return nil
		}
		_, err := t.Exec(ctx, `DELETE FROM summaries WHERE (key, digest) IN
			(SELECT key, digest FROM summaries ORDER BY used ASC LIMIT $1)`, n-maxSpans)
		return err
	})
}

// Claim claims the summary of the span with digest d for holder until ttl
// from now (see window.Claimer): it inserts the claim, renews the
// holder's own, or takes over one that expired, in one statement, so that
// of the processes sharing the database that claim an unclaimed span at
// once exactly one gets it.
func (s summaries) Claim(ctx context.Context, d window.Digest, holder string, ttl time.Duration) (bool, error) {
	now := time.Now()
	var n int64
	err := s.st.write(ctx, "claim summary", func(t backend.Tx) error {
		var err error
		n, err = t.Exec(ctx, `INSERT INTO summary_claims (digest, holder, expires) VALUES ($1, $2, $3)
			ON CONFLICT (digest) DO UPDATE SET holder = excluded.holder, expires = excluded.expires
			WHERE summary_claims.holder = excluded.holder OR summary_claims.expires <= $4`,
			d.String(), holder, now.Add(ttl).UnixNano(), now.UnixNano())
		return err
	})
	return n == 1, err
}

// Release ends holder's claim on d.
func (s summaries) Release(ctx context.Context, d window.Digest, holder string) error {
	return s.st.write(ctx, "release summary", func(t backend.Tx) error {
		_, err := t.Exec(ctx, `DELETE FROM summary_claims WHERE digest = $1 AND holder = $2`, d.String(), holder)
		return err
	})
}

// Summary returns the summary with reference ref, when a span holding it
// was saved.
func (s summaries) Summary(ctx context.Context, ref string) (string, bool, error) {
	var text string
	found := false
	err := s.st.readOne(ctx, "find summary", func(t backend.Tx) error {
		err := queryRow(ctx, t, `SELECT summary FROM summaries WHERE ref = $1 LIMIT 1`, ref).Scan(&text)
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
