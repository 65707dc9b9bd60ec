// Package sqlite is the SQLite driver of package session: a session store
// in one file, in pure Go (modernc.org/sqlite, no cgo), created on first
// use. A program that imports it, and not session/postgres, links no
// PostgreSQL client:
//
//	st, err := session.Open(ctx, sqlite.Driver{Path: path}, logger)
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/abridge-go/abridge/session/internal/backend"
)

// Driver opens a SQLite file as a session store's database. Its zero
// Path is an error; see [DefaultPath] for abridge's default file.
type Driver struct {
	// Path is the file's path. It is created, with its parent
	// directories, when missing (unless Existing is set). It may not
	// name SQLite's in-memory database (":memory:", which each of the
	// store's connections would open afresh) or be a SQLite URI ("file:…"),
	// nor contain '?': nothing is created for those (see Check).
	Path string
	// Existing opens only a file that exists: when Path names none, Open
	// returns an error matching fs.ErrNotExist and creates nothing,
	// neither the file nor its directory. It suits commands that only
	// read, such as a listing of the sessions. Default false: create it.
	Existing bool
}

// String is "SQLite " and the file's path.
func (d Driver) String() string { return "SQLite " + d.Path }

// DefaultPath returns the SQLite file abridge keeps sessions in when none
// is named: abridge/sessions.db under $XDG_DATA_HOME when it is set,
// otherwise under ~/.local/share on Unix-like systems and under
// [os.UserConfigDir] on Windows and macOS.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "abridge", "sessions.db"), nil
	}
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("session default path: %w", err)
		}
		return filepath.Join(dir, "abridge", "sessions.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("session default path: %w", err)
	}
	return filepath.Join(home, ".local", "share", "abridge", "sessions.db"), nil
}

// busyTimeoutMS is how long a statement waits for another connection
// (or process) holding the database's write lock.
const busyTimeoutMS = 30000

// db runs on one SQLite file through two pools: writes take the write lock
// when they begin (BEGIN IMMEDIATE) and are serialised in-process on one
// connection; reads run in deferred transactions, each a consistent
// snapshot (the database is in WAL mode, so readers and the writer do not
// block each other).
type db struct {
	path  string
	write *sql.DB
	read  *sql.DB
}

// Check reports why Open would refuse Path, without touching the file
// system: it is empty, names SQLite's in-memory database, is a SQLite URI
// or contains '?'.
func (d Driver) Check() error {
	path := d.Path
	switch {
	case path == "":
		return errors.New("sqlite: empty path")
	case path == ":memory:":
		return errors.New("sqlite: in-memory databases are not supported: name a file")
	case strings.HasPrefix(path, "file:"):
		return fmt.Errorf("sqlite: %q is a SQLite URI: name the file as sqlite:PATH or a plain path", path)
	case strings.ContainsRune(path, '?'):
		return fmt.Errorf("sqlite: path %q: a path may not contain '?'", path)
	}
	return nil
}

// Open opens the file (creating it and its parent directories when
// missing and Existing is not set). It is called by session.Open.
func (d Driver) Open(ctx context.Context) (backend.DB, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	path := d.Path
	if _, err := os.Stat(path); d.Existing && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no SQLite file %s: %w", path, fs.ErrNotExist)
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
	common := fmt.Sprintf("?_busy_timeout=%d&_journal_mode=WAL&_foreign_keys=1", busyTimeoutMS)
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
	b := &db{path: path, write: write, read: read}
	if err := b.ping(ctx); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return b, nil
}

// ping opens the first connection, which sets the journal mode. Turning a
// new database to WAL takes its lock without waiting on the busy timeout,
// so processes creating the same database at once may be told it is busy:
// that is tried again, for as long as the busy timeout.
func (b *db) ping(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeoutMS * time.Millisecond)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := b.write.PingContext(ctx)
		if err == nil || !b.Retryable(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *db) Begin(ctx context.Context, write bool) (backend.Tx, error) {
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

func (b *db) Statement(context.Context) (backend.Tx, error) {
	return &sqlTx{q: b.read}, nil
}

// LockSchema needs nothing: a write transaction already holds the lock.
func (b *db) LockSchema(context.Context, backend.Tx) error { return nil }

func (b *db) KeyType() string { return "INTEGER PRIMARY KEY AUTOINCREMENT" }

func (b *db) Retryable(err error) bool {
	var e *msqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

func (b *db) Name() string { return "sqlite" }

func (b *db) Close() error {
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

func (t *sqlTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *sqlTx) Query(ctx context.Context, query string, args ...any) (backend.Rows, error) {
	rs, err := t.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

func (t *sqlTx) Commit(context.Context) error {
	if t.tx == nil {
		return nil
	}
	return t.tx.Commit()
}

func (t *sqlTx) Rollback() {
	if t.tx != nil {
		_ = t.tx.Rollback()
	}
}

type sqlRows struct{ rs *sql.Rows }

func (r sqlRows) Next() bool             { return r.rs.Next() }
func (r sqlRows) Scan(dest ...any) error { return r.rs.Scan(dest...) }
func (r sqlRows) Err() error             { return r.rs.Err() }
func (r sqlRows) Close()                 { _ = r.rs.Close() }
