package trimtools_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestTmpSlow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var worst time.Duration
	var total time.Duration
	for i := 0; i < 400; i++ {
		seed, n := r.Uint64(), uint16(r.IntN(65536))
		mc, kl := int16(r.IntN(65536)-32768), int8(r.IntN(256)-128)
		if i%3 == 0 {
			mc = int16(r.IntN(3000))
		}
		content := ""
		if i%2 == 0 {
			content = strings.Repeat("語😀x", r.IntN(20000))
		}
		start := time.Now()
		checkTrim(t, seed, n, mc, kl, content)
		d := time.Since(start)
		total += d
		if d > worst {
			worst = d
			t.Logf("worst so far %s: seed %d n %d (%d) mc %d kl %d content %d", d, seed, n, n%200, mc, kl, len(content))
		}
	}
	t.Logf("total %s", total)
}
