package config_test

import (
	"fmt"

	"github.com/abridge-go/abridge/config"
)

// SessionDriver picks the session store's driver from ABRIDGE_SESSION_DB's
// value; session.Open opens it.
func ExampleSessionDriver() {
	for _, dsn := range []string{
		"sqlite:/var/lib/abridge/sessions.db",
		"postgres://abridge:s3cret@db/abridge",
		"host=db dbname=abridge password=s3cret",
		"postgress://abridge:s3cret@db/abridge",
	} {
		d, err := config.SessionDriver(dsn)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(d)
	}
	// Output:
	// SQLite /var/lib/abridge/sessions.db
	// PostgreSQL
	// PostgreSQL
	// error: unknown scheme "postgress": want postgres://, postgresql://, sqlite:PATH or a file path
}
