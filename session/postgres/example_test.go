package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/abridge-go/abridge/session"
	"github.com/abridge-go/abridge/session/postgres"
)

// A store on a PostgreSQL database, shared by every process that opens it.
// (Not run: it needs a server.)
func ExampleDriver() {
	ctx := context.Background()
	st, err := session.Open(ctx, postgres.Driver{DSN: "postgres://abridge@db/abridge"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	infos, err := st.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(infos), "sessions")
}

// A driver names its database without the DSN, which may hold a password.
func ExampleDriver_String() {
	fmt.Println(postgres.Driver{DSN: "postgres://abridge:s3cret@db/abridge"})
	// Output: PostgreSQL
}
