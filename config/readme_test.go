package config

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite README-table.md from the variables table")

// TestReadmeTable keeps README-table.md, the table docs/configuration.md
// shows, equal to the variables table (go test ./config -update rewrites
// it), and checks that docs/configuration.md holds it as it is.
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
	const doc = "../docs/configuration.md"
	page, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), want) {
		t.Errorf("%s does not show %s as it is: copy %s into its section \"Variables\"", doc, file, file)
	}
}
