package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/sqlite"
)

// A driver names a SQLite file; session.Open creates it on first use
// (see package session's example), or, for a command that only reads,
// opens it only when it exists.
func ExampleDriver() {
	d := sqlite.Driver{Path: "no-such-directory/sessions.db", Existing: true}
	fmt.Println(d.String() == "SQLite "+d.Path)
	_, err := session.Open(context.Background(), d, nil)
	fmt.Println(errors.Is(err, fs.ErrNotExist))
	// Output:
	// true
	// true
}

// Check refuses what is no SQLite file, before anything is created.
func ExampleDriver_Check() {
	fmt.Println(sqlite.Driver{Path: ":memory:"}.Check())
	// Output: sqlite: in-memory databases are not supported: name a file
}
