package memfs

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Change kinds.
const (
	KindAdded    = "added"
	KindModified = "modified"
	KindDeleted  = "deleted"
)

// Change is one file changed between two trees.
type Change struct {
	Path string
	Kind string // KindAdded, KindModified or KindDeleted
}

// CommitResult reports what a commit did.
type CommitResult struct {
	Revision string   // HEAD after the call (unchanged when Changed is false)
	Changed  bool     // whether a new commit was made
	Files    []string // changed paths, sorted
}

// ValidationError says why a work-tree change was refused. Nothing was
// committed and the changed files were restored to HEAD.
type ValidationError struct {
	Path   string // the rejected file, relative to the repository root
	Reason string // why, e.g. "it is 9000 bytes, over the 8192-byte limit"
}

// Error implements error with a message meant for the agent or a person.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("memory file %q was not committed: %s; nothing was committed and the changed memory files were restored to their last committed version, so fix this and write the file again", e.Path, e.Reason)
}

// wtFile is one entry found in the work tree.
type wtFile struct {
	hash    plumbing.Hash
	size    int64
	content []byte // nil when the file is over the size limit or not a regular file
	bad     string // reason this entry can never be committed (symlink, nested .git, …)
	symlink bool   // a symbolic link; hash is that of its target, as git stores it
}

// treeFile is one file entry of a tree.
type treeFile struct {
	hash plumbing.Hash
	mode filemode.FileMode
}

// wtChange is one difference between HEAD and the work tree.
type wtChange struct {
	Change
	wt   *wtFile  // nil when deleted
	head treeFile // zero when added
}

// CommitWorkTree validates the work-tree changes (added, modified, deleted
// files) and commits them all in one commit with the given message (a
// summary of the changed files when empty). It returns Changed false when
// the work tree matches HEAD. When a changed file is rejected it commits
// nothing, restores every changed path to HEAD (removing new files) and
// returns a *ValidationError.
func (r *Repo) CommitWorkTree(ctx context.Context, message string) (CommitResult, error) {
	unlock, err := r.lock(ctx, true)
	if err != nil {
		return CommitResult{}, err
	}
	defer unlock()
	return r.commitWorkTree(ctx, message, true, r.opts.MaxFileBytes, nil)
}

// CommitPaths is CommitWorkTree limited to the given paths (relative to
// the repository, or absolute inside it): other changes in the work tree —
// a person's uncommitted hand edit — are neither committed nor restored,
// so they never reach a compiled prompt through someone else's commit.
func (r *Repo) CommitPaths(ctx context.Context, message string, paths ...string) (CommitResult, error) {
	only := map[string]bool{}
	for _, p := range paths {
		if filepath.IsAbs(p) {
			rel, err := filepath.Rel(r.dir, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				return CommitResult{}, fmt.Errorf("commit memory: %s is outside the memory directory %s", p, r.dir)
			}
			p = rel
		}
		only[filepath.ToSlash(filepath.Clean(p))] = true
	}
	unlock, err := r.lock(ctx, true)
	if err != nil {
		return CommitResult{}, err
	}
	defer unlock()
	return r.commitWorkTree(ctx, message, true, r.opts.MaxFileBytes, only)
}

