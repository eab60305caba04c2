package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Defaults for [Options].
const (
	DefaultGrace      = 2 * time.Second
	DefaultMaxCapture = 10 << 20
)

// Cmd is one shell command to run.
type Cmd struct {
	// Command is a shell line, run as bash -c Command (sh when there is no
	// bash).
	Command string
	// Dir is the working directory (the agent's workspace).
	Dir string
	// Env is the complete environment, already scrubbed by the caller with
	// [ScrubEnv]. nil means an empty environment, never the gateway's own.
	Env []string
	// Timeout bounds the run; 0 means no timeout besides ctx.
	Timeout time.Duration
	// Confine selects the confinement; "" means [ConfineNone].
	Confine Confinement
	// Network allows network access under bwrap; false unshares the
	// network namespace (only a private loopback remains).
	Network bool
	// Writable lists directories writable inside bwrap (the workspace, the
	// agent's memory directory). A private, empty /tmp is always writable
	// and given as TMPDIR.
	Writable []string
	// Hidden lists directories covered by an empty tmpfs inside bwrap (e.g.
	// $SWITCHBOARD_HOME). Writable entries inside a Hidden directory are
	// bound back after the tmpfs. Hidden directories that do not exist are
	// skipped.
	Hidden []string
	// Stdin is the command's standard input; empty means /dev/null.
	Stdin string
}

// Output is what a finished command produced.
type Output struct {
	// Stdout and Stderr are redacted but not clamped (see [Clamp]).
	Stdout, Stderr string
	// ExitCode is the exit status, or -1 when the command was killed by a
	// signal.
	ExitCode int
	// TimedOut is set when Cmd.Timeout ended the command; Cancelled when
	// ctx did (including a ctx deadline).
	TimedOut, Cancelled bool
	// Duration is the wall time from start to the end of the command.
	Duration time.Duration
	// PID is the group leader's pid, which is also the process group id
	// (under bwrap, the pid of bwrap itself); 0 when nothing started.
	PID int
}

// Options configure a [Runner].
type Options struct {
	// Redactor redacts the command's output; nil redacts nothing.
	Redactor *Redactor
	// Registry records running groups; nil means groups are not recorded.
	Registry *Registry
	// Grace is the time between SIGTERM and SIGKILL on timeout or cancel,
	// and how long Run keeps reading output after the group was killed
	// (for processes that left the group and hold the pipes open).
	// 0 means [DefaultGrace].
	Grace time.Duration
	// MaxCapture is how many bytes per stream are kept in memory; the
	// rest is discarded and a note appended. 0 means [DefaultMaxCapture].
	MaxCapture int
	// BwrapPath is the bubblewrap binary; "" looks up "bwrap" in PATH.
	BwrapPath string
}

// Runner runs commands. It is safe for concurrent use; each Run is
// independent.
type Runner struct {
	opts  Options
	shell string

	mu      sync.Mutex
	bwrapOK string // path of a bwrap that passed the probe; "" until then
}

// NewRunner returns a Runner with opts, defaults filled in.
func NewRunner(opts Options) *Runner {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxCapture <= 0 {
		opts.MaxCapture = DefaultMaxCapture
	}
	return &Runner{opts: opts, shell: findShell()}
}

// findShell returns the absolute path of bash, else sh.
func findShell() string {
	for _, name := range []string{"bash", "sh"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return "/bin/sh"
}

// bwrap returns the path of a working bwrap, probing it the first time.
// Only success is cached, so installing bubblewrap needs no restart.
func (r *Runner) bwrap() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bwrapOK != "" {
		return r.bwrapOK, nil
	}
	name := r.opts.BwrapPath
	if name == "" {
		name = "bwrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrConfinementUnavailable, err)
	}
	if err := probeBwrap(path, r.shell); err != nil {
		return "", fmt.Errorf("%w (%v)", ErrConfinementUnavailable, err)
	}
	r.bwrapOK = path
	return path, nil
}

