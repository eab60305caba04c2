package memfs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock advancing one minute per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Minute)
	return c.t
}

func openTestRepo(t testing.TB, dir string, opts Options) *Repo {
	t.Helper()
	if opts.AgentName == "" {
		opts.AgentName = "Ada"
	}
	if opts.Now == nil {
		opts.Now = newClock().Now
	}
	r, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return r
}

func writeFile(t testing.TB, r *Repo, path, content string) {
	t.Helper()
	full := filepath.Join(r.Dir(), filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readWork(t testing.TB, r *Repo, path string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Dir(), filepath.FromSlash(path)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

func mustCommit(t testing.TB, r *Repo, msg string) CommitResult {
	t.Helper()
	res, err := r.CommitWorkTree(context.Background(), msg)
	if err != nil {
		t.Fatalf("CommitWorkTree(%q): %v", msg, err)
	}
	return res
}

func headMap(t testing.TB, r *Repo) map[string]string {
	t.Helper()
	files, err := r.ReadHEAD(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = f.Content
	}
	return m
}

// gitBinary returns the git binary for cross-checks with real git; it
// skips the test when git is missing, or fails it when CI=true.
func gitBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git binary needed for this check: %v", err)
		}
		t.Skipf("git binary not found: %v", err)
	}
	return p
}

// runGit runs real git in dir with no user or system configuration.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func isValidUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }
