package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/abridge-go/abridge/processors/window"
)

// Store holds named sessions. Implementations are safe for concurrent use,
// and several stores (in one process or many) may share one database.
type Store interface {
	// Session opens the session called name, creating it empty when it
	// does not exist. The name must be non-empty valid UTF-8 without NUL
	// bytes.
	Session(ctx context.Context, name string) (*Session, error)
	// List describes every session, sorted by name (byte by byte, on
	// either database).
	List(ctx context.Context) ([]Info, error)
	// Summaries returns the window's summary store on the same database
	// (see window.Store): windows in every process sharing the database
	// find the summaries the others wrote.
	Summaries() window.Store
	// Receipts returns the receipts of compactions and the records of
	// requests a proxy forwarded, on the same database: every process
	// sharing it sees what the others recorded.
	Receipts() *Receipts
	// Close releases the database. Sessions of a closed store return
	// errors.
	Close() error
}

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

// DefaultPath returns the SQLite file [Open] uses for an empty DSN:
// abridge/sessions.db under $XDG_DATA_HOME when it is set, otherwise under
// ~/.local/share on Unix-like systems and under [os.UserConfigDir] on
// Windows and macOS.
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

// Open opens the store named by dsn, creating its schema or migrating it to
// this version when needed:
//
//   - "" opens the SQLite file at [DefaultPath];
//   - "postgres://…" or "postgresql://…" opens a PostgreSQL database (any
//     connection string pgx accepts in that form), and so does a
//     PostgreSQL keyword/value string ("host=db dbname=abridge
//     password=…"): any DSN that starts with a word and "=";
//   - "sqlite:PATH" or a plain PATH opens the SQLite file at PATH, creating
//     it and its parent directories when missing.
//
// Any other DSN of the form "scheme://…" (a misspelt "postgres://", say) is
// an error naming the scheme, and so are SQLite's in-memory database
// (":memory:", which each of the store's connections would open afresh) and
// SQLite URIs ("file:…"): nothing is created for them. A SQLite file whose
// name starts with a word and "=" is named with sqlite:PATH. Errors never
// hold the DSN's password. A nil logger logs nothing.
func Open(ctx context.Context, dsn string, logger *zap.Logger) (Store, error) {
	return open(ctx, dsn, logger, true)
}

// OpenExisting opens the store named by dsn as [Open] does, except that it
// creates no SQLite file: when dsn names one that does not exist, it
// returns an error matching fs.ErrNotExist and creates nothing, neither the
// file nor its directory. It suits commands that only read, such as a
// listing of the sessions.
func OpenExisting(ctx context.Context, dsn string, logger *zap.Logger) (Store, error) {
	return open(ctx, dsn, logger, false)
}

