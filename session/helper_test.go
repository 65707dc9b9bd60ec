package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// helper is this test binary run again as one of its own tests, the
// process a crash test kills.
type helper struct {
	cmd *exec.Cmd
	// lines is the helper's standard output, a line at a time; it is
	// closed when the output ends.
	lines <-chan string
}

// startHelper runs this test binary again, running only the test named
// test, with env added to its environment. ctx ends the process.
func startHelper(ctx context.Context, t *testing.T, test string, env ...string) *helper {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return &helper{cmd: cmd, lines: lines}
}

// kill kills the helper with SIGKILL.
func (h *helper) kill() error {
	return h.cmd.Process.Signal(syscall.SIGKILL)
}

// wait waits for the helper's end, once its lines are read, and reports
// whether SIGKILL ended it.
func (h *helper) wait() (killed bool, err error) {
	err = h.cmd.Wait()
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL, err
}

// exitHelper ends a helper process: it prints "error" and err, or "done",
// and exits without the test binary's own output.
func exitHelper(err error) {
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("done")
	os.Exit(0)
}
