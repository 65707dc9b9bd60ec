package session

import (
	"context"
	"errors"
)

// backend is what the store needs of a database: transactions running SQL
// written once for both dialects ($1-style parameters, standard types).
type backend interface {
	// begin starts a transaction. A write transaction holds the database's
	// write lock from its start where the dialect needs that (SQLite), so
	// that it never has to upgrade a read snapshot.
	begin(ctx context.Context, write bool) (tx, error)
	// statement returns a tx for one read statement, run in its own
	// implicit transaction (one snapshot, no BEGIN and COMMIT round
	// trips); its commit and rollback only give the connection back.
	statement(ctx context.Context) (tx, error)
	// lockSchema serialises schema migrations across processes.
	lockSchema(ctx context.Context, t tx) error
	// keyType is the column definition of an auto-increment primary key.
	keyType() string
	// retryable reports whether err is a transient contention error after
	// which the whole transaction may be run again.
	retryable(err error) bool
	// name is "sqlite" or "postgres".
	name() string
	close() error
}

type tx interface {
	exec(ctx context.Context, query string, args ...any) (int64, error)
	query(ctx context.Context, query string, args ...any) (rows, error)
	queryRow(ctx context.Context, query string, args ...any) row
	commit(ctx context.Context) error
	// rollback ends the transaction if it is still open; it is a no-op
	// after commit.
	rollback()
}

type rows interface {
	next() bool
	scan(dest ...any) error
	err() error
	close()
}

type row interface {
	scan(dest ...any) error
}

// errNoRows is returned by row.scan when the query returned no row.
var errNoRows = errors.New("no rows")

// firstRow adapts a query's result to a row: it scans the first row and
// closes the result.
type firstRow struct {
	rs  rows
	err error
}

func (r firstRow) scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rs.close()
	if !r.rs.next() {
		if err := r.rs.err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := r.rs.scan(dest...); err != nil {
		return err
	}
	return r.rs.err()
}
