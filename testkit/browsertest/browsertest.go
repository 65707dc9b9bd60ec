// Package browsertest starts a headless Chromium (Debian's chromium) for
// tests of abridge's HTML pages, driven with chromedp: a fresh profile
// each time, no network of its own (no sync, updates or background
// requests). A test on a machine without chromium is skipped, and
// package skipnote says so where the person running the tests sees it
// (CI installs chromium: .ci/run).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/abridge-go/abridge/testkit/skipnote"
)

// Path returns the path of the chromium binary, or "" when there is none.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium for the test, or skips the test when
// there is none (failing it when CI=true: CI installs chromium). The
// returned context drives the browser's first tab; the browser stops when
// the test ends. Run actions with [Run], which bounds them in time.
func New(t *testing.T) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and CI=true: the browser tests must run in CI (.ci/run installs it)")
		}
		skipnote.Say("browser tests skipped: no chromium on PATH (apt-get install chromium)")
		t.Skip("no chromium on PATH")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser with this context, which lives as long as the
	// test: the context of the first Run is the browser's own, and a
	// timeout on it would stop the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Do runs steps in the browser of ctx, failing the test when they fail or
// take longer than timeout.
func Do(t *testing.T, ctx context.Context, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// Eval returns the value of the JavaScript expression in the page of ctx,
// failing the test when it cannot be had within 30 seconds.
func Eval[T any](t *testing.T, ctx context.Context, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", expression, err)
	}
	return v
}
