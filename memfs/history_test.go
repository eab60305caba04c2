package memfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	rev0, _ := r.Revision(ctx)
	writeFile(t, r, "system/human.md", "# Human\nGrace, prefers tea.\n")
	writeFile(t, r, "notes/new.md", "new note\n")
	res := mustCommit(t, r, "learn")

	for _, from := range []string{rev0, rev0[:7], strings.ToUpper(rev0[:10])} {
		d, err := r.Diff(ctx, from, res.Revision[:4], 0)
		if err != nil {
			t.Fatalf("Diff(%s, %s): %v", from, res.Revision[:4], err)
		}
		want := []Change{{"notes/new.md", KindAdded}, {"system/human.md", KindModified}}
		if diff := cmp.Diff(want, d.Changes); diff != "" {
			t.Errorf("Diff changes (-want +got):\n%s", diff)
		}
		if d.From != rev0 || d.To != res.Revision || d.Truncated {
			t.Errorf("Diff From/To/Truncated = %s/%s/%v", d.From, d.To, d.Truncated)
		}
		for _, s := range []string{"+Grace, prefers tea.", "+new note", "--- a/system/human.md", "+++ b/notes/new.md"} {
			if !strings.Contains(d.Patch, s) {
				t.Errorf("patch lacks %q:\n%s", s, d.Patch)
			}
		}
	}

	// to == "" is HEAD; from == "" is the empty tree.
	d, err := r.Diff(ctx, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "" || d.To != res.Revision || len(d.Changes) != 4 || d.Changes[0].Kind != KindAdded {
		t.Errorf("Diff from the empty tree = %+v", d)
	}

	// Bounded patch.
	full := d.Patch
	for _, limit := range []int{200, 500, len(full) - 1} {
		b, err := r.Diff(ctx, "", "HEAD", limit)
		if err != nil {
			t.Fatal(err)
		}
		if !b.Truncated || len(b.Patch) > limit || !strings.Contains(b.Patch, "[diff cut:") {
			t.Errorf("Diff bounded to %d: %d bytes, Truncated=%v:\n%s", limit, len(b.Patch), b.Truncated, b.Patch)
		}
		if !strings.HasPrefix(full, b.Patch[:strings.Index(b.Patch, "[diff cut:")]) {
			t.Errorf("bounded patch is not a prefix of the full one")
		}
	}
	if b, _ := r.Diff(ctx, "", "HEAD", len(full)); b.Truncated || b.Patch != full {
		t.Errorf("a bound equal to the patch size cut it")
	}

	// No changes between a revision and itself.
	if d, err := r.Diff(ctx, "HEAD", "HEAD", 0); err != nil || len(d.Changes) != 0 || d.Patch != "" {
		t.Errorf("Diff(HEAD, HEAD) = %+v, %v", d, err)
	}
}

func TestResolveErrors(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	for _, rev := range []string{"", "abc", "0000000", strings.Repeat("0", 40), "no-such-branch", "HEAD~5", "zzzz"} {
		if _, _, err := r.Show(ctx, rev, 0); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("Show(%q) = %v; want ErrUnknownRevision", rev, err)
		}
	}
}

