package skipnote

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSayUnderGoTest runs a suite that skips with a line (testdata/say) as
// go test ./... runs it, in package list mode, without a terminal (in a
// session of its own, as in CI): the line must reach go test's stderr when
// that is a pipe, and must not be written into go test's output when that
// is a regular file, where go test's next write would overwrite it.
func TestSayUnderGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a test binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	// Longer than go test's ok line, which would overwrite no more than
	// its start.
	line := "skipnote: TestSayUnderGoTest's line, " + strings.Repeat("long ", 40)
	run := func(t *testing.T, stdout, stderr io.Writer) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "test", "-count=1", "./testdata/say")
		cmd.Env = append(os.Environ(), "SKIPNOTE_LINE="+line)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go test ./testdata/say: %v", err)
		}
	}
	t.Run("pipes", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		run(t, &stdout, &stderr)
		if !strings.HasPrefix(stdout.String(), "ok  \t") {
			t.Errorf("go test's stdout = %q, want its ok line", stdout.String())
		}
		if got := stderr.String(); strings.Count(got, line+"\n") != 1 {
			t.Errorf("go test's stderr = %q, want the line %q once", got, line)
		}
	})
	t.Run("a file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		run(t, f, f)
		data, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if got := string(data); !strings.HasPrefix(got, "ok  \t") || strings.Contains(got, "long") {
			t.Errorf("go test's output = %q, want its ok line and no piece of the skip's line", got)
		}
	})
}
