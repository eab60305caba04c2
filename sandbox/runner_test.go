package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRunBasics(t *testing.T) {
	dir := t.TempDir()
	r := NewRunner(Options{Redactor: NewRedactor("hunter2-secret")})
	tests := []struct {
		name       string
		cmd        Cmd
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"stdout", Cmd{Command: "echo hello"}, 0, "hello\n", ""},
		{"stderr and exit code", Cmd{Command: "echo oops >&2; exit 3"}, 3, "", "oops\n"},
		{"working directory", Cmd{Command: "pwd"}, 0, dir + "\n", ""},
		{"stdin", Cmd{Command: "tr a-z A-Z", Stdin: "shout"}, 0, "SHOUT", ""},
		{"no stdin is /dev/null", Cmd{Command: "cat; echo done"}, 0, "done\n", ""},
		{"env is exactly Env", Cmd{Command: "echo \"$FOO|${HOME-unset}\"", Env: append(baseEnv(), "FOO=bar")}, 0, "bar|unset\n", ""},
		{"redacted", Cmd{Command: "echo token=hunter2-secret; echo hunter2-secret >&2"}, 0, "token=[REDACTED]\n", "[REDACTED]\n"},
		{"killed by signal", Cmd{Command: "kill -9 $$"}, -1, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cmd
			c.Dir = dir
			if c.Env == nil {
				c.Env = baseEnv()
			}
			out, err := r.Run(t.Context(), c)
			if err != nil {
				t.Fatal(err)
			}
			if out.ExitCode != tt.wantCode || out.Stdout != tt.wantStdout || out.Stderr != tt.wantStderr {
				t.Fatalf("got code %d stdout %q stderr %q; want %d %q %q", out.ExitCode, out.Stdout, out.Stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if out.TimedOut || out.Cancelled || out.PID <= 0 {
				t.Fatalf("unexpected %+v", out)
			}
		})
	}
}