func TestAmbiguousAbbreviation(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	unlock, err := r.lock(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	// Build a chain of commits, then search (in memory only) for one more
	// on top whose hash shares 4 hex digits with one in the chain, and
	// store that one. Hashes are deterministic, so is the search.
	parent, files, err := r.headState()
	if err != nil {
		t.Fatal(err)
	}
	treeHash, err := writeTree(r.git, files)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "t", Email: "t@t", When: time.Unix(1_700_000_000, 0)}
	encode := func(msg string, parent plumbing.Hash) plumbing.EncodedObject {
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash, ParentHashes: []plumbing.Hash{parent}}
		obj := &plumbing.MemoryObject{}
		if err := c.Encode(obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	chain := map[string]string{parent.Hash.String()[:4]: parent.Hash.String()}
	tip := parent.Hash
	for i := range 16 {
		h, err := r.git.Storer.SetEncodedObject(encode(fmt.Sprint("chain ", i), tip))
		if err != nil {
			t.Fatal(err)
		}
		tip = h
		chain[h.String()[:4]] = h.String()
	}
	var a, b string
	for i := 0; i < 1_000_000 && a == ""; i++ {
		obj := encode(fmt.Sprint("probe ", i), tip)
		if prev, ok := chain[obj.Hash().String()[:4]]; ok {
			h, err := r.git.Storer.SetEncodedObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			a, b, tip = prev, h.String(), h
		}
	}
	if err := r.moveBranch(parent, tip); err != nil {
		t.Fatal(err)
	}
	unlock()
	if a == "" {
		t.Fatal("no 4-digit hash clash found")
	}
	if _, _, err := r.Show(ctx, a[:4], 0); !errors.Is(err, ErrAmbiguousRevision) || !strings.Contains(err.Error(), a[:12]) {
		t.Errorf("Show(%s) = %v; want ErrAmbiguousRevision naming both", a[:4], err)
	}
	n := 5
	for a[:n] == b[:n] {
		n++
	}
	if c, _, err := r.Show(ctx, b[:n], 0); err != nil || c.Revision != b {
		t.Errorf("Show(%s) = %s, %v; want %s", b[:n], c.Revision, err, b)
	}
}

func TestLogAndShow(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := openTestRepo(t, t.TempDir(), Options{Now: clk.Now})
	var revs []string
	for i, msg := range []string{"first fact", "second fact", "third fact"} {
		writeFile(t, r, fmt.Sprintf("notes/f%d.md", i), msg+"\n")
		revs = append(revs, mustCommit(t, r, msg).Revision)
	}
	log, err := r.Log(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range log {
		got = append(got, c.Message)
	}
	if diff := cmp.Diff([]string{"third fact", "second fact", "first fact", "Create memory"}, got); diff != "" {
		t.Errorf("Log messages, newest first (-want +got):\n%s", diff)
	}
	for i := 1; i < len(log); i++ {
		if !log[i].When.Before(log[i-1].When) {
			t.Errorf("Log[%d].When %v not before Log[%d].When %v", i, log[i].When, i-1, log[i-1].When)
		}
	}
	if log[0].Revision != revs[2] || !cmp.Equal(log[0].Changes, []Change{{"notes/f2.md", KindAdded}}) {
		t.Errorf("Log[0] = %+v", log[0])
	}
	if two, _ := r.Log(ctx, 2); len(two) != 2 || two[1].Revision != revs[1] {
		t.Errorf("Log(2) = %+v", two)
	}

	c, d, err := r.Show(ctx, revs[1][:8], 1000)
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision != revs[1] || c.Message != "second fact" || d.From != revs[0] || d.To != revs[1] {
		t.Errorf("Show = %+v / %+v", c, d)
	}
	if !strings.Contains(d.Patch, "+second fact") || strings.Contains(d.Patch, "first fact") {
		t.Errorf("Show patch:\n%s", d.Patch)
	}
	root := log[len(log)-1].Revision
	if _, d, err := r.Show(ctx, root, 0); err != nil || d.From != "" || len(d.Changes) != 3 {
		t.Errorf("Show(root) = %+v, %v", d, err)
	}
	if c, _, err := r.Show(ctx, "HEAD~1", 0); err != nil || c.Revision != revs[1] {
		t.Errorf("Show(HEAD~1) = %s, %v", c.Revision, err)
	}
}

func TestRevert(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	writeFile(t, r, "notes/wrong.md", "The user hates tea.\n")
	writeFile(t, r, "system/human.md", "# Human\nGrace. Hates tea.\n")
	bad := mustCommit(t, r, "wrong fact")
	writeFile(t, r, "notes/other.md", "unrelated\n")
	mustCommit(t, r, "other")

	res, err := r.Revert(ctx, bad.Revision[:6], "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || !cmp.Equal(res.Files, []string{"notes/wrong.md", "system/human.md"}) {
		t.Fatalf("Revert = %+v", res)
	}
	c, err := r.Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Text, "tea") || !strings.Contains(c.Text, "unrelated") || c.Revision != res.Revision {
		t.Errorf("Compile after revert:\n%s", c.Text)
	}
	if _, ok := readWork(t, r, "notes/wrong.md"); ok {
		t.Errorf("reverted new file still in the work tree")
	}
	if _, err := os.Stat(filepath.Join(r.Dir(), "notes")); err != nil {
		t.Errorf("notes/ (still holding other.md) was removed: %v", err)
	}
	if got, _ := readWork(t, r, "system/human.md"); strings.Contains(got, "tea") {
		t.Errorf("work tree not reverted: %q", got)
	}
	if again := mustCommit(t, r, "x"); again.Changed {
		t.Errorf("work tree differs from HEAD after revert: %v", again.Files)
	}
	log, _ := r.Log(ctx, 1)
	if !strings.HasPrefix(log[0].Message, `Revert "wrong fact"`) || !strings.Contains(log[0].Message, "This reverts commit "+bad.Revision) {
		t.Errorf("revert message = %q", log[0].Message)
	}

	// Reverting again changes nothing.
	if res, err := r.Revert(ctx, bad.Revision, "again"); err != nil || res.Changed {
		t.Errorf("second Revert = %+v, %v; want no change", res, err)
	}
	// Reverting the revert brings the fact back.
	if res, err := r.Revert(ctx, "HEAD", "undo the revert"); err != nil || !res.Changed {
		t.Fatalf("Revert(HEAD) = %+v, %v", res, err)
	}
	if got := headMap(t, r)["notes/wrong.md"]; got != "The user hates tea.\n" {
		t.Errorf("after reverting the revert, notes/wrong.md = %q", got)
	}
}

func TestRevertRefusals(t *testing.T) {
	ctx := context.Background()
	r := openTestRepo(t, t.TempDir(), Options{})
	writeFile(t, r, "notes/x.md", "one\n")
	first := mustCommit(t, r, "one")
	writeFile(t, r, "notes/x.md", "two\n")
	mustCommit(t, r, "two")
	head, _ := r.Revision(ctx)

	if _, err := r.Revert(ctx, first.Revision, ""); !errors.Is(err, ErrRevertConflict) || !strings.Contains(err.Error(), "notes/x.md") {
		t.Errorf("Revert over a later change = %v; want ErrRevertConflict naming the file", err)
	}
	writeFile(t, r, "notes/x.md", "uncommitted\n")
	if _, err := r.Revert(ctx, "HEAD", ""); !errors.Is(err, ErrUncommitted) {
		t.Errorf("Revert with an uncommitted edit = %v; want ErrUncommitted", err)
	}
	if got, _ := readWork(t, r, "notes/x.md"); got != "uncommitted\n" {
		t.Errorf("a refused revert touched the work tree: %q", got)
	}
	if rev, _ := r.Revision(ctx); rev != head {
		t.Errorf("a refused revert moved HEAD")
	}
}
