package memfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
)

// Diff is the difference between two memory revisions.
type Diff struct {
	From      string   // full hash; "" for the empty tree
	To        string   // full hash
	Changes   []Change // sorted by path
	Patch     string   // unified diff, at most maxBytes when a bound was given
	Truncated bool     // whether Patch was cut
}

// Commit is one commit of the memory history.
type Commit struct {
	Revision string
	Message  string // without the trailing newline
	When     time.Time
	Changes  []Change // against the first parent (everything added for the first commit)
}

// minAbbrev is the shortest abbreviated hash accepted.
const minAbbrev = 4

// Diff compares two revisions: from == "" means the empty tree, to == ""
// means HEAD. Revisions are full or abbreviated (at least 4 hex digits)
// hashes, or expressions such as HEAD~1. The patch is cut to maxBytes with
// a note when maxBytes > 0.
func (r *Repo) Diff(ctx context.Context, from, to string, maxBytes int) (Diff, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return Diff{}, err
	}
	defer unlock()
	var fc, tc *object.Commit
	if from != "" {
		if fc, err = r.resolve(from); err != nil {
			return Diff{}, err
		}
	}
	if to == "" {
		to = "HEAD"
	}
	if tc, err = r.resolve(to); err != nil {
		return Diff{}, err
	}
	return r.diffCommits(ctx, fc, tc, maxBytes, true)
}

// Log returns up to n commits (all when n <= 0) following first parents
// from HEAD, newest first.
func (r *Repo) Log(ctx context.Context, n int) ([]Commit, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := r.headCommit()
	if err != nil {
		return nil, err
	}
	var out []Commit
	for c != nil && (n <= 0 || len(out) < n) {
		parent, err := firstParent(c)
		if err != nil {
			return nil, err
		}
		d, err := r.diffCommits(ctx, parent, c, 0, false)
		if err != nil {
			return nil, err
		}
		out = append(out, commitInfo(c, d.Changes))
		c = parent
	}
	return out, nil
}

// Show returns one commit and its diff against its first parent, the patch
// cut to maxBytes when maxBytes > 0.
func (r *Repo) Show(ctx context.Context, rev string, maxBytes int) (Commit, Diff, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return Commit{}, Diff{}, err
	}
	defer unlock()
	c, err := r.resolve(rev)
	if err != nil {
		return Commit{}, Diff{}, err
	}
	parent, err := firstParent(c)
	if err != nil {
		return Commit{}, Diff{}, err
	}
	d, err := r.diffCommits(ctx, parent, c, maxBytes, true)
	if err != nil {
		return Commit{}, Diff{}, err
	}
	return commitInfo(c, d.Changes), d, nil
}

func commitInfo(c *object.Commit, changes []Change) Commit {
	return Commit{
		Revision: c.Hash.String(),
		Message:  strings.TrimRight(c.Message, "\n"),
		When:     c.Committer.When,
		Changes:  changes,
	}
}

func firstParent(c *object.Commit) (*object.Commit, error) {
	if c.NumParents() == 0 {
		return nil, nil
	}
	p, err := c.Parent(0)
	if err != nil {
		return nil, fmt.Errorf("read parent of memory commit %s: %w", c.Hash, err)
	}
	return p, nil
}

