package session

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/abridge-go/abridge/internal/testkit/skipnote"
)

// EnvPostgresURL names the variable holding the PostgreSQL server the tests
// use (a database they may create databases on). .ci/postgres.sh starts one
// and prints the export.
const envPostgresURL = "ABRIDGE_TEST_POSTGRES_URL"

// newDSN returns the DSN of a new, empty store.
type newDSN func(t testing.TB) string

// sqliteDSN returns a new SQLite file in the test's temporary directory.
func sqliteDSN(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "data", "sessions.db")
}

// postgresDSN returns the DSN of the PostgreSQL server named by
// ABRIDGE_TEST_POSTGRES_URL, or skips the test (fails it when CI=true) when
// the variable is unset.
func postgresServer(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envPostgresURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, and CI=true: the PostgreSQL suite must run in CI (start a server with .ci/postgres.sh)", envPostgresURL)
		}
		msg := fmt.Sprintf("%s is not set: skipping the PostgreSQL suite (start a server with: eval \"$(bash .ci/postgres.sh | tail -n 1)\")", envPostgresURL)
		skipnote.Say("session: " + msg)
		t.Skip(msg)
	}
	return u
}

var pgDatabases atomic.Int64

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
	server := postgresServer(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", envPostgresURL, err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("abridge_session_%d_%d", os.Getpid(), pgDatabases.Add(1))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" "+options); err != nil {
		if options != "" {
			t.Skipf("the server cannot create a database %s: %v", options, err)
		}
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", envPostgresURL, err)
	}
	u.Path = "/" + name
	return u.String()
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
