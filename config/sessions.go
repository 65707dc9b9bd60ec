package config

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/postgres"
	"github.com/abridge-go/abridge/session/sqlite"
)

// SessionDriver returns the driver of the session store that dsn, a value
// of ABRIDGE_SESSION_DB ([Config.SessionDB]), names; session.Open opens
// it. It is the one place a DSN picks a database, so config links both
// drivers; a program that names its database in code imports only
// session/sqlite or session/postgres.
//
//   - "" is the SQLite file at [sqlite.DefaultPath];
//   - "postgres://…" or "postgresql://…" is a PostgreSQL database (any
//     connection string pgx accepts in that form), and so is a PostgreSQL
//     keyword/value string ("host=db dbname=abridge password=…"): any DSN
//     that starts with a word and "=";
//   - "sqlite:PATH" or a plain PATH is the SQLite file at PATH, created
//     with its parent directories when missing.
//
// Any other DSN of the form "scheme://…" (a misspelt "postgres://", say) is
// an error naming the scheme, and so are SQLite's in-memory database
// (":memory:", which each of the store's connections would open afresh)
// and SQLite URIs ("file:…"), as [sqlite.Driver.Check] says: nothing is
// created for them. A SQLite file whose name starts with a word
// and "=" is named with sqlite:PATH. Errors never hold the DSN's password.
func SessionDriver(dsn string) (session.Driver, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || keywordDSN.MatchString(dsn) {
		return postgres.Driver{DSN: dsn}, nil
	}
	path, ok := strings.CutPrefix(dsn, "sqlite:")
	if ok {
		path = strings.TrimPrefix(path, "//") // sqlite:///abs/path
	} else if scheme, _, ok := strings.Cut(dsn, "://"); ok && isScheme(scheme) {
		// Only the scheme: the rest may hold a password.
		return nil, fmt.Errorf("unknown scheme %q: want postgres://, postgresql://, sqlite:PATH or a file path", scheme)
	}
	if path == "" {
		def, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = def
	}
	d := sqlite.Driver{Path: path}
	if err := d.Check(); err != nil {
		return nil, err
	}
	return d, nil
}

// keywordDSN matches the start of a PostgreSQL keyword/value connection
// string: a keyword, then "=".
var keywordDSN = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

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