// Run runs c and returns its output once the command and every process of
// its group have ended. On timeout or ctx cancellation the group gets
// SIGTERM, then SIGKILL after the grace period. When the command's main
// process exits normally the rest of its group is killed too, so a
// finished command leaves nothing running (use setsid to keep a daemon; it
// then also escapes timeouts). A non-zero exit is not an error: err is only
// for a command that could not be started, ErrConfinementUnavailable
// included, or whose group could not be recorded in the Registry.
func (r *Runner) Run(ctx context.Context, c Cmd) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{ExitCode: -1, Cancelled: true}, fmt.Errorf("run command: not started: %w", err)
	}
	path, args, err := r.argv(c)
	if err != nil {
		return Output{ExitCode: -1}, err
	}
	env := c.Env
	if env == nil {
		env = []string{}
	}
	cmd := &exec.Cmd{Path: path, Args: args, Dir: c.Dir, Env: env, SysProcAttr: sysProcAttr()}

	// Our own pipes (not exec's copying goroutines): Wait then returns when
	// the leader exits, and Run decides how long to keep reading.
	var child, parent []*os.File
	defer func() {
		for _, f := range append(child, parent...) {
			f.Close()
		}
	}()
	outR, outW, err := os.Pipe()
	if err != nil {
		return Output{ExitCode: -1}, fmt.Errorf("run command: %w", err)
	}
	child, parent = append(child, outW), append(parent, outR)
	errR, errW, err := os.Pipe()
	if err != nil {
		return Output{ExitCode: -1}, fmt.Errorf("run command: %w", err)
	}
	child, parent = append(child, errW), append(parent, errR)
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if c.Stdin != "" {
		inR, w, err := os.Pipe()
		if err != nil {
			return Output{ExitCode: -1}, fmt.Errorf("run command: %w", err)
		}
		inW = w
		child, parent = append(child, inR), append(parent, inW)
		cmd.Stdin = inR
	}

	start := time.Now()
	if err := startLocked(cmd); err != nil {
		return Output{ExitCode: -1}, fmt.Errorf("start command in %q: %w", c.Dir, err)
	}
	for _, f := range child {
		f.Close()
	}
	child = nil
	pgid := cmd.Process.Pid
	out := Output{PID: pgid}

	var record string
	if r.opts.Registry != nil {
		record, err = r.recordGroup(pgid, c.Command)
		if err != nil {
			signalGroup(pgid, syscall.SIGKILL)
			r.reap(cmd)
			return Output{ExitCode: -1, PID: pgid}, fmt.Errorf("run command: %w; not running it unrecorded, check that %s is writable", err, r.opts.Registry.Dir())
		}
	}

	stdout := newCapture(r.opts.MaxCapture)
	stderr := newCapture(r.opts.MaxCapture)
	var readers sync.WaitGroup
	readers.Go(func() { io.Copy(stdout, outR) })
	readers.Go(func() { io.Copy(stderr, errR) })
	if inW != nil {
		// Run closes inW once the leader has exited, which also ends a
		// write the command never reads.
		readers.Go(func() {
			io.WriteString(inW, c.Stdin)
			inW.Close()
		})
	}

	exited := make(chan error, 1)
	go func() {
		_, err := waitLeader(cmd)
		exited <- err
	}()
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		out.Cancelled = true
		waitErr = r.stop(pgid, exited)
	case <-timeout:
		out.TimedOut = true
		waitErr = r.stop(pgid, exited)
	}
	// The leader is gone but not reaped, so the group id is still ours:
	// end whatever it left running.
	_, killErr := signalGroup(pgid, syscall.SIGKILL)
	out.Duration = time.Since(start)
	r.reap(cmd)
	if record != "" {
		r.opts.Registry.remove(record)
	}
	if inW != nil {
		inW.Close()
	}
	r.drain(&readers, outR, errR, stderr)

	out.ExitCode = -1
	if cmd.ProcessState != nil {
		out.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err := errors.Join(waitErr, killErr); err != nil {
		stderr.note(fmt.Sprintf("[sandbox: %v]", err))
	}
	out.Stdout = stdout.text(r.opts.Redactor)
	out.Stderr = stderr.text(r.opts.Redactor)
	return out, nil
}

// argv returns the program and arguments for c.
func (r *Runner) argv(c Cmd) (string, []string, error) {
	switch c.Confine {
	case "", ConfineNone:
		return r.shell, []string{r.shell, "-c", c.Command}, nil
	case ConfineBwrap:
		bwrap, err := r.bwrap()
		if err != nil {
			return "", nil, err
		}
		args, err := bwrapArgs(c, r.shell)
		if err != nil {
			return "", nil, fmt.Errorf("run command: %w", err)
		}
		return bwrap, append([]string{bwrap}, args...), nil
	default:
		return "", nil, fmt.Errorf("run command: unknown sandbox %q: use %q or %q", c.Confine, ConfineNone, ConfineBwrap)
	}
}

// startLocked starts cmd from a fresh goroutine locked to its OS thread, so
// the thread whose exit would fire Pdeathsig is not one the caller might
// have locked and be about to end (see the package doc).
func startLocked(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- cmd.Start()
	}()
	return <-errc
}

// recordGroup writes the group's record. The leader is not reaped yet, so
// its /proc entry exists even if it has already exited.
func (r *Runner) recordGroup(pgid int, command string) (string, error) {
	st, err := readStat(pgid)
	if err != nil {
		return "", fmt.Errorf("record process group %d: %w", pgid, err)
	}
	return r.opts.Registry.add(pgid, st, r.opts.Redactor.Redact(command))
}

// stop ends the group after a timeout or cancellation: SIGTERM, then
// SIGKILL if the leader has not exited within the grace period. It returns
// once the leader has exited.
func (r *Runner) stop(pgid int, exited <-chan error) error {
	if _, err := signalGroup(pgid, syscall.SIGTERM); err != nil {
		return err
	}
	grace := time.NewTimer(r.opts.Grace)
	defer grace.Stop()
	select {
	case err := <-exited:
		return err
	case <-grace.C:
	}
	_, err := signalGroup(pgid, syscall.SIGKILL)
	return errors.Join(err, <-exited)
}

// reap collects the leader's exit status (if waitLeader did not already).
func (r *Runner) reap(cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		cmd.Wait() // the status is read from cmd.ProcessState
	}
}

// drain waits for the output readers, which finish when every writer of the
// pipes has exited. A process that left the group can hold them open for
// ever, so after the grace period the pipes are closed and a note says so.
func (r *Runner) drain(readers *sync.WaitGroup, outR, errR *os.File, stderr *capture) {
	done := make(chan struct{})
	go func() {
		readers.Wait()
		close(done)
	}()
	t := time.NewTimer(r.opts.Grace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	outR.Close()
	errR.Close()
	<-done
	stderr.note("[sandbox: stopped reading output: a process that left the command's process group still holds it open]")
}
