package session

import (
	"context"
	"errors"

	"github.com/abridge-go/abridge/session/internal/backend"
)

// Driver opens the database a [Store] runs on. Package session links no
// database driver: a Driver comes from the package that does,
// session/sqlite (sqlite.Driver, a SQLite file) or session/postgres
// (postgres.Driver, a PostgreSQL database), so that a program links only
// the driver it names.
type Driver interface {
	// Open opens the database; [Open] calls it once per store.
	Open(ctx context.Context) (backend.DB, error)
	// String describes the database with nothing a password could hide
	// in: "SQLite " and the file's path, or "PostgreSQL".
	String() string
}

// errNoRows is returned by firstRow.Scan when the query returned no row.
var errNoRows = errors.New("no rows")

// queryRow runs a query on t whose first row alone is read.
func queryRow(ctx context.Context, t backend.Tx, query string, args ...any) firstRow {
	rs, err := t.Query(ctx, query, args...)
	return firstRow{rs: rs, err: err}
}

// firstRow is a query's result of which only the first row is read.
type firstRow struct {
	rs  backend.Rows
	err error
}

// Scan scans the first row into dest and closes the result; it returns
// errNoRows when there is none.
func (r firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rs.Close()
	if !r.rs.Next() {
		if err := r.rs.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := r.rs.Scan(dest...); err != nil {
		return err
	}
	return r.rs.Err()
}
