package memfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCopyRepo(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r := openTestRepo(t, filepath.Join(root, "src"), Options{})
	writeFile(t, r, "notes/projects.md", "# Projects\n\nswitchboard\n")
	mustCommit(t, r, "add projects")
	writeFile(t, r, "notes/draft.md", "uncommitted\n")

	dst := filepath.Join(root, "backup", "main")
	if err := CopyRepo(ctx, r.Dir(), dst); err != nil {
		t.Fatalf("CopyRepo: %v", err)
	}
	c := openTestRepo(t, dst, Options{})
	for _, repo := range []*Repo{r, c} {
		if _, err := repo.Revision(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantRev, _ := r.Revision(ctx)
	gotRev, _ := c.Revision(ctx)
	if gotRev != wantRev {
		t.Errorf("copy HEAD = %s, want %s", gotRev, wantRev)
	}
	want, _ := r.Compile(ctx)
	got, _ := c.Compile(ctx)
	// The compiled text names the directory; everything else is the same.
	if strings.ReplaceAll(got.Text, dst, r.Dir()) != want.Text {
		t.Errorf("copy compiles differently:\n%s\nwant:\n%s", got.Text, want.Text)
	}
	if s, ok := readWork(t, c, "notes/draft.md"); !ok || s != "uncommitted\n" {
		t.Errorf("uncommitted work-tree file not copied: %q, %v", s, ok)
	}
	// The copy has its own history: a commit there leaves the source alone.
	writeFile(t, c, "notes/later.md", "later\n")
	mustCommit(t, c, "later")
	if rev, _ := r.Revision(ctx); rev != wantRev {
		t.Errorf("committing in the copy moved the source to %s", rev)
	}

	if err := CopyRepo(ctx, r.Dir(), dst); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("CopyRepo into a non-empty directory: %v, want a refusal", err)
	}
	if err := CopyRepo(ctx, root, filepath.Join(root, "x")); err == nil || !strings.Contains(err.Error(), "not a memory repository") {
		t.Errorf("CopyRepo of a plain directory: %v", err)
	}
}

func TestCopyRepoWaitsForACommitInProgress(t *testing.T) {
	root := t.TempDir()
	r := openTestRepo(t, filepath.Join(root, "src"), Options{})
	// Another process committing holds the exclusive lock.
	held, err := flockFile(context.Background(), r.lockPath, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	dst := filepath.Join(root, "dst")
	err = CopyRepo(ctx, r.Dir(), dst)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CopyRepo while a commit holds the lock = %v, want it to wait until the context ends", err)
	}
	if ents, _ := os.ReadDir(dst); len(ents) > 0 {
		t.Errorf("CopyRepo copied %d entries without the lock", len(ents))
	}
	held.Close()
	if err := CopyRepo(context.Background(), r.Dir(), dst); err != nil {
		t.Fatalf("CopyRepo after the commit: %v", err)
	}
}
