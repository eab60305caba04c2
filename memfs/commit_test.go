package memfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

func TestCommitWorkTree(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	rev0, _ := r.Revision(ctx)

	writeFile(t, r, "notes/projects.md", "# Projects\n- switchboard\n")
	res := mustCommit(t, r, "remember projects")
	if !res.Changed || res.Revision == rev0 || !cmp.Equal(res.Files, []string{"notes/projects.md"}) {
		t.Fatalf("commit of a new file = %+v", res)
	}
	if rev, _ := r.Revision(ctx); rev != res.Revision {
		t.Errorf("Revision = %s, want %s", rev, res.Revision)
	}

	noop := mustCommit(t, r, "nothing")
	if noop.Changed || noop.Revision != res.Revision || len(noop.Files) != 0 {
		t.Errorf("commit without changes = %+v; want Changed=false at %s", noop, res.Revision)
	}

	writeFile(t, r, "system/human.md", "# Human\nGrace, prefers short answers.\n")
	if err := os.Remove(filepath.Join(r.Dir(), "notes", "projects.md")); err != nil {
		t.Fatal(err)
	}
	res2 := mustCommit(t, r, "")
	if want := []string{"notes/projects.md", "system/human.md"}; !cmp.Equal(res2.Files, want) {
		t.Errorf("Files = %v, want %v", res2.Files, want)
	}
	files := headMap(t, r)
	if _, ok := files["notes/projects.md"]; ok || files["system/human.md"] != "# Human\nGrace, prefers short answers.\n" {
		t.Errorf("HEAD after modify+delete = %v", files)
	}
	log, err := r.Log(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantChanges := []Change{{"notes/projects.md", KindDeleted}, {"system/human.md", KindModified}}
	if diff := cmp.Diff(wantChanges, log[0].Changes); diff != "" {
		t.Errorf("last commit changes (-want +got):\n%s", diff)
	}
	if log[0].Message != "Update memory: notes/projects.md, system/human.md" {
		t.Errorf("default message = %q", log[0].Message)
	}
}

func TestCommitWorkTreeRejectsAndRestores(t *testing.T) {
	const committed = "# Human\nGrace.\n"
	big := strings.Repeat("x", 300) + "\n"
	tests := []struct {
		name       string
		setup      func(t *testing.T, r *Repo) // makes the bad change
		wantPath   string
		wantReason string
	}{
		{"new file too large", func(t *testing.T, r *Repo) {
			writeFile(t, r, "notes/big.md", big)
		}, "notes/big.md", "over the 256-byte limit"},
		{"modified file too large", func(t *testing.T, r *Repo) {
			writeFile(t, r, "system/human.md", big)
		}, "system/human.md", "over the 256-byte limit"},
		{"binary content", func(t *testing.T, r *Repo) {
			writeFile(t, r, "notes/blob.md", "text\x00\x01\x02")
		}, "notes/blob.md", "binary"},
		{"invalid UTF-8", func(t *testing.T, r *Repo) {
			writeFile(t, r, "notes/latin1.txt", "caf\xe9\n")
		}, "notes/latin1.txt", "not valid UTF-8"},
		{"other extension", func(t *testing.T, r *Repo) {
			writeFile(t, r, "data.json", "{}\n")
		}, "data.json", "only .md and .txt"},
		{"nested git repository", func(t *testing.T, r *Repo) {
			writeFile(t, r, "notes/.git/config", "[core]\n")
		}, "notes/.git", ".git"},
		{"symlink", func(t *testing.T, r *Repo) {
			if err := os.Symlink("/etc/passwd", filepath.Join(r.Dir(), "link.md")); err != nil {
				t.Fatal(err)
			}
		}, "link.md", "symbolic link"},
		{"symlink replacing a committed file", func(t *testing.T, r *Repo) {
			outside := filepath.Join(t.TempDir(), "outside.md")
			if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			full := filepath.Join(r.Dir(), "system", "human.md")
			if err := os.Remove(full); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, full); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if data, _ := os.ReadFile(outside); string(data) != "outside\n" {
					t.Errorf("restore wrote through the symlink: outside file now %q", data)
				}
			})
		}, "system/human.md", "symbolic link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r := openTestRepo(t, t.TempDir(), Options{MaxFileBytes: 256})
			writeFile(t, r, "system/human.md", committed)
			writeFile(t, r, "notes/keep.md", "keep\n")
			base := mustCommit(t, r, "base")
			before := headMap(t, r)

			tt.setup(t, r)
			// An unrelated valid edit in the same batch is undone too.
			writeFile(t, r, "notes/keep.md", "edited\n")
			writeFile(t, r, "notes/new/also.md", "new\n")

			_, err := r.CommitWorkTree(ctx, "bad")
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("CommitWorkTree = %v; want a *ValidationError", err)
			}
			if verr.Path != tt.wantPath || !strings.Contains(verr.Reason, tt.wantReason) {
				t.Errorf("ValidationError = {%q, %q}; want path %q, reason containing %q", verr.Path, verr.Reason, tt.wantPath, tt.wantReason)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.wantPath) || !strings.Contains(msg, "restored") {
				t.Errorf("error message does not say which file and what happened: %s", msg)
			}
			if rev, _ := r.Revision(ctx); rev != base.Revision {
				t.Errorf("HEAD moved to %s after a rejected change", rev)
			}
			if diff := cmp.Diff(before, headMap(t, r)); diff != "" {
				t.Errorf("HEAD files changed (-want +got):\n%s", diff)
			}
			// The work tree is back at HEAD: a further commit finds nothing.
			if res := mustCommit(t, r, "after"); res.Changed {
				t.Errorf("work tree not restored; a later commit found %v", res.Files)
			}
			if got, _ := readWork(t, r, "system/human.md"); got != committed {
				t.Errorf("system/human.md = %q, want the committed %q", got, committed)
			}
			if got, _ := readWork(t, r, "notes/keep.md"); got != "keep\n" {
				t.Errorf("notes/keep.md = %q, want it restored", got)
			}
			if _, err := os.Lstat(filepath.Join(r.Dir(), "notes", "new")); !os.IsNotExist(err) {
				t.Errorf("a directory holding only a new file was left behind: %v", err)
			}
			if _, ok := readWork(t, r, tt.wantPath); ok && tt.wantPath != "system/human.md" {
				t.Errorf("rejected new file %s is still there", tt.wantPath)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"README.md", true},
		{"system/persona.md", true},
		{"notes/2025/march.TXT", true},
		{".hidden/notes.md", true},
		{"", false},
		{"/etc/passwd.md", false},
		{"../escape.md", false},
		{"a/../b.md", false},
		{"./a.md", false},
		{"a//b.md", false},
		{".git/config.md", false},
		{"sub/.GIT/x.md", false},
		{`a\b.md`, false},
		{"tab\there.md", false},
		{"image.png", false},
		{"noext", false},
		{strings.Repeat("a", 300) + ".md", false},
		{"bad\xff.md", false},
	}
	for _, tt := range tests {
		if got := checkPath(tt.path); (got == "") != tt.ok {
			t.Errorf("checkPath(%q) = %q; want ok=%v", tt.path, got, tt.ok)
		}
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"a.md", "../a.md", ".git/x.md", "a/b/c.txt", "/x.md", "a\\b.md", "\x00.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkPath(p) != "" {
			return
		}
		if strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
			t.Fatalf("accepted absolute path %q", p)
		}
		for _, part := range strings.Split(p, "/") {
			if part == ".." || part == "." || part == "" || strings.EqualFold(part, ".git") {
				t.Fatalf("accepted %q with component %q", p, part)
			}
		}
		if filepath.Clean(p) != p || !filepath.IsLocal(p) {
			t.Fatalf("accepted unclean or non-local path %q", p)
		}
	})
}

