package chart

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// elements parses svg as XML and counts its elements by name.
func elements(t *testing.T, svg string) map[string]int {
	t.Helper()
	out := map[string]int{}
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if s, ok := tok.(xml.StartElement); ok {
			out[s.Name.Local]++
		}
	}
}

func TestSVG(t *testing.T) {
	tests := []struct {
		name  string
		c     Chart
		want  map[string]int
		texts []string
	}{
		{"two series and a mark", Chart{Title: "tokens", Series: []Series{
			{Name: "without", Values: []float64{10, 20, 30}, Color: "#999", Dashed: true},
			{Name: "with", Values: []float64{10, 20, 12}, Color: "#1f77b4"},
		}, Marks: []int{3, 9}, MarkName: "compaction", XLabel: "request", YLabel: "tokens"},
			map[string]int{"svg": 1, "title": 1, "path": 1, "polyline": 2, "line": 4, "text": 9},
			[]string{"30", "compaction"}},
		{"one value", Chart{Series: []Series{{Name: "with", Values: []float64{5}, Color: "red"}}},
			map[string]int{"svg": 1, "title": 1, "path": 1, "polyline": 1, "circle": 1, "line": 1, "text": 7}, nil},
		{"empty", Chart{Title: "none"}, map[string]int{"svg": 1, "title": 1, "path": 1, "text": 4}, nil},
		{"text escaped", Chart{Title: `<script>alert(1)</script>`, Series: []Series{{Name: `"><script>x</script>`, Values: []float64{1, 2}, Color: `red"/><script>`}}},
			map[string]int{"svg": 1, "title": 1, "path": 1, "polyline": 1, "line": 1, "text": 7}, []string{"&lt;script&gt;"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(tc.c.SVG())
			if diff := cmp.Diff(tc.want, elements(t, svg)); diff != "" {
				t.Errorf("elements (-want +got):\n%s", diff)
			}
			for _, s := range tc.texts {
				if !strings.Contains(svg, s) {
					t.Errorf("the SVG lacks %q:\n%s", s, svg)
				}
			}
		})
	}
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := GroupDigits(n); got != want {
			t.Errorf("GroupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}