// diffCommits compares two commits (from nil: the empty tree).
func (r *Repo) diffCommits(ctx context.Context, from, to *object.Commit, maxBytes int, withPatch bool) (Diff, error) {
	d := Diff{To: to.Hash.String()}
	var ft *object.Tree
	if from != nil {
		d.From = from.Hash.String()
		t, err := from.Tree()
		if err != nil {
			return Diff{}, fmt.Errorf("read tree of memory commit %s: %w", from.Hash, err)
		}
		ft = t
	}
	tt, err := to.Tree()
	if err != nil {
		return Diff{}, fmt.Errorf("read tree of memory commit %s: %w", to.Hash, err)
	}
	changes, err := object.DiffTreeWithOptions(ctx, ft, tt, nil)
	if err != nil {
		return Diff{}, fmt.Errorf("diff memory %s..%s: %w", d.From, d.To, err)
	}
	for _, ch := range changes {
		action, err := ch.Action()
		if err != nil {
			return Diff{}, fmt.Errorf("diff memory %s..%s: %w", d.From, d.To, err)
		}
		switch action {
		case merkletrie.Insert:
			d.Changes = append(d.Changes, Change{Path: ch.To.Name, Kind: KindAdded})
		case merkletrie.Delete:
			d.Changes = append(d.Changes, Change{Path: ch.From.Name, Kind: KindDeleted})
		default:
			d.Changes = append(d.Changes, Change{Path: ch.To.Name, Kind: KindModified})
		}
	}
	sort.Slice(d.Changes, func(i, j int) bool { return d.Changes[i].Path < d.Changes[j].Path })
	if !withPatch || len(changes) == 0 {
		return d, nil
	}
	p, err := changes.PatchContext(ctx)
	if err != nil {
		return Diff{}, fmt.Errorf("patch memory %s..%s: %w", d.From, d.To, err)
	}
	d.Patch = p.String()
	if maxBytes > 0 && len(d.Patch) > maxBytes {
		total := len(d.Patch)
		d.Patch, _ = cutText(d.Patch, maxBytes, func(kept int) string {
			return fmt.Sprintf("[diff cut: %d of %d bytes shown]", kept, total)
		})
		d.Truncated = true
	}
	return d, nil
}

// resolve finds the commit a revision names: a full hash, an abbreviated
// hash of at least minAbbrev hex digits among the commits reachable from
// HEAD, or an expression go-git understands (HEAD, HEAD~2, main).
// The caller holds a lock.
func (r *Repo) resolve(rev string) (*object.Commit, error) {
	rev = strings.TrimSpace(rev)
	if rev == "" {
		return nil, fmt.Errorf("%w: empty revision; give a commit hash from the memory log", ErrUnknownRevision)
	}
	if isHex(rev) && len(rev) >= minAbbrev && len(rev) <= 40 {
		rev = strings.ToLower(rev)
		if len(rev) == 40 {
			c, err := r.git.CommitObject(plumbing.NewHash(rev))
			if err != nil {
				return nil, fmt.Errorf("%w: %s is not a commit of this memory; list commits with the memory log", ErrUnknownRevision, rev)
			}
			return c, nil
		}
		return r.resolvePrefix(rev)
	}
	h, err := r.git.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a commit of this memory (%v); give a hash of at least %d hex digits from the memory log", ErrUnknownRevision, rev, err, minAbbrev)
	}
	c, err := r.git.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("%w: %q names %s, which is not a commit: %v", ErrUnknownRevision, rev, h, err)
	}
	return c, nil
}

