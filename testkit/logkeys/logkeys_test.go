package logkeys

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepeated(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    []string
		wantErr bool
	}{
		{name: "none", line: `{"level":"warn","msg":"m","error":"x"}`},
		{name: "the cut-off line before", line: `{"msg":"proxy: answer cut off","error":"upstream_reset","error":"unexpected EOF"}`, want: []string{"error"}},
		{name: "nested", line: `{"a":{"b":1,"c":2,"b":3},"b":4}`, want: []string{"a.b"}},
		{name: "in a list", line: `{"l":[{"k":1},{"k":2,"k":3}]}`, want: []string{"l[].k"}},
		{name: "three times", line: `{"k":1,"k":2,"k":3}`, want: []string{"k", "k"}},
		{name: "not JSON", line: `level=warn msg=m`, wantErr: true},
		{name: "two values", line: `{"a":1}{"a":1}`, wantErr: true},
		{name: "cut short", line: `{"a":1,"b":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Repeated([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Repeated(%s) error = %v, want an error: %v", tt.line, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Repeated(%s) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	log := `{"msg":"a","k":1}
{"msg":"b","k":1,"k":2}
not JSON
{"msg":"c"}
`
	err := Check(log)
	if err == nil {
		t.Fatal("Check = nil, want the two bad lines named")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || lines[0] != `a line repeats k: {"msg":"b","k":1,"k":2}` ||
		!strings.HasPrefix(lines[1], "a line is not JSON (") || !strings.HasSuffix(lines[1], "): not JSON") {
		t.Errorf("Check = %q, want the second line's repeated key, then the third line not JSON", err)
	}
	if err := Check(`{"msg":"a"}` + "\n"); err != nil {
		t.Errorf("Check of a good log = %v", err)
	}
}
