package config

import (
	"flag"
	"os"
	"strings"
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
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not show %s as it is: copy it into the README's configuration section", file)
	}
}