// resolvePrefix finds the one commit reachable from HEAD whose hash starts
// with prefix.
func (r *Repo) resolvePrefix(prefix string) (*object.Commit, error) {
	head, err := r.headCommit()
	if err != nil {
		return nil, err
	}
	var matches []*object.Commit
	seen := map[plumbing.Hash]bool{}
	stack := []*object.Commit{head}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c.Hash] {
			continue
		}
		seen[c.Hash] = true
		if strings.HasPrefix(c.Hash.String(), prefix) {
			matches = append(matches, c)
		}
		err := c.Parents().ForEach(func(p *object.Commit) error {
			stack = append(stack, p)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk memory history: %w", err)
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("%w: no commit of this memory starts with %s; list commits with the memory log", ErrUnknownRevision, prefix)
	case 1:
		return matches[0], nil
	}
	var names []string
	for _, c := range matches {
		names = append(names, c.Hash.String()[:12])
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w: %s matches %s; give more hex digits", ErrAmbiguousRevision, prefix, strings.Join(names, ", "))
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// Revert makes a new commit that undoes the changes rev made (against its
// first parent), and updates the work tree to match. It fails with
// ErrRevertConflict when a later commit changed one of those files again,
// and with ErrUncommitted when one of them has uncommitted edits. When HEAD
// already has every file as it was before rev, nothing is committed
// (Changed false). An empty message gets a default one; a "This reverts
// commit …" line is always appended.
func (r *Repo) Revert(ctx context.Context, rev string, message string) (CommitResult, error) {
	unlock, err := r.lock(ctx, true)
	if err != nil {
		return CommitResult{}, err
	}
	defer unlock()
	head, headFiles, err := r.headState()
	if err != nil {
		return CommitResult{}, err
	}
	if head == nil {
		return CommitResult{}, fmt.Errorf("%w: memory %s has no commits", ErrUnknownRevision, r.dir)
	}
	target, err := r.resolve(rev)
	if err != nil {
		return CommitResult{}, err
	}
	parent, err := firstParent(target)
	if err != nil {
		return CommitResult{}, err
	}
	after, err := r.commitFileMap(target)
	if err != nil {
		return CommitResult{}, err
	}
	before, err := r.commitFileMap(parent)
	if err != nil {
		return CommitResult{}, err
	}
	short := target.Hash.String()[:12]

	files := make(map[string]treeFile, len(headFiles))
	for p, f := range headFiles {
		files[p] = f
	}
	var paths []string
	for _, p := range changedPaths(before, after) {
		b, inBefore := before[p]
		a, inAfter := after[p]
		cur, inHead := headFiles[p]
		switch {
		case inHead == inAfter && cur == a:
			if inBefore {
				files[p] = b
			} else {
				delete(files, p)
			}
			paths = append(paths, p)
		case inHead == inBefore && cur == b:
			// already as it was before rev
		default:
			return CommitResult{}, fmt.Errorf("%w: %s was changed again after commit %s; revert the later commits first or edit the file by hand", ErrRevertConflict, p, short)
		}
	}
	if len(paths) == 0 {
		return CommitResult{Revision: head.Hash.String()}, nil
	}
	for _, p := range paths {
		cur, inHead := headFiles[p]
		same, err := r.workFileIs(p, cur, inHead)
		if err != nil {
			return CommitResult{}, err
		}
		if !same {
			return CommitResult{}, fmt.Errorf("%w: %s differs from its last commit; commit or undo that edit before reverting %s", ErrUncommitted, p, short)
		}
	}

	if message == "" {
		message = fmt.Sprintf("Revert %q", target.Message[:strings.IndexByte(target.Message+"\n", '\n')])
	}
	message = strings.TrimRight(message, "\n") + "\n\nThis reverts commit " + target.Hash.String() + "."
	// Build the tree before touching the work tree: it refuses a path that
	// would be both a file and a directory.
	if _, err := writeTree(r.git, files); err != nil {
		return CommitResult{}, fmt.Errorf("%w: %v", ErrRevertConflict, err)
	}
	// Write the work tree first: a crash before the commit then leaves an
	// ordinary uncommitted edit rather than a commit the work tree undoes.
	if err := r.applyToWorkTree(paths, files); err != nil {
		return CommitResult{}, errors.Join(err, r.applyToWorkTree(paths, headFiles))
	}
	newRev, err := r.commitFiles(head, files, message)
	if err != nil {
		return CommitResult{}, errors.Join(err, r.applyToWorkTree(paths, headFiles))
	}
	return CommitResult{Revision: newRev, Changed: true, Files: paths}, nil
}

// changedPaths lists the paths whose entries differ between a and b, sorted.
func changedPaths(a, b map[string]treeFile) []string {
	var out []string
	for p, fa := range a {
		if fb, ok := b[p]; !ok || fa != fb {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// workFileIs reports whether the work-tree entry at p is the file f (or
// absent when exists is false).
func (r *Repo) workFileIs(p string, f treeFile, exists bool) (bool, error) {
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return !exists, nil
	}
	if err != nil {
		return false, fmt.Errorf("check memory file %s: %w", p, err)
	}
	if !exists || !fi.Mode().IsRegular() {
		return false, nil
	}
	w, err := readWorkFile(full, r.opts.MaxFileBytes)
	if err != nil {
		return false, fmt.Errorf("check memory file %s: %w", p, err)
	}
	return w.hash == f.hash, nil
}

// applyToWorkTree makes the work-tree entries at paths match files.
func (r *Repo) applyToWorkTree(paths []string, files map[string]treeFile) error {
	var errs []error
	for _, p := range paths {
		if f, ok := files[p]; ok {
			errs = append(errs, r.writeBlobToWorkTree(p, f))
			continue
		}
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if err := os.RemoveAll(full); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
		r.pruneEmptyDirs(filepath.Dir(full))
	}
	return errors.Join(errs...)
}
