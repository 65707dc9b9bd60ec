// Package pgtest gives tests a PostgreSQL server and fresh databases on it.
// The server is the one named by ABRIDGE_TEST_POSTGRES_URL (.ci/postgres.sh
// starts one and prints the export); without it the tests that need it skip,
// saying so through skipnote, and fail when CI=true.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/abridge-go/abridge/testkit/skipnote"
)

// EnvURL names the variable holding the PostgreSQL server the tests use, a
// server they may create databases on.
const EnvURL = "ABRIDGE_TEST_POSTGRES_URL"

// Server returns the URL of the test server, or skips the test (fails it
// when CI=true) when EnvURL is unset. pkg names the package and suite what
// is skipped, as in "session" and "the PostgreSQL suite".
func Server(t testing.TB, pkg, suite string) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set, and CI=true: %s must run in CI (start a server with .ci/postgres.sh)", EnvURL, suite)
		}
		msg := fmt.Sprintf("%s is not set: skipping %s (start a server with: eval \"$(bash .ci/postgres.sh | tail -n 1)\")", EnvURL, suite)
		skipnote.Say(pkg + ": " + msg)
		t.Skip(msg)
	}
	return u
}

var databases atomic.Int64

// Database creates a fresh database on server, dropped when the test ends,
// and returns its URL. options is the end of the CREATE DATABASE statement
// (a locale, say), empty for none; the test skips when the server refuses
// them.
func Database(t testing.TB, server, options string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer admin.Close(ctx)
	name := fmt.Sprintf("abridge_test_%d_%d", os.Getpid(), databases.Add(1))
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
		t.Fatalf("%s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}