func open(ctx context.Context, dsn string, logger *zap.Logger, create bool) (Store, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	var (
		b   backend
		err error
	)
	switch {
	case isPostgres(dsn):
		b, err = openPostgres(ctx, dsn)
	default:
		var path string
		if path, err = sqlitePath(dsn); err == nil {
			if _, serr := os.Stat(path); !create && errors.Is(serr, fs.ErrNotExist) {
				return nil, fmt.Errorf("open session store: no SQLite file %s: %w", path, fs.ErrNotExist)
			}
			b, err = openSQLite(ctx, path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if err := migrate(ctx, b); err != nil {
		_ = b.close()
		return nil, fmt.Errorf("open session store: %w", err)
	}
	logger.Debug("session store opened", zap.String("backend", b.name()))
	return &store{b: b, log: logger}, nil
}

// isPostgres reports whether dsn names a PostgreSQL database (see [Open]).
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || keywordDSN.MatchString(dsn)
}

// Describe says which database dsn names, as [Open] reads it, with
// nothing a password could hide in: "PostgreSQL", or "SQLite " and the
// file's path; "" when Open would refuse dsn.
func Describe(dsn string) string {
	if isPostgres(dsn) {
		return "PostgreSQL"
	}
	path, err := sqlitePath(dsn)
	if err != nil {
		return ""
	}
	return "SQLite " + path
}

// keywordDSN matches the start of a PostgreSQL keyword/value connection
// string: a keyword, then "=".
var keywordDSN = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

// sqlitePath returns the SQLite file a DSN that is not a PostgreSQL URL
// names (see [Open]), or why it names none.
func sqlitePath(dsn string) (string, error) {
	path, ok := strings.CutPrefix(dsn, "sqlite:")
	if ok {
		path = strings.TrimPrefix(path, "//") // sqlite:///abs/path
	} else if scheme, _, ok := strings.Cut(dsn, "://"); ok && isScheme(scheme) {
		// Only the scheme: the rest may hold a password.
		return "", fmt.Errorf("unknown scheme %q: want postgres://, postgresql://, sqlite:PATH or a file path", scheme)
	}
	switch {
	case path == "":
		return DefaultPath()
	case path == ":memory:":
		return "", errors.New("sqlite: in-memory databases are not supported: name a file")
	case strings.HasPrefix(path, "file:"):
		return "", fmt.Errorf("sqlite: %q is a SQLite URI: name the file as sqlite:PATH or a plain path", path)
	}
	return path, nil
}

// isScheme reports whether s is a URL scheme of more than one letter (one
// letter is a Windows drive).
func isScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// store is the Store on any backend.
type store struct {
	b      backend
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

func (s *store) Session(ctx context.Context, name string) (*Session, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var id, version int64
	err := s.write(ctx, "open session "+strconv.Quote(name), func(t tx) error {
		now := time.Now().UnixNano()
		if _, err := t.exec(ctx, `INSERT INTO sessions (name, version, created, updated) VALUES ($1, 0, $2, $2)
			ON CONFLICT (name) DO NOTHING`, name, now); err != nil {
			return err
		}
		return t.queryRow(ctx, `SELECT id, version FROM sessions WHERE name = $1`, name).scan(&id, &version)
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

func (s *store) List(ctx context.Context) ([]Info, error) {
	var out []Info
	err := s.read(ctx, "list sessions", func(t tx) error {
		rs, err := t.query(ctx, `SELECT s.name, s.created, s.updated,
			(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND NOT m.synthetic),
			(SELECT COUNT(*) FROM compactions c WHERE c.session_id = s.id AND c.withdrawn = ''),
			(SELECT COUNT(*) FROM compactions c WHERE c.session_id = s.id AND c.withdrawn <> ''),
			(SELECT COUNT(*) FROM working w WHERE w.session_id = s.id)
			FROM sessions s`)
		if err != nil {
			return err
		}
		defer rs.close()
		for rs.next() {
			var (
				info                        Info
				created, updated            int64
				msgs, comps, wdrawn, wcount int64
			)
			if err := rs.scan(&info.Name, &created, &updated, &msgs, &comps, &wdrawn, &wcount); err != nil {
				return err
			}
			info.Created, info.Updated = time.Unix(0, created), time.Unix(0, updated)
			info.Messages, info.Compactions, info.Withdrawn, info.Working = int(msgs), int(comps), int(wdrawn), int(wcount)
			out = append(out, info)
		}
		return rs.err()
	})
	// Sorted here, by bytes: ORDER BY would follow PostgreSQL's collation.
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out, err
}

func (s *store) Close() error {
	if err := s.b.close(); err != nil {
		return fmt.Errorf("close session store: %w", err)
	}
	return nil
}

// maxAttempts bounds how often a write is run again after contention.
const maxAttempts = 8

// write runs fn in a write transaction and commits it, running it again
// (up to maxAttempts times) when the database reports contention. fn must
// be safe to run again: everything it did is rolled back first.
func (s *store) write(ctx context.Context, what string, fn func(t tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.once(ctx, true, fn)
		if err == nil || !s.b.retryable(err) || attempt == maxAttempts {
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
func (s *store) read(ctx context.Context, what string, fn func(t tx) error) error {
	if err := s.once(ctx, false, fn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// readOne runs fn, which runs one statement, outside an explicit
// transaction: a single statement sees one snapshot by itself, and the
// round trips of BEGIN and COMMIT are saved (the summary store's lookups,
// made before every model request).
func (s *store) readOne(ctx context.Context, what string, fn func(t tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	t, err := s.b.statement(ctx)
	if err == nil {
		defer t.rollback()
		if err = fn(t); err == nil {
			err = t.commit(ctx)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (s *store) once(ctx context.Context, write bool, fn func(t tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := s.b.begin(ctx, write)
	if err != nil {
		return err
	}
	defer t.rollback()
	if err := fn(t); err != nil {
		return err
	}
	return t.commit(ctx)
}
