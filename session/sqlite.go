package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteBusyTimeoutMS is how long a statement waits for another connection
// (or process) holding the database's write lock.
const sqliteBusyTimeoutMS = 30000

// sqliteBackend runs on one SQLite file through two pools: writes take the
// write lock when they begin (BEGIN IMMEDIATE) and are serialised in-process
// on one connection; reads run in deferred transactions, each a consistent
// snapshot (the database is in WAL mode, so readers and the writer do not
// block each other).
type sqliteBackend struct {
	path  string
	write *sql.DB
	read  *sql.DB
}

// openSQLite opens (creating it and its parent directories when missing) the
// SQLite database at path.
func openSQLite(ctx context.Context, path string) (*sqliteBackend, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: path %q: a path may not contain '?'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}
	// Create the file ourselves so that it is private to the user.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	common := fmt.Sprintf("?_busy_timeout=%d&_journal_mode=WAL&_foreign_keys=1", sqliteBusyTimeoutMS)
	write, err := sql.Open("sqlite", path+common+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	write.SetMaxOpenConns(1)
	read, err := sql.Open("sqlite", path+common)
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	read.SetMaxOpenConns(4)
	b := &sqliteBackend{path: path, write: write, read: read}
	if err := b.ping(ctx); err != nil {
		_ = b.close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return b, nil
}

// ping opens the first connection, which sets the journal mode. Turning a
// new database to WAL takes its lock without waiting on the busy timeout,
// so processes creating the same database at once may be told it is busy:
// that is tried again, for as long as the busy timeout.
func (b *sqliteBackend) ping(ctx context.Context) error {
	deadline := time.Now().Add(sqliteBusyTimeoutMS * time.Millisecond)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := b.write.PingContext(ctx)
		if err == nil || !b.retryable(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *sqliteBackend) begin(ctx context.Context, write bool) (tx, error) {
	db := b.read
	if write {
		db = b.write
	}
	t, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &sqlTx{tx: t, q: t}, nil
}

func (b *sqliteBackend) statement(context.Context) (tx, error) {
	return &sqlTx{q: b.read}, nil
}

// lockSchema needs nothing: a write transaction already holds the lock.
func (b *sqliteBackend) lockSchema(context.Context, tx) error { return nil }

func (b *sqliteBackend) keyType() string { return "INTEGER PRIMARY KEY AUTOINCREMENT" }

func (b *sqliteBackend) retryable(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

func (b *sqliteBackend) name() string { return "sqlite" }

func (b *sqliteBackend) close() error {
	return errors.Join(b.write.Close(), b.read.Close())
}

// sqlTx is a database/sql transaction.
type sqlTx struct {
	tx *sql.Tx // nil: no explicit transaction (statement)
	q  sqlQuerier
}

// sqlQuerier is what *sql.Tx and *sql.DB both run statements with.
type sqlQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (t *sqlTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *sqlTx) query(ctx context.Context, query string, args ...any) (rows, error) {
	rs, err := t.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

func (t *sqlTx) queryRow(ctx context.Context, query string, args ...any) row {
	rs, err := t.query(ctx, query, args...)
	return firstRow{rs: rs, err: err}
}

func (t *sqlTx) commit(context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit()
}

func (t *sqlTx) rollback() {
	if t.tx != nil {
		_ = t.tx.Rollback()
	}
}

type sqlRows struct{ rs *sql.Rows }

func (r sqlRows) next() bool             { return r.rs.Next() }
func (r sqlRows) scan(dest ...any) error { return r.rs.Scan(dest...) }
func (r sqlRows) err() error             { return r.rs.Err() }
func (r sqlRows) close()                 { _ = r.rs.Close() }
