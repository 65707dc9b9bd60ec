// Package skipnote tells whoever runs the tests, in one line, that a suite
// was skipped and why. go test shows the output of a package whose tests
// pass only with -v: it reads the test binary's stdout and stderr itself
// and keeps only its "ok" line. So the line goes where go test writes its
// own diagnostics, the go command's stderr, when that is a pipe or a
// terminal (Linux: go test ./... | tee log, a CI job's log); else to the
// terminal the tests run from; else to the test's stderr, which go test
// shows with -v or when the package fails. A result go test takes from its
// cache runs no test, and says nothing.
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
	if !first(line) {
		return
	}
	var w io.Writer = os.Stderr
	if f := openVisible(); f != nil {
		defer f.Close()
		w = f
	}
	fmt.Fprintln(w, line)
}

// first reports whether line is said for the first time in this process,
// and notes that it is.
func first(line string) bool {
	mu.Lock()
	defer mu.Unlock()
	if said[line] {
		return false
	}
	said[line] = true
	return true
}

// openVisible opens the first place a line written reaches the person
// running the tests whatever go test does with the test's output: the
// parent process's stderr (the go command's, under go test), when it is a
// pipe or a terminal, else the controlling terminal; nil when there is
// neither. A regular file is not written through the parent's descriptor:
// the line would land at another offset than the parent's next write,
// which would overwrite it.
func openVisible() *os.File {
	stderr := fmt.Sprintf("/proc/%d/fd/2", os.Getppid())
	if st, err := os.Stat(stderr); err == nil && st.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) != 0 {
		if f, err := os.OpenFile(stderr, os.O_WRONLY, 0); err == nil {
			return f
		}
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return tty
	}
	return nil
}
