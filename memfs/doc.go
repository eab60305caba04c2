// Package memfs is an agent's memory: a git repository of small text files,
// created on first use with a default layout and read only through its
// committed HEAD.
//
// The agent edits the work tree with its ordinary file tools; the harness
// then calls [Repo.CommitWorkTree], which validates every changed file
// (size, UTF-8 text, allowed path) and commits the change or, when a file is
// rejected, restores the work tree to HEAD and returns a [*ValidationError].
// [Repo.Compile] renders the files of HEAD into the memory section of a system
// prompt; it never looks at the work tree, so an uncommitted edit never
// reaches a prompt, and the same HEAD always yields byte-identical text.
// [Repo.Diff], [Repo.Log], [Repo.Show] and [Repo.Revert] serve memory
// reminders and the /memory commands.
//
// Only go-git is used; no git binary or git configuration is needed.
//
// # Concurrency
//
// A [Repo] is safe for concurrent use by several goroutines: every method
// holds a per-Repo lock for its whole duration, so calls on one Repo run one
// at a time. Several processes (or several Repo values in one process) may
// share a directory: writes (CommitWorkTree, Revert, the first commit in
// Open) hold an exclusive flock on a file inside .git, reads hold a shared
// one, so a reader never sees a half-written reference and commits are
// serialized into one linear history. Waiting for either lock ends when the
// context is cancelled.
package memfs
