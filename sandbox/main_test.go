package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as an "owner" process for the leftover tests:
// with SANDBOX_TEST_HELPER=owner it runs one command through a Runner with
// a Registry and blocks until killed.
func TestMain(m *testing.M) {
	if os.Getenv("SANDBOX_TEST_HELPER") == "owner" {
		os.Exit(ownerHelper())
	}
	os.Exit(m.Run())
}

func ownerHelper() int {
	reg, err := OpenRegistry(os.Getenv("SANDBOX_TEST_REGISTRY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r := NewRunner(Options{Registry: reg})
	_, err = r.Run(context.Background(), Cmd{
		Command: os.Getenv("SANDBOX_TEST_COMMAND"),
		Env:     []string{"PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// requireTool skips when a system tool is missing, but fails under CI=true
// (DESIGN §9: a skipped test in CI cannot fail).
func requireTool(t testing.TB, name string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required when CI=true but is not usable on this machine", name)
	}
	t.Skipf("%s is not usable on this machine", name)
}

func requireBwrap(t testing.TB) {
	t.Helper()
	requireTool(t, "bubblewrap (bwrap)", BwrapAvailable())
}

func requireBash(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("bash")
	requireTool(t, "bash", err == nil)
}

// marker returns a unique `sleep` argument, so the test can find exactly
// the processes it started in /proc.
func marker() string {
	return fmt.Sprintf("1000.%09d", rand.IntN(1e9))
}

// markerProcs lists live processes running exactly `sleep m`.
func markerProcs(t testing.TB, m string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Error(err) // not Fatal: also called from helper goroutines
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.zombie() {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		// Only the sleeps themselves, not a shell whose -c line names m.
		args := bytes.Split(bytes.TrimRight(cl, "\x00"), []byte{0})
		if len(args) == 2 && string(args[1]) == m {
			pids = append(pids, pid)
		}
	}
	return pids
}

// poll reports whether cond came to hold before a generous deadline. It
// may be used from any goroutine.
func poll(cond func() bool) bool {
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// eventually fails the test unless cond comes to hold before the deadline.
// Only for the test's own goroutine.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// assertGone waits until no live process of group pgid and no process
// running `sleep m` remain.
func assertGone(t testing.TB, pgid int, m string) {
	t.Helper()
	eventually(t, fmt.Sprintf("group %d and every `sleep %s` are gone", pgid, m), func() bool {
		if pgid > 0 {
			err := syscall.Kill(-pgid, 0)
			if err == nil {
				// Zombies still count for kill(2) until init reaps them.
				if pids, _, _ := groupMembers(pgid); len(pids) > 0 {
					return false
				}
			}
		}
		return len(markerProcs(t, m)) == 0
	})
}

// killMarker cleans up processes a failing test may have left.
func killMarker(t testing.TB, m string) {
	t.Cleanup(func() {
		for _, pid := range markerProcs(t, m) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// baseEnv is a minimal environment for test commands.
func baseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LANG=C"}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mustContain(t testing.TB, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("output %q does not contain %q", got, want)
	}
}
