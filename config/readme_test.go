package config

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite README-table.md from the variables table")

// TestReadmeTable keeps README-table.md, the table the README shows, equal
// to the variables table; go test ./config -update rewrites it.
func TestReadmeTable(t *testing.T) {
	const file = "README-table.md"
	want := markdownTable()
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is stale; run go test ./config -update (-want +got):\n%s", file, diff)
	}
}