func TestRunNilEnvIsEmpty(t *testing.T) {
	t.Setenv("SANDBOX_CANARY_TOKEN", "canary-value-123")
	out, err := NewRunner(Options{}).Run(t.Context(), Cmd{Command: "echo \"[${SANDBOX_CANARY_TOKEN-}]\"", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stdout != "[]\n" {
		t.Fatalf("nil Env leaked the parent environment: %q", out.Stdout)
	}
}

func TestRunStartFailures(t *testing.T) {
	r := NewRunner(Options{})
	if _, err := r.Run(t.Context(), Cmd{Command: "true", Dir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("missing working directory: want an error")
	}
	if _, err := r.Run(t.Context(), Cmd{Command: "true", Confine: "chroot"}); err == nil || !strings.Contains(err.Error(), "unknown sandbox") {
		t.Fatalf("unknown confinement: got %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Run(ctx, Cmd{Command: "true"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: got %v", err)
	}
}

func TestRunMaxCapture(t *testing.T) {
	secret := "abcdefghij-secret"
	r := NewRunner(Options{MaxCapture: 1000, Redactor: NewRedactor(secret)})
	// 995 x's then the secret: it straddles the capture limit.
	out, err := r.Run(t.Context(), Cmd{Command: "head -c 995 /dev/zero | tr '\\0' x; echo " + secret + "; head -c 5000 /dev/zero", Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Stdout, "abcde") {
		t.Fatalf("a prefix of the secret survived the cut: %q", out.Stdout[980:])
	}
	mustContain(t, out.Stdout, "bytes were discarded")
	if len(out.Stdout) > 1200 {
		t.Fatalf("kept %d bytes, want about 1000", len(out.Stdout))
	}
}

// startedCmd runs `sleep m & sleep m` after creating ready, so the test
// knows both sleeps exist.
func startedCmd(ready, m string) string {
	return "sleep " + m + " & touch " + ready + "; sleep " + m
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	requireBash(t)
	m := marker()
	killMarker(t, m)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	r := NewRunner(Options{Grace: 5 * time.Second})
	out, err := r.Run(t.Context(), Cmd{Command: startedCmd(ready, m), Dir: dir, Env: baseEnv(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || out.Cancelled || out.ExitCode != -1 {
		t.Fatalf("want a timed-out, signalled run, got %+v", out)
	}
	if !fileExists(ready) {
		t.Fatal("the command never started its background sleep")
	}
	assertGone(t, out.PID, m)
}

func TestRunCancelKillsGroup(t *testing.T) {
	m := marker()
	killMarker(t, m)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer cancel()
		if !poll(func() bool { return fileExists(ready) && len(markerProcs(t, m)) == 2 }) {
			t.Error("the two sleeps never ran")
		}
	}()
	out, err := NewRunner(Options{}).Run(ctx, Cmd{Command: startedCmd(ready, m), Dir: dir, Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Cancelled || out.TimedOut {
		t.Fatalf("want a cancelled run, got %+v", out)
	}
	assertGone(t, out.PID, m)
}

func TestRunTermIgnoredGetsKill(t *testing.T) {
	m := marker()
	killMarker(t, m)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	r := NewRunner(Options{Grace: 200 * time.Millisecond})
	out, err := r.Run(t.Context(), Cmd{Command: "trap '' TERM; " + startedCmd(ready, m), Dir: dir, Env: baseEnv(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || !fileExists(ready) {
		t.Fatalf("got %+v, ready=%v", out, fileExists(ready))
	}
	assertGone(t, out.PID, m)
}

func TestRunNormalExitKillsBackground(t *testing.T) {
	m := marker()
	killMarker(t, m)
	// The background sleep keeps stdout open; Run must neither wait for it
	// nor leave it running.
	out, err := NewRunner(Options{Grace: time.Minute}).Run(t.Context(), Cmd{Command: "sleep " + m + " & echo started", Dir: t.TempDir(), Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || out.Stdout != "started\n" || out.Duration > 30*time.Second {
		t.Fatalf("got %+v", out)
	}
	assertGone(t, out.PID, m)
}

func TestRunEscapedProcessDoesNotHang(t *testing.T) {
	_, err := os.Stat("/usr/bin/setsid")
	requireTool(t, "setsid", err == nil)
	m := marker()
	killMarker(t, m)
	// setsid leaves the group, and keeps stdout open: Run gives up reading
	// after the grace period instead of hanging.
	cmd := "setsid sh -c 'touch ready; exec sleep " + m + "' & while [ ! -e ready ]; do sleep 0.01; done; echo started"
	out, err := NewRunner(Options{Grace: 300 * time.Millisecond}).Run(t.Context(), Cmd{Command: cmd, Dir: t.TempDir(), Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Stdout != "started\n" {
		t.Fatalf("stdout %q", out.Stdout)
	}
	mustContain(t, out.Stderr, "stopped reading output")
	if len(markerProcs(t, m)) != 1 {
		t.Fatal("the escaped process should still run (it left the group on purpose)")
	}
}

func TestRunRecordsGroupWhileRunning(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	m := marker()
	killMarker(t, m)
	ctx, cancel := context.WithCancel(t.Context())
	seen := make(chan int, 1)
	go func() {
		defer cancel()
		if !poll(func() bool { return fileExists(ready) }) {
			t.Error("the command never ran")
		}
		ents, _ := os.ReadDir(reg.Dir())
		seen <- len(ents)
	}()
	out, err := NewRunner(Options{Registry: reg, Redactor: NewRedactor("sekrit-value")}).Run(ctx, Cmd{Command: startedCmd(ready, m) + " # sekrit-value", Dir: dir, Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-seen; n != 1 {
		t.Fatalf("%d records while running, want 1", n)
	}
	ents, _ := os.ReadDir(reg.Dir())
	if len(ents) != 0 {
		t.Fatalf("%d records left after Run, want 0", len(ents))
	}
	assertGone(t, out.PID, m)
}

func BenchmarkRunTrue(b *testing.B) {
	r := NewRunner(Options{})
	dir := b.TempDir()
	for b.Loop() {
		if out, err := r.Run(b.Context(), Cmd{Command: "true", Dir: dir, Env: baseEnv()}); err != nil || out.ExitCode != 0 {
			b.Fatal(out, err)
		}
	}
}

func BenchmarkRunTrueRegistry(b *testing.B) {
	reg, err := OpenRegistry(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(Options{Registry: reg})
	dir := b.TempDir()
	for b.Loop() {
		if out, err := r.Run(b.Context(), Cmd{Command: "true", Dir: dir, Env: baseEnv()}); err != nil || out.ExitCode != 0 {
			b.Fatal(out, err)
		}
	}
}

func TestRunLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	r := NewRunner(Options{Grace: 200 * time.Millisecond})
	dir := t.TempDir()
	for _, c := range []Cmd{
		{Command: "echo hi", Stdin: "ignored input"},
		{Command: "head -c 200000 /dev/zero", Stdin: strings.Repeat("x", 200000)}, // stdin never read
		{Command: "sleep 5", Timeout: 10 * time.Millisecond},
	} {
		c.Dir, c.Env = dir, baseEnv()
		if _, err := r.Run(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "Run's goroutines have ended", func() bool { return runtime.NumGoroutine() <= before })
}
