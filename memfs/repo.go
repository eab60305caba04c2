package memfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Default limits used when Options leaves them zero.
const (
	DefaultMaxFileBytes  = 8 << 10
	DefaultMaxTotalBytes = 24 << 10
)

// Sentinel errors callers may branch on with errors.Is.
var (
	// ErrUnknownRevision: no commit of the memory history matches a revision.
	ErrUnknownRevision = errors.New("unknown memory revision")
	// ErrAmbiguousRevision: an abbreviated hash matches several commits.
	ErrAmbiguousRevision = errors.New("ambiguous memory revision")
	// ErrRevertConflict: later commits changed a file the reverted commit touched.
	ErrRevertConflict = errors.New("memory revert conflicts with later changes")
	// ErrUncommitted: the work tree holds uncommitted changes to a file an
	// operation needs to rewrite.
	ErrUncommitted = errors.New("memory file has uncommitted changes")
)

// Options configure a Repo. The zero value is usable.
type Options struct {
	// AgentName names the agent in the default layout and in commit authors.
	AgentName string
	// MaxFileBytes is the per-file limit for validation and Compile
	// (default DefaultMaxFileBytes).
	MaxFileBytes int
	// MaxTotalBytes bounds the text Compile returns (default DefaultMaxTotalBytes).
	MaxTotalBytes int
	// Now gives commit times; default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.AgentName = strings.Join(strings.Fields(o.AgentName), " ")
	return o
}

// Repo is one agent's memory repository. See the package documentation for
// its concurrency properties.
type Repo struct {
	dir      string
	lockPath string
	opts     Options
	sem      chan struct{} // in-process lock; a channel so waiting honours ctx
	git      *git.Repository
}

// File is one committed file of the memory.
type File struct {
	Path    string // slash-separated, relative to the repository root
	Content string
}

// Open opens the memory repository in dir, creating the directory, the git
// repository (branch main) and a small default layout with its first commit
// when they do not exist yet. Opening an existing repository changes nothing.
func Open(ctx context.Context, dir string, opts Options) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open memory %s: %w", dir, err)
	}
	gitDir := filepath.Join(abs, git.GitDirName)
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		return nil, fmt.Errorf("create memory directory %s: %w", abs, err)
	}
	r := &Repo{
		dir:      abs,
		lockPath: filepath.Join(gitDir, lockFileName),
		opts:     opts.withDefaults(),
		sem:      make(chan struct{}, 1),
	}
	unlock, err := r.lock(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()

	g, err := git.PlainOpen(abs)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		g, err = git.PlainInitWithOptions(abs, &git.PlainInitOptions{
			InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
		})
	}
	if err != nil {
		return nil, fmt.Errorf("open memory repository %s: %w", abs, err)
	}
	r.git = g
	if _, err := g.Head(); err == nil {
		return r, nil
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("read HEAD of memory %s: %w", abs, err)
	}
	// An unborn branch: first use, or a first Open that died before its commit.
	if err := r.writeDefaultLayout(); err != nil {
		return nil, err
	}
	// The layout itself is accepted even under a tiny MaxFileBytes.
	if _, err := r.commitWorkTree(ctx, "Create memory", false, max(r.opts.MaxFileBytes, layoutMaxFile), nil); err != nil {
		return nil, fmt.Errorf("first commit of memory %s: %w", abs, err)
	}
	return r, nil
}

// Dir returns the absolute path of the repository's work tree.
func (r *Repo) Dir() string { return r.dir }

// Revision returns the full hash of the HEAD commit.
func (r *Repo) Revision(ctx context.Context) (string, error) {
	unlock, err := r.lock(ctx, false)
	if err != nil {
		return "", err
	}
	defer unlock()
	c, err := r.headCommit()
	if err != nil {
		return "", err
	}
	return c.Hash.String(), nil
}

// headCommit returns the commit HEAD points to.
func (r *Repo) headCommit() (*object.Commit, error) {
	ref, err := r.git.Head()
	if err != nil {
		return nil, fmt.Errorf("read HEAD of memory %s: %w", r.dir, err)
	}
	c, err := r.git.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("read HEAD commit %s of memory %s: %w", ref.Hash(), r.dir, err)
	}
	return c, nil
}

// layoutMaxFile is the per-file limit of the first commit, so that the
// default layout fits whatever MaxFileBytes says.
const layoutMaxFile = 2 << 10

// defaultLayout returns the files a new memory starts with.
func (r *Repo) defaultLayout() map[string]string {
	name := r.opts.AgentName
	if name == "" {
		name = "an agent"
	}
	return map[string]string{
		"README.md": fmt.Sprintf(`# Memory

This directory is your memory, a git repository. Every committed .md and .txt file
is shown to you in your system prompt (system/ first) at the start of a conversation.

- Edit files here with your Write and Edit tools. Each edit is checked and committed;
  a change made during a conversation reaches you as a reminder with the diff.
- UTF-8 text only, at most %d bytes per file and about %d bytes in all.
- system/persona.md is who you are; system/human.md is who you work for.
- Add topic files (e.g. notes/projects.md) for lasting facts. Keep them short and
  current; delete what is stale.
`, r.opts.MaxFileBytes, r.opts.MaxTotalBytes),
		"system/persona.md": fmt.Sprintf(`# Persona

I am %s, a long-lived assistant people reach through chat. I record here how I
work and what I have learned about doing it well.
`, name),
		"system/human.md": `# Human

Who I work for: name, role, preferences, how they like answers. Nothing is known
yet; I fill this in as I learn.
`,
	}
}

// writeDefaultLayout writes the default files that do not exist yet.
func (r *Repo) writeDefaultLayout() error {
	for p, content := range r.defaultLayout() {
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if _, err := os.Lstat(full); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create memory layout in %s: %w", r.dir, err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return fmt.Errorf("create memory layout in %s: %w", r.dir, err)
		}
	}
	return nil
}
