package session

import (
	"github.com/abridge-go/abridge/session/postgres"
	"github.com/abridge-go/abridge/session/sqlite"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/testkit/pgtest"
)

// newDSN returns the DSN of a new, empty store.
type newDSN func(t testing.TB) string

// sqliteDSN returns a new SQLite file in the test's temporary directory.
func sqliteDSN(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "data", "sessions.db")
}

// postgresServer returns the test's PostgreSQL server (see pgtest.Server).
func postgresServer(t testing.TB) string {
	t.Helper()
	return pgtest.Server(t, "session", "the PostgreSQL suite")
}

// postgresDSN creates a fresh database on the test server, dropped when the
// test ends, and returns its DSN.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return postgresDSNWith(t, "")
}

// postgresDSNWith is postgresDSN creating the database with options, the
// end of a CREATE DATABASE statement (a locale, say); the test skips when
// the server refuses them.
func postgresDSNWith(t testing.TB, options string) string {
	t.Helper()
	return pgtest.Database(t, postgresServer(t), options)
}

// backends runs fn once per backend, as subtests "sqlite" and "postgres".
func backends(t *testing.T, fn func(t *testing.T, dsn newDSN)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteDSN) })
	t.Run("postgres", func(t *testing.T) {
		postgresServer(t)
		fn(t, postgresDSN)
	})
}

func listJSON(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// driver returns the driver of a test's DSN: the SQLite file of
// sqliteDSN's "sqlite:PATH", else the PostgreSQL database of postgresDSN.
func driver(dsn string) Driver {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		return sqlite.Driver{Path: path}
	}
	return postgres.Driver{DSN: dsn}
}
