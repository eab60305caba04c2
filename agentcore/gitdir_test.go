package agentcore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGitDirCacheSeesARepositoryWithinItsTime: the lookup is reused for
// gitDirCacheFor, then done again (a `git init` shows), and a different
// workspace or a clock that went back is looked up at once.
func TestGitDirCacheSeesARepositoryWithinItsTime(t *testing.T) {
	ws := t.TempDir()
	if findGitDir(ws) != "" {
		t.Skip("the temporary directory is inside a git repository")
	}
	var c gitDirCache
	t0 := time.Unix(1_700_000_000, 0)
	if got := c.find(ws, t0); got != "" {
		t.Fatalf("find = %q before git init, want none", got)
	}
	if err := os.Mkdir(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := c.find(ws, t0.Add(gitDirCacheFor/2)); got != "" {
		t.Fatalf("find = %q within the cache time, want the cached none", got)
	}
	want := filepath.Join(ws, ".git")
	if got := c.find(ws, t0.Add(gitDirCacheFor)); got != want {
		t.Fatalf("find = %q after the cache time, want %q", got, want)
	}
	other := t.TempDir()
	if got := c.find(other, t0.Add(gitDirCacheFor)); got != "" {
		t.Fatalf("find(other workspace) = %q, want none", got)
	}
	if err := os.Mkdir(filepath.Join(other, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := c.find(other, t0); got != filepath.Join(other, ".git") {
		t.Fatalf("find after the clock went back = %q, want a fresh lookup", got)
	}
}
