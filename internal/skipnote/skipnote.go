// Package skipnote tells whoever runs the tests, in one line, that a suite
// was skipped and why. go test shows the output of a package whose tests
// pass only with -v, so a t.Skip message alone goes unseen by someone who
// runs go test ./...: the line goes to the terminal the tests run from,
// which go test does not capture, or, without one (CI), to stderr, which
// go test shows with -v or when the package fails.
package skipnote

import (
	"fmt"
	"io"
	"os"
	"sync"
)

var (
	mu   sync.Mutex
	said = map[string]bool{}
)

// Say writes line, once per test process however often it is called with
// it, where the person running the tests sees it.
func Say(line string) {
	mu.Lock()
	defer mu.Unlock()
	if said[line] {
		return
	}
	said[line] = true
	var w io.Writer = os.Stderr
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		w = tty
	}
	fmt.Fprintln(w, line)
}
