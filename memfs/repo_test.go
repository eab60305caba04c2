package memfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

func TestOpenCreatesLayoutAndFirstCommit(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "agents", "ada", "memory")
	r := openTestRepo(t, dir, Options{AgentName: "Ada Lovelace"})

	files := headMap(t, r)
	total := 0
	for _, want := range []string{"README.md", "system/persona.md", "system/human.md"} {
		if _, ok := files[want]; !ok {
			t.Errorf("default layout lacks %s; have %v", want, files)
		}
	}
	for _, c := range files {
		total += len(c)
	}
	if len(files) != 3 || total >= 1536 {
		t.Errorf("default layout: %d files, %d bytes; want 3 files under 1536 bytes", len(files), total)
	}
	if !strings.Contains(files["system/persona.md"], "Ada Lovelace") {
		t.Errorf("persona does not name the agent:\n%s", files["system/persona.md"])
	}
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != "ref: refs/heads/main" {
		t.Errorf(".git/HEAD = %q, %v; want branch main", head, err)
	}
	log, err := r.Log(ctx, 0)
	if err != nil || len(log) != 1 {
		t.Fatalf("Log = %v, %v; want one commit", log, err)
	}
	if len(log[0].Changes) != 3 || log[0].Changes[0].Kind != KindAdded {
		t.Errorf("first commit changes = %v", log[0].Changes)
	}
	rev, err := r.Revision(ctx)
	if err != nil || rev != log[0].Revision || len(rev) != 40 {
		t.Errorf("Revision = %q, %v; want %q", rev, err, log[0].Revision)
	}

	// Re-opening changes nothing, also with a different agent name.
	r2 := openTestRepo(t, dir, Options{AgentName: "Someone Else"})
	rev2, err := r2.Revision(ctx)
	if err != nil || rev2 != rev {
		t.Errorf("Revision after re-Open = %q, %v; want %q", rev2, err, rev)
	}
	if log, _ := r2.Log(ctx, 0); len(log) != 1 {
		t.Errorf("re-Open added commits: %d", len(log))
	}
	if r2.Dir() != dir {
		t.Errorf("Dir = %q, want %q", r2.Dir(), dir)
	}
}

func TestOpenReadableByRealGit(t *testing.T) {
	gitBinary(t)
	r := openTestRepo(t, t.TempDir(), Options{})
	writeFile(t, r, "notes/a.md", "fact\n")
	mustCommit(t, r, "add a")
	runGit(t, r.Dir(), "fsck", "--strict")
	if st := runGit(t, r.Dir(), "status", "--porcelain"); st != "" {
		t.Errorf("git status after commit is not clean:\n%s", st)
	}
	if out := runGit(t, r.Dir(), "log", "--format=%an <%ae> %s"); !strings.Contains(out, "Ada <switchboard@localhost> add a") {
		t.Errorf("git log:\n%s", out)
	}
}

func TestOpenCompletesUnbornRepository(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := openTestRepo(t, dir, Options{})
	files := headMap(t, r)
	if files["notes.md"] != "kept\n" || files["README.md"] == "" {
		t.Errorf("first commit files = %v; want the existing notes.md and the layout", files)
	}
}

func TestOpenRefusesButKeepsInvalidExistingFile(t *testing.T) {
	dir := t.TempDir()
	photo := filepath.Join(dir, "photo.png")
	if err := os.WriteFile(photo, []byte{0x89, 'P', 'N', 'G', 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir, Options{})
	var verr *ValidationError
	if !errors.As(err, &verr) || verr.Path != "photo.png" {
		t.Fatalf("Open = %v; want a ValidationError for photo.png", err)
	}
	if _, err := os.Stat(photo); err != nil {
		t.Errorf("Open deleted a file a person put there: %v", err)
	}
}

func TestLockWaitEndsWithContext(t *testing.T) {
	r := openTestRepo(t, t.TempDir(), Options{})
	held, err := flockFile(context.Background(), r.lockPath, true)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.CommitWorkTree(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("CommitWorkTree with the lock held elsewhere and a cancelled context = %v; want context.Canceled", err)
	}
	held.Close()
	if _, err := r.CommitWorkTree(context.Background(), "x"); err != nil {
		t.Errorf("CommitWorkTree after the lock was released: %v", err)
	}
}

func TestCommitPathsLeavesOtherEditsAlone(t *testing.T) {
	ctx := context.Background()
	r, err := Open(ctx, t.TempDir(), Options{AgentName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// A person edits one file by hand; the agent writes another.
	hand := filepath.Join(r.Dir(), "system", "human.md")
	if err := os.WriteFile(hand, []byte("hand edit, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agentFile := filepath.Join(r.Dir(), "notes.md")
	if err := os.WriteFile(agentFile, []byte("the agent's fact\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := r.CommitPaths(ctx, "Write notes.md", agentFile)
	if err != nil || !res.Changed || len(res.Files) != 1 || res.Files[0] != "notes.md" {
		t.Fatalf("CommitPaths = %+v, %v", res, err)
	}
	c, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Text, "the agent's fact") || strings.Contains(c.Text, "hand edit") {
		t.Fatalf("compiled memory:\n%s", c.Text)
	}
	// The hand edit is still in the work tree, untouched.
	if b, _ := os.ReadFile(hand); string(b) != "hand edit, not committed\n" {
		t.Fatalf("hand edit was changed: %q", b)
	}
	if _, err := r.CommitPaths(ctx, "x", "/etc/passwd"); err == nil {
		t.Fatal("a path outside the repository was accepted")
	}
}
