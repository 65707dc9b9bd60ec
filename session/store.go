package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/session/internal/backend"
)

// Info describes a stored session.
type Info struct {
	// Name is the session's name.
	Name string
	// Messages is the number of messages in the transcript.
	Messages int
	// Compactions is the number of compactions recorded.
	Compactions int
	// Withdrawn is the number of withdrawn turns recorded (see
	// [Session.Withdraw]).
	Withdrawn int
	// Working is the number of messages in the working history.
	Working int
	// Created is when the session was created.
	Created time.Time
	// Updated is when the session was last written.
	Updated time.Time
}

// Store holds named sessions, on one database. It is safe for concurrent
// use, and several stores (in one process or many) may share one database.
type Store struct {
	b      backend.DB
	log    *zap.Logger
	pruned atomic.Int64 // when the summary store was last pruned, in Unix nanoseconds
	// receiptsPruned is when the receipts and requests were last pruned.
	receiptsPruned atomic.Int64

	// maxAge and maxSpans, when positive, replace SummaryMaxAge and
	// SummaryMaxSpans (for tests).
	maxAge   time.Duration
	maxSpans int64
	// maxRequests, when positive, replaces RequestMaxRows (for tests).
	maxRequests int64
}

// Open opens the store on the database d opens (a [Driver] of
// session/sqlite or session/postgres), creating its schema or migrating it
// to this version when needed. A nil logger logs nothing.
func Open(ctx context.Context, d Driver, logger *zap.Logger) (*Store, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	b, err := d.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if err := migrate(ctx, b); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open session store: %w", err)
	}
	logger.Debug("session store opened", zap.String("backend", b.Name()))
	return &Store{b: b, log: logger}, nil
}

// Session opens the session called name, creating it empty when it does
// not exist. The name must be non-empty valid UTF-8 without NUL bytes.
func (s *Store) Session(ctx context.Context, name string) (*Session, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var id, version int64
	err := s.write(ctx, "open session "+strconv.Quote(name), func(t backend.Tx) error {
		now := time.Now().UnixNano()
		if _, err := t.Exec(ctx, `INSERT INTO sessions (name, version, created, updated) VALUES ($1, 0, $2, $2)
			ON CONFLICT (name) DO NOTHING`, name, now); err != nil {
			return err
		}
		return queryRow(ctx, t, `SELECT id, version FROM sessions WHERE name = $1`, name).Scan(&id, &version)
	})
	if err != nil {
		return nil, err
	}
	return &Session{st: s, id: id, name: name, version: version}, nil
}

// checkName accepts a session name both databases can store: not empty,
// valid UTF-8 and without NUL bytes (PostgreSQL's text holds no others).
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("session: empty name")
	case !utf8.ValidString(name):
		return fmt.Errorf("session: name %q is not valid UTF-8", name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("session: name %q holds a NUL byte", name)
	}
	return nil
}

// List describes every session, sorted by name (byte by byte, on either
// database).
func (s *Store) List(ctx context.Context) ([]Info, error) {
	var out []Info
	err := s.read(ctx, "list sessions", func(t backend.Tx) error {
		rs, err := t.Query(ctx, `SELECT s.name, s.created, s.updated,
			(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND NOT m.synthetic),
			(SELECT COUNT(*) FROM compactions c WHERE c.session_id = s.id AND c.withdrawn = ''),
			(SELECT COUNT(*) FROM compactions c WHERE c.session_id = s.id AND c.withdrawn <> ''),
			(SELECT COUNT(*) FROM working w WHERE w.session_id = s.id)
			FROM sessions s`)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				info                        Info
				created, updated            int64
				msgs, comps, wdrawn, wcount int64
			)
			if err := rs.Scan(&info.Name, &created, &updated, &msgs, &comps, &wdrawn, &wcount); err != nil {
				return err
			}
			info.Created, info.Updated = time.Unix(0, created), time.Unix(0, updated)
			info.Messages, info.Compactions, info.Withdrawn, info.Working = int(msgs), int(comps), int(wdrawn), int(wcount)
			out = append(out, info)
		}
		return rs.Err()
	})
	// Sorted here, by bytes: ORDER BY would follow PostgreSQL's collation.
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

// Close releases the database. Sessions of a closed store return errors.
func (s *Store) Close() error {
	if err := s.b.Close(); err != nil {
		return fmt.Errorf("close session store: %w", err)
	}
	return nil
}

// maxAttempts bounds how often a write is run again after contention.
const maxAttempts = 8

// write runs fn in a write transaction and commits it, running it again
// (up to maxAttempts times) when the database reports contention. fn must
// be safe to run again: everything it did is rolled back first.
func (s *Store) write(ctx context.Context, what string, fn func(t backend.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.once(ctx, true, fn)
		if err == nil || !s.b.Retryable(err) || attempt == maxAttempts {
			break
		}
		s.log.Debug("session write contended: retrying", zap.String("op", what), zap.Int("attempt", attempt), zap.Error(err))
		select {
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// read runs fn in a read-only snapshot.
func (s *Store) read(ctx context.Context, what string, fn func(t backend.Tx) error) error {
	if err := s.once(ctx, false, fn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// readOne runs fn, which runs one statement, outside an explicit
// transaction: a single statement sees one snapshot by itself, and the
// round trips of BEGIN and COMMIT are saved (the summary store's lookups,
// made before every model request).
func (s *Store) readOne(ctx context.Context, what string, fn func(t backend.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	t, err := s.b.Statement(ctx)
	if err == nil {
		defer t.Rollback()
		if err = fn(t); err == nil {
			err = t.Commit(ctx)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *Store) once(ctx context.Context, write bool, fn func(t backend.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := s.b.Begin(ctx, write)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := fn(t); err != nil {
		return err
	}
	return t.Commit(ctx)
}