func FuzzCheckContent(f *testing.F) {
	for _, s := range []string{"hello\n", "caf\xe9", "a\x00b", "", "日本語\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if checkContent(data) != "" {
			return
		}
		if !strings.Contains(string(data), "\x00") && !isValidUTF8(data) {
			t.Fatalf("accepted invalid UTF-8 %q", data)
		}
		if strings.Contains(string(data), "\x00") {
			t.Fatalf("accepted content with NUL %q", data)
		}
	})
}

func TestSymlinkCommittedElsewhereIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	if err := os.Symlink("README.md", filepath.Join(r.Dir(), "index.md")); err != nil {
		t.Fatal(err)
	}
	g, err := git.PlainOpen(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	wt, err := g.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("index.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("link by hand", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@t"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := headMap(t, r)["index.md"]; ok {
		t.Errorf("ReadHEAD returned a symlink as a file")
	}
	writeFile(t, r, "notes/a.md", "a\n")
	if res := mustCommit(t, r, "a"); !cmp.Equal(res.Files, []string{"notes/a.md"}) {
		t.Errorf("commit next to an unchanged committed symlink = %+v", res)
	}
	if c, err := r.Compile(ctx); err != nil || strings.Contains(c.Text, `path="index.md"`) {
		t.Errorf("Compile rendered the symlink (err %v)", err)
	}
}
