package window

import (
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/abridge-go/abridge/processor"
)

// TestVerifiedAdopts matches one remembered history nine times, each time
// given as new copies of its strings (as a cache that decoded it anew
// gives it), and checks which copy the entry holds after each: the one of
// its 1st, 2nd, 4th and 8th match, so that later comparisons find the
// bytes shared. A history that differs neither matches nor is adopted.
// It reads which copy a string is by the address of its bytes, which only
// a test may do.
func TestVerifiedAdopts(t *testing.T) {
	long := strings.Repeat("some covered text ", 300)
	history := func(s string) []processor.Message {
		return []processor.Message{
			processor.SystemMessage("system"),
			processor.UserMessage(s),
			processor.TextMessage(s),
		}
	}
	copies := make([]string, 10)
	for i := range copies {
		copies[i] = strings.Clone(long)
	}
	var mu sync.Mutex
	v := newVerifiedMap[Digest](verifiedLimit, verifiedEntries)
	k := Digest{1}
	v.put(&mu, k, history(copies[0]), []byte("state"))
	held := func() int {
		p := unsafe.StringData(v.byKey[k].msgs[1].Parts[0].(processor.UserPrompt).Content)
		for i, c := range copies {
			if unsafe.StringData(c) == p {
				return i
			}
		}
		return -1
	}
	got := []int{held()}
	for _, c := range copies[1:] {
		if state, ok := v.match(&mu, k, history(c)); !ok || string(state) != "state" {
			t.Fatalf("match = %q, %v; want the state, true", state, ok)
		}
		if _, ok := v.match(&mu, k, history(c+"x")); ok {
			t.Fatal("a history that differs matched")
		}
		got = append(got, held())
	}
	want := []int{0, 1, 2, 2, 4, 4, 4, 4, 8, 8}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("copy held after each match (-want +got):\n%s", diff)
	}
}
