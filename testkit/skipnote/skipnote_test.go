package skipnote

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFirst(t *testing.T) {
	const line = "skipnote: a line said once"
	got := []bool{first(line), first(line), first(line + ".")}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("first of a line, the same again, another (-want +got):\n%s", diff)
	}
}
