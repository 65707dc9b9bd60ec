// Package backend is what package session needs of a database, and what
// its drivers (session/sqlite, session/postgres) provide: transactions
// running SQL written once for both dialects ($1-style parameters,
// standard types). The dialects' differences are the methods of [DB].
package backend

import "context"

// DB is a database a session store runs on. It is safe for concurrent use.
type DB interface {
	// Begin starts a transaction. A write transaction holds the database's
	// write lock from its start where the dialect needs that (SQLite), so
	// that it never has to upgrade a read snapshot.
	Begin(ctx context.Context, write bool) (Tx, error)
	// Statement returns a Tx for one read statement, run in its own
	// implicit transaction (one snapshot, no BEGIN and COMMIT round
	// trips); its Commit and Rollback only give the connection back.
	Statement(ctx context.Context) (Tx, error)
	// LockSchema serialises schema migrations across processes.
	LockSchema(ctx context.Context, t Tx) error
	// KeyType is the column definition of an auto-increment primary key.
	KeyType() string
	// Retryable reports whether err is a transient contention error after
	// which the whole transaction may be run again.
	Retryable(err error) bool
	// Name is "sqlite" or "postgres".
	Name() string
	// Close releases the database.
	Close() error
}

// Tx is a transaction, or one statement's implicit one (DB.Statement).
type Tx interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query runs a query and returns its rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback ends the transaction if it is still open; it is a no-op
	// after Commit.
	Rollback()
}

// Rows is a query's result, read row by row.
type Rows interface {
	// Next moves to the next row, reporting whether there is one.
	Next() bool
	// Scan copies the row's columns into dest.
	Scan(dest ...any) error
	// Err is the error that ended the rows, if any.
	Err() error
	// Close releases the rows.
	Close()
}