// commitWorkTree does CommitWorkTree's work with the exclusive lock held,
// accepting files of up to maxFile bytes. With restore false a rejected
// change is left in place (Open uses this so that it never deletes files a
// person put into a new memory directory).
func (r *Repo) commitWorkTree(ctx context.Context, message string, restore bool, maxFile int, only map[string]bool) (CommitResult, error) {
	head, headFiles, err := r.headState()
	if err != nil {
		return CommitResult{}, err
	}
	wt, err := r.scanWorkTree(ctx, maxFile)
	if err != nil {
		return CommitResult{}, err
	}
	changes := diffWorkTree(headFiles, wt)
	if only != nil {
		kept := changes[:0]
		for _, c := range changes {
			if only[c.Path] {
				kept = append(kept, c)
			}
		}
		changes = kept
	}
	headRev := ""
	if head != nil {
		headRev = head.Hash.String()
	}
	if len(changes) == 0 {
		return CommitResult{Revision: headRev}, nil
	}
	for _, c := range changes {
		if reason := validate(c, maxFile); reason != "" {
			verr := &ValidationError{Path: c.Path, Reason: reason}
			if !restore {
				return CommitResult{}, verr
			}
			if err := r.restore(changes); err != nil {
				return CommitResult{}, fmt.Errorf("%w (restoring the work tree also failed: %v)", verr, err)
			}
			return CommitResult{}, verr
		}
	}

	files := make(map[string]treeFile, len(headFiles)+len(changes))
	for p, f := range headFiles {
		files[p] = f
	}
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.Path)
		if c.Kind == KindDeleted {
			delete(files, c.Path)
			continue
		}
		h, err := storeBlob(r.git, c.wt.content)
		if err != nil {
			return CommitResult{}, fmt.Errorf("store memory file %s: %w", c.Path, err)
		}
		files[c.Path] = treeFile{hash: h, mode: filemode.Regular}
	}
	if message == "" {
		message = "Update memory: " + summarizePaths(paths)
	}
	rev, err := r.commitFiles(head, files, message)
	if err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Revision: rev, Changed: true, Files: paths}, nil
}

// headState returns the HEAD commit (nil on an unborn branch) and its files.
func (r *Repo) headState() (*object.Commit, map[string]treeFile, error) {
	ref, err := r.git.Head()
	if err == plumbing.ErrReferenceNotFound {
		return nil, map[string]treeFile{}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read HEAD of memory %s: %w", r.dir, err)
	}
	c, err := r.git.CommitObject(ref.Hash())
	if err != nil {
		return nil, nil, fmt.Errorf("read HEAD commit of memory %s: %w", r.dir, err)
	}
	files, err := r.commitFileMap(c)
	if err != nil {
		return nil, nil, err
	}
	return c, files, nil
}

// commitFileMap lists the non-directory entries of a commit's tree.
func (r *Repo) commitFileMap(c *object.Commit) (map[string]treeFile, error) {
	files := map[string]treeFile{}
	if c == nil {
		return files, nil
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of memory commit %s: %w", c.Hash, err)
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("walk tree of memory commit %s: %w", c.Hash, err)
		}
		if entry.Mode == filemode.Dir {
			continue
		}
		files[name] = treeFile{hash: entry.Hash, mode: entry.Mode}
	}
}

// scanWorkTree reads the work tree (skipping the top-level .git). Content
// is kept only for regular files within the size limit; larger files are
// hashed as a stream so an unchanged large file committed earlier passes.
func (r *Repo) scanWorkTree(ctx context.Context, maxFile int) (map[string]*wtFile, error) {
	out := map[string]*wtFile{}
	err := filepath.WalkDir(r.dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read memory work tree: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if full == r.dir {
			return nil
		}
		rel, err := filepath.Rel(r.dir, full)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == git.GitDirName {
			return filepath.SkipDir
		}
		if strings.EqualFold(d.Name(), git.GitDirName) {
			out[rel] = &wtFile{bad: "a .git entry (a nested repository) is not allowed in memory"}
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return err
			}
			out[rel] = &wtFile{
				bad:     "symbolic links are not allowed in memory; write a regular file",
				symlink: true,
				hash:    plumbing.ComputeHash(plumbing.BlobObject, []byte(target)),
			}
			return nil
		case !d.Type().IsRegular():
			out[rel] = &wtFile{bad: "only regular files are allowed in memory"}
			return nil
		}
		f, err := readWorkFile(full, maxFile)
		if err != nil {
			return err
		}
		out[rel] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan memory %s: %w", r.dir, err)
	}
	return out, nil
}

