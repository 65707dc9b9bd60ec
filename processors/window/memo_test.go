package window

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestVerifiedAdopts matches one remembered history nine times, each time
// given as a new copy (as a cache that decoded it anew gives it), and
// checks which copy the entry holds after each: the one of its 1st, 2nd,
// 4th and 8th match, so that later comparisons find the bytes shared. A
// history that differs neither matches nor is adopted. The copies differ
// in what the content leaves out, the messages' time, which tells them
// apart.
func TestVerifiedAdopts(t *testing.T) {
	long := strings.Repeat("some covered text ", 300)
	history := func(s string, copy int) []processor.Message {
		at := processor.Meta{Time: time.Unix(int64(copy), 0)}
		return []processor.Message{
			processor.SystemMessage("system").WithMeta(at),
			processor.UserMessage(strings.Clone(s)).WithMeta(at),
			processor.TextMessage(strings.Clone(s)).WithMeta(at),
		}
	}
	const copies = 10
	var mu sync.Mutex
	v := newVerifiedMap[Digest](verifiedLimit, verifiedEntries)
	k := Digest{1}
	v.put(&mu, k, history(long, 0), []byte("state"))
	held := func() []int {
		var at []int
		for _, m := range v.byKey[k].msgs {
			at = append(at, int(m.Info().Time.Unix()))
		}
		return at
	}
	got := [][]int{held()}
	for c := 1; c < copies; c++ {
		if state, ok := v.match(&mu, k, history(long, c)); !ok || string(state) != "state" {
			t.Fatalf("match = %q, %v; want the state, true", state, ok)
		}
		if _, ok := v.match(&mu, k, history(long+"x", -1)); ok {
			t.Fatal("a history that differs matched")
		}
		got = append(got, held())
	}
	var want [][]int
	for _, c := range []int{0, 1, 2, 2, 4, 4, 4, 4, 8, 8} {
		want = append(want, []int{c, c, c})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy held after each match (-want +got):\n%s", diff)
	}
}
