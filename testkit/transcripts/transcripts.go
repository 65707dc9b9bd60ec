// Package transcripts finds the real agent conversations abridge is tested
// and benchmarked on: the shared set in ../shared/transcripts/openai beside
// the repository (or the directory named by ABRIDGE_TRANSCRIPTS), and the
// few copies shipped in testdata/transcripts (which the module's root
// package embeds).
package transcripts

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// EnvDir names the environment variable that overrides the shared
// transcripts directory.
const EnvDir = "ABRIDGE_TRANSCRIPTS"

// Root returns the repository's root: the nearest directory at or above the
// working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("transcripts: no go.mod above the working directory")
		}
		dir = parent
	}
}

// SharedDir returns the shared transcripts directory, and whether it exists.
func SharedDir() (string, bool) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := Root()
		if err != nil {
			return "", false
		}
		dir = filepath.Join(root, "..", "shared", "transcripts", "openai")
	}
	st, err := os.Stat(dir)
	return dir, err == nil && st.IsDir()
}

// ShippedDir returns the directory of the shipped transcripts in the
// repository: testdata/transcripts.
func ShippedDir() (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", "transcripts"), nil
}

// Shared returns the paths of the shared transcripts, sorted, or skips the
// test with a message saying where they were looked for.
func Shared(tb testing.TB) []string {
	tb.Helper()
	dir, ok := SharedDir()
	if !ok {
		tb.Skipf("shared transcripts not found at %s (set %s, or run beside ../shared): skipping", dir, EnvDir)
	}
	files := list(tb, dir)
	if len(files) == 0 {
		tb.Skipf("no transcripts in %s: skipping", dir)
	}
	return files
}

// Shipped returns the paths of the shipped transcripts, sorted. It fails
// the test when there are none.
func Shipped(tb testing.TB) []string {
	tb.Helper()
	dir, err := ShippedDir()
	if err != nil {
		tb.Fatal(err)
	}
	files := list(tb, dir)
	if len(files) == 0 {
		tb.Fatalf("no transcripts shipped in %s", dir)
	}
	return files
}

// Largest returns the path of the largest shared transcript by size, falling
// back to the largest shipped one when the shared set is absent.
func Largest(tb testing.TB) string {
	tb.Helper()
	var files []string
	if dir, ok := SharedDir(); ok {
		files = list(tb, dir)
	}
	if len(files) == 0 {
		files = Shipped(tb)
	}
	best, size := "", int64(-1)
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			best, size = f, st.Size()
		}
	}
	return best
}

func list(tb testing.TB, dir string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// All returns the paths of the shared transcripts, or of the shipped ones
// (logging that it falls back) when the shared set is absent.
func All(tb testing.TB) []string {
	tb.Helper()
	if dir, ok := SharedDir(); ok {
		if files := list(tb, dir); len(files) > 0 {
			return files
		}
		tb.Logf("no transcripts in %s: using the shipped ones", dir)
	} else {
		tb.Logf("shared transcripts not found at %s: using the shipped ones", dir)
	}
	return Shipped(tb)
}