// readWorkFile hashes a regular file, keeping its content when it is at
// most limit bytes.
func readWorkFile(full string, limit int) (*wtFile, error) {
	f, err := os.Open(full)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= int64(limit) {
		data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
		if err != nil {
			return nil, err
		}
		return &wtFile{hash: plumbing.ComputeHash(plumbing.BlobObject, data), size: int64(len(data)), content: data}, nil
	}
	h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	n, err := io.Copy(h, io.LimitReader(f, fi.Size()))
	if err != nil {
		return nil, err
	}
	if n != fi.Size() {
		// The file shrank while we read it; the hash is meaningless, so make
		// sure it never equals a committed one.
		return &wtFile{size: n}, nil
	}
	return &wtFile{hash: h.Sum(), size: n}, nil
}

// diffWorkTree lists the differences between HEAD and the work tree,
// sorted by path.
func diffWorkTree(head map[string]treeFile, wt map[string]*wtFile) []wtChange {
	var out []wtChange
	for p, f := range wt {
		h, ok := head[p]
		switch {
		case !ok:
			out = append(out, wtChange{Change: Change{Path: p, Kind: KindAdded}, wt: f})
		case f.symlink && h.mode == filemode.Symlink && f.hash == h.hash:
			// a symlink committed by other means, unchanged: leave it be
		case f.bad != "" || f.hash != h.hash || !isRegular(h.mode):
			out = append(out, wtChange{Change: Change{Path: p, Kind: KindModified}, wt: f, head: h})
		}
	}
	for p, h := range head {
		if _, ok := wt[p]; !ok {
			out = append(out, wtChange{Change: Change{Path: p, Kind: KindDeleted}, head: h})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// validate returns why a change may not be committed, or "".
func validate(c wtChange, maxFile int) string {
	if c.Kind == KindDeleted {
		return ""
	}
	if reason := checkPath(c.Path); reason != "" {
		return reason
	}
	if c.wt.bad != "" {
		return c.wt.bad
	}
	if c.wt.content == nil {
		return fmt.Sprintf("it is %d bytes, over the %d-byte limit per memory file; split it or shorten it", c.wt.size, maxFile)
	}
	return checkContent(c.wt.content)
}

// summarizePaths joins up to five paths for a commit message.
func summarizePaths(paths []string) string {
	const show = 5
	if len(paths) <= show {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:show], ", "), len(paths)-show)
}

// restore puts every changed path back to its HEAD state: new entries are
// removed (with directories left empty), modified and deleted files are
// rewritten from HEAD. Removing before writing means a symlink is replaced,
// never written through.
func (r *Repo) restore(changes []wtChange) error {
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, c := range changes {
		if c.Kind == KindDeleted {
			continue
		}
		full := filepath.Join(r.dir, filepath.FromSlash(c.Path))
		keep(os.RemoveAll(full))
		r.pruneEmptyDirs(filepath.Dir(full))
	}
	for _, c := range changes {
		if c.Kind == KindAdded {
			continue
		}
		keep(r.writeBlobToWorkTree(c.Path, c.head))
	}
	return firstErr
}

// writeBlobToWorkTree replaces the work-tree file at path with a blob.
func (r *Repo) writeBlobToWorkTree(path string, f treeFile) error {
	if !isRegular(f.mode) && f.mode != filemode.Symlink {
		return nil // a submodule has nothing to write
	}
	blob, err := r.git.BlobObject(f.hash)
	if err != nil {
		return fmt.Errorf("read committed %s: %w", path, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("read committed %s: %w", path, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("read committed %s: %w", path, err)
	}
	full := filepath.Join(r.dir, filepath.FromSlash(path))
	if err := os.RemoveAll(full); err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	if f.mode == filemode.Symlink {
		if err := os.Symlink(string(data), full); err != nil {
			return fmt.Errorf("restore %s: %w", path, err)
		}
		return nil
	}
	perm := os.FileMode(0o644)
	if f.mode == filemode.Executable {
		perm = 0o755
	}
	if err := os.WriteFile(full, data, perm); err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// isRegular reports whether a tree entry mode is a regular file.
func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// pruneEmptyDirs removes dir and its parents up to the repository root
// while they are empty.
func (r *Repo) pruneEmptyDirs(dir string) {
	for dir != r.dir && strings.HasPrefix(dir, r.dir+string(filepath.Separator)) {
		if os.Remove(dir) != nil { // fails when not empty: stop there
			return
		}
		dir = filepath.Dir(dir)
	}
}

// commitFiles writes a tree of files and a commit on top of parent (nil for
// the first commit), moves the current branch to it and rewrites the index.
// The caller holds the exclusive lock.
func (r *Repo) commitFiles(parent *object.Commit, files map[string]treeFile, message string) (string, error) {
	treeHash, err := writeTree(r.git, files)
	if err != nil {
		return "", fmt.Errorf("write memory tree: %w", err)
	}
	sig := object.Signature{Name: "switchboard", Email: "switchboard@localhost", When: r.opts.Now()}
	if r.opts.AgentName != "" {
		sig.Name = r.opts.AgentName
	}
	c := &object.Commit{
		Author:    sig,
		Committer: sig,
		Message:   cleanMessage(message),
		TreeHash:  treeHash,
	}
	if parent != nil {
		c.ParentHashes = []plumbing.Hash{parent.Hash}
	}
	obj := r.git.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", fmt.Errorf("encode memory commit: %w", err)
	}
	h, err := r.git.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", fmt.Errorf("store memory commit: %w", err)
	}
	if err := r.moveBranch(parent, h); err != nil {
		return "", err
	}
	if err := r.writeIndex(files); err != nil {
		return "", err
	}
	return h.String(), nil
}

// moveBranch points the branch HEAD names at h, checking it still points
// at parent.
func (r *Repo) moveBranch(parent *object.Commit, h plumbing.Hash) error {
	headRef, err := r.git.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return fmt.Errorf("read HEAD of memory %s: %w", r.dir, err)
	}
	if headRef.Type() != plumbing.SymbolicReference {
		return fmt.Errorf("memory %s has a detached HEAD; check out a branch (e.g. main) first", r.dir)
	}
	branch := headRef.Target()
	next := plumbing.NewHashReference(branch, h)
	if parent == nil {
		err = r.git.Storer.SetReference(next)
	} else {
		err = r.git.Storer.CheckAndSetReference(next, plumbing.NewHashReference(branch, parent.Hash))
	}
	if err != nil {
		return fmt.Errorf("move memory branch %s to %s: %w", branch, h, err)
	}
	return nil
}

// writeIndex makes the index match the committed files so that tools
// reading the repository (git status) see a clean tree.
func (r *Repo) writeIndex(files map[string]treeFile) error {
	idx := &index.Index{Version: 2}
	for p, f := range files {
		e := &index.Entry{Name: p, Hash: f.hash, Mode: f.mode}
		if fi, err := os.Lstat(filepath.Join(r.dir, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
			e.Size = uint32(fi.Size())
			e.ModifiedAt = fi.ModTime()
		}
		idx.Entries = append(idx.Entries, e)
	}
	sort.Slice(idx.Entries, func(i, j int) bool { return idx.Entries[i].Name < idx.Entries[j].Name })
	if err := r.git.Storer.SetIndex(idx); err != nil {
		return fmt.Errorf("write memory index: %w", err)
	}
	return nil
}

// cleanMessage makes a commit message safe to store: valid UTF-8, no NUL,
// one trailing newline.
func cleanMessage(m string) string {
	m = strings.ToValidUTF8(m, "\uFFFD")
	m = strings.ReplaceAll(m, "\x00", "")
	m = strings.TrimRight(m, " \t\r\n")
	if m == "" {
		m = "Update memory"
	}
	return m + "\n"
}
