// Package sandbox runs the agents' shell commands on the host and keeps their
// output safe to show: it is the only place where switchboard starts tool
// processes.
//
// A [Runner] starts each command in its own process group (Setpgid, with
// Pdeathsig=SIGKILL on the group leader), optionally confined by bubblewrap
// ([ConfineBwrap]), and records the group in a [Registry] so that a later
// start can kill groups left behind by a crashed process. On timeout or
// cancellation the whole group gets SIGTERM, then SIGKILL after a grace
// period. When the command finishes normally the group is killed as well:
// a finished command leaves nothing running, so `sleep 1000 &` dies with the
// command that started it. Only a process that leaves the group on purpose
// (setsid, setpgid) survives, and under bubblewrap not even that, because the
// command runs in its own PID namespace that ends with it.
//
// Secrets are kept out of tool processes and their output: [ScrubEnv] builds
// the environment from an allowlist, and a [Redactor] replaces known secret
// values in everything a command prints. [Clamp] and [WriteOverflow] cut long
// output for the model and keep the full text in a private file.
//
// Concurrency: a [Runner], a [Redactor] and a [Registry] are safe for use by
// many goroutines at once; Run blocks until the command and everything it
// started in its group is gone, or until a bounded drain delay has passed.
// Several processes may share one Registry directory. The package has no
// package-level mutable state.
//
// Pdeathsig caveat: Linux delivers the parent-death signal when the OS thread
// that forked the child exits, not only when the process exits. Run forks
// from a fresh goroutine that holds its thread locked during the fork, so a
// caller's own locked thread never matters, but Go may later hand that thread
// to a goroutine that calls runtime.LockOSThread and exits without unlocking,
// which ends the thread and kills the group leader early. switchboard never
// does that; code embedding this package must not either.
package sandbox
