// Package webtest starts a headless chromium for browser tests of the web
// page (this package's channel tests and the gateway's end-to-end tests).
//
// A test that calls Browser skips when no chromium is installed, except when
// the environment has CI=true: there a missing browser fails the test, since
// a skipped test in CI is a test that cannot fail (DESIGN §9).
//
// Concurrency: ChromiumPath may be called from any goroutine. Each Browser
// call starts its own browser process with its own profile directory; the
// returned context is for the calling test, and the browser is stopped when
// the test ends.
package webtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultTimeout bounds a whole browser test started with Browser.
const DefaultTimeout = 2 * time.Minute

// ChromiumPath returns the chromium (or chrome) executable to use: $CHROMIUM
// when set, else /usr/bin/chromium (Debian's package), else the first of
// chromium, chromium-browser, google-chrome found in $PATH; "" when there is
// none.
func ChromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if st, err := os.Stat("/usr/bin/chromium"); err == nil && !st.IsDir() {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Require returns ChromiumPath, skipping the test when there is none (or
// failing it when CI=true).
func Require(t testing.TB) string {
	t.Helper()
	p := ChromiumPath()
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI must install it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed; skipping browser test")
	}
	return p
}

// Options returns the allocator options for a headless, quiet chromium
// with a fresh profile in dir. As root, chromium's sandbox cannot start, so
// it is turned off there.
func Options(exe, dir string) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(dir),
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1200, 900),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

// Browser starts a headless chromium for t and returns a chromedp context
// for one tab, bounded by DefaultTimeout. The browser is closed and its
// profile removed when t ends. Browser skips t when chromium is missing
// (fails it when CI=true).
func Browser(t testing.TB) context.Context {
	t.Helper()
	exe := Require(t)
	dir := filepath.Join(t.TempDir(), "chromium-profile")
	ctx, cancelTimeout := context.WithTimeout(context.Background(), DefaultTimeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, Options(exe, dir)...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		cancelTimeout()
	})
	if err := chromedp.Do(tabCtx); err != nil { // start the browser now, so failures name it
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	return tabCtx
}

// Screenshot saves a full-page PNG of the tab as name under a new
// t.TempDir() (or under $WEBTEST_SCREENSHOT_DIR when set, to keep it after
// the test), logs its path and returns it.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("WEBTEST_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
	t.Logf("screenshot: %s", p)
	return p
}
