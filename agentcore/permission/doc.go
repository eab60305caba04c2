// Package permission decides whether an agent's tool call may run: allow, deny or ask a person.
//
// A [Policy] holds an agent's mode, its allow/deny/ask rules, its disallowed tools and the
// directories that matter (workspace, this agent's memory directory, the root holding every
// agent's memory, extra read-only directories). [Policy.Check] classifies one [Call] by a fixed
// order in which the invariants come first:
//
//  1. a path under another agent's memory directory, or a file tool's path into the gateway's
//     own /proc/<pid> (file tools run inside the gateway: /proc/self, /dev/fd) → deny, in
//     every mode;
//  2. deny rules and disallowed tools → deny;
//  3. ask rules → ask;
//  4. mode unrestricted → allow;
//  5. allow rules → allow;
//  6. auto-allow (skipped in strict): reads inside the workspace, the memory directory and the
//     read-only directories (never under /proc or /sys), writes inside the memory directory, in
//     acceptEdits writes inside the workspace (never under the workspace's or the memory's
//     .git), read-only shell commands from a fixed allowlist of (program, accepted options)
//     whose paths stay readable (readonly.go);
//  7. otherwise → ask.
//
// Paths are resolved the way the kernel would see them: relative to the workspace, ~ expanded,
// every existing symlink followed (also dangling ones and before applying ..), and a path counts
// as inside a directory only if both its lexical and its resolved form are inside. Globs are
// expanded as bash will, component by component against the file system, before a command's
// options are read; a glob followed by .. never auto-allows. Shell lines
// are parsed with mvdan.cc/sh/v3/syntax; a rule or the read-only list allows a line only if it
// allows every simple command in it, including those in substitutions, while a deny or ask rule
// matches a line if it matches any of them (also after wrappers like sudo, env, xargs, find
// -exec, and inside sh -c and eval strings). A line the parser cannot read is never allowed.
//
// Concurrency: a Policy is read-only during Check; Check may be called from any number of
// goroutines at once as long as nobody mutates the Policy meanwhile. Check keeps no state
// between calls; it reads the file system (lstat, readlink, glob) to resolve paths, so its
// answer reflects the file system at the time of the call — callers re-check right before
// executing. Check never panics; an internal failure yields ask.
package permission
