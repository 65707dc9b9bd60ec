package summary

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// spareBrute is maxSpare counted room by room with fitFirst, as render
// spends a kind's room.
func spareBrute(items []string, list bool, label string, lo, hi int) int {
	oldest := slices.Clone(items)
	slices.Reverse(oldest)
	best := -1
	for room := lo; room <= hi; room++ {
		_, used := fitFirst(label, oldest, list, room)
		best = max(best, room-used)
	}
	return best
}

// maxSpare is at least what any room from lo to hi leaves once the line
// takes what fitFirst gives it, and exactly the most of those: the bound
// extractFacts stops reading the kinds after a growing one at.
func TestMaxSpare(t *testing.T) {
	type tc struct {
		items  []string
		list   bool
		lo, hi int
	}
	cases := []tc{
		{nil, false, 10, 10},
		{nil, true, 0, 50},
		{[]string{"a"}, false, 0, 30},
		{[]string{"abcdefghij", "abc"}, true, 20, 40},
		{[]string{"abcdefghij", "abc"}, false, 5, 15},
		{[]string{strings.Repeat("x", 40), "y"}, true, 30, 60},
		{[]string{"p", "q", "r", "s"}, false, 24, 24},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := r.IntN(6)
		var items []string
		for range n {
			items = append(items, strings.Repeat("e", 1+r.IntN(30)))
		}
		lo := r.IntN(120)
		cases = append(cases, tc{items, r.IntN(2) == 0, lo, lo + r.IntN(80)})
	}
	var got, want []int
	for _, c := range cases {
		label, sep := factsFiles, 2
		if c.list {
			label, sep = factsCommands, 3
		}
		got = append(got, maxSpare(c.items, sep, 1+len(label), c.lo, c.hi))
		want = append(want, spareBrute(c.items, c.list, label, c.lo, c.hi))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("maxSpare against room by room (-want +got):\n%s", diff)
	}
}
