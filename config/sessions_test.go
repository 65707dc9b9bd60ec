package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

// The tests of ABRIDGE_SESSION_DB's DSNs: SessionDriver picks the driver,
// session.Open opens it, as the CLI does.

// openDSN opens the store dsn names; with existing, a SQLite file is
// opened only when it exists (sqlite.Driver.Existing).
func openDSN(ctx context.Context, dsn string, existing bool) (*session.Store, error) {
	d, err := SessionDriver(dsn)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	if file, ok := d.(sqlite.Driver); ok {
		file.Existing = existing
		d = file
	}
	return session.Open(ctx, d, nil)
}

// describe is the String of the driver dsn names, "" when it names none.
func describe(dsn string) string {
	d, err := SessionDriver(dsn)
	if err != nil {
		return ""
	}
	return d.String()
}

// TestSessionDriverBadDSN opens DSNs that name no SQLite file and no PostgreSQL
// database that answers: each is an error saying why, its password is not
// in it, and nothing is created in the working directory.
func TestSessionDriverBadDSN(t *testing.T) {
	tests := []struct {
		name, dsn, want string
	}{
		{"misspelt scheme", "postgress://abridge:s3cret@localhost/db", `unknown scheme "postgress"`},
		{"other database", "mysql://abridge:s3cret@localhost/db", `unknown scheme "mysql"`},
		{"in-memory", ":memory:", "in-memory"},
		{"in-memory with prefix", "sqlite::memory:", "in-memory"},
		{"SQLite URI", "file:sessions.db", "SQLite URI"},
		{"SQLite URI in memory", "file::memory:?cache=shared", "SQLite URI"},
		// PostgreSQL's keyword/value form, with no server to answer it.
		{"keyword form", "host=127.0.0.1 port=1 user=abridge password=s3cret dbname=db connect_timeout=1", "postgres: connect: failed to connect"},
		{"keyword form, password first", "password=s3cret host=127.0.0.1 port=1 connect_timeout=1", "postgres: connect"},
		{"keyword form, quoted password", "host=127.0.0.1 port=1 password='s3cret x' connect_timeout=1", "postgres: connect"},
		{"keyword form, bad value", "host=127.0.0.1 sslmode=bogus password=s3cret", "postgres: cannot parse"},
	}
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := openDSN(ctx, tt.dsn, false)
			if err == nil {
				st.Close()
				t.Fatalf("Open(%q): no error", tt.dsn)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%q) = %v, want an error saying %q", tt.dsn, err, tt.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q) = %v: the error holds the password", tt.dsn, err)
			}
		})
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if len(names) != 0 {
		t.Errorf("Open of bad DSNs created %v in the working directory", names)
	}
}

// TestSessionDriver opens the SQLite file each DSN form names, creating it
// private to the user.
func TestSessionDriver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	def, err := sqlite.DefaultPath()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "xdg", "abridge", "sessions.db"); def != want {
		t.Errorf("DefaultPath() = %q, want %q", def, want)
	}
	tests := []struct {
		name, dsn, file string
	}{
		{"empty means the default path", "", def},
		{"sqlite prefix", "sqlite:" + filepath.Join(dir, "a", "b.db"), filepath.Join(dir, "a", "b.db")},
		{"sqlite URL form", "sqlite://" + filepath.Join(dir, "c.db"), filepath.Join(dir, "c.db")},
		{"plain path", filepath.Join(dir, "d", "e", "f.db"), filepath.Join(dir, "d", "e", "f.db")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := openDSN(ctx, tt.dsn, false)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Session(ctx, "x"); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if perm := fi.Mode().Perm(); perm != 0o600 {
				t.Errorf("file mode %v, want 0600", perm)
			}
		})
	}
	if _, err := openDSN(ctx, filepath.Join(dir, "what?.db"), false); err == nil {
		t.Error("Open of a path with '?': no error")
	}
	if _, err := openDSN(ctx, "postgres://127.0.0.1:1/none?connect_timeout=1", false); err == nil {
		t.Error("Open of an unreachable PostgreSQL: no error")
	}
}

// TestSessionDriverString names the database of each DSN form SessionDriver reads, with
// nothing of a password.
func TestSessionDriverString(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	tests := []struct {
		dsn, want string
	}{
		{"", "SQLite " + filepath.Join(dir, "xdg", "abridge", "sessions.db")},
		{"sqlite:" + filepath.Join(dir, "a.db"), "SQLite " + filepath.Join(dir, "a.db")},
		{"sqlite://" + filepath.Join(dir, "b.db"), "SQLite " + filepath.Join(dir, "b.db")},
		{filepath.Join(dir, "c.db"), "SQLite " + filepath.Join(dir, "c.db")},
		{"postgres://u:secret@db/x", "PostgreSQL"},
		{"postgresql://u:secret@db/x", "PostgreSQL"},
		{"host=db password=secret dbname=x", "PostgreSQL"},
		{"mysql://u:secret@db/x", ""},
		{"sqlite::memory:", ""},
	}
	for _, tt := range tests {
		if got := describe(tt.dsn); got != tt.want {
			t.Errorf("Describe(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// TestSessionDriverExisting opens stores that may not exist without creating them.
func TestSessionDriverExisting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "sessions.db")
	for _, dsn := range []string{missing, "sqlite:" + missing} {
		st, err := openDSN(ctx, dsn, true)
		if !errors.Is(err, fs.ErrNotExist) {
			if err == nil {
				st.Close()
			}
			t.Errorf("OpenExisting(%q) = %v, want fs.ErrNotExist", dsn, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenExisting created the directory: %v", err)
	}
	// An existing file opens.
	path := filepath.Join(dir, "sessions.db")
	first, err := openDSN(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Session(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := openDSN(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	infos, err := st.List(ctx)
	if err != nil || len(infos) != 1 {
		t.Errorf("List = %v, %v; want the session", infos, err)
	}
}
