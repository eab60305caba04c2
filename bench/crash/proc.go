package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one run of `switchboard serve` on the campaign's data directory.
type proc struct {
	n       int
	cmd     *exec.Cmd
	logPath string
	start   time.Time
	// startTicks is the process's start time in clock ticks since boot
	// (field 22 of /proc/PID/stat), to tell its tools from older ones.
	startTicks uint64

	addr   chan string   // the listen address, once printed
	exited chan struct{} // closed when the process has exited
	err    error         // the exit status, once exited
}

// startProc starts the binary with env in dir and writes its stderr to
// logPath.
func startProc(n int, bin, dir, logPath string, env []string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--grace", "2s")
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = pw
	cmd.Stderr = pw
	// The campaign dying must not leave a server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{n: n, cmd: cmd, logPath: logPath, addr: make(chan string, 1), exited: make(chan struct{})}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	pw.Close()
	if st, err := readStat(cmd.Process.Pid); err == nil {
		p.startTicks = st.start
	}
	// The reader ends when every holder of the pipe is gone: the server
	// and any tool process that inherited it.
	go func() {
		defer pr.Close()
		defer logf.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if _, rest, ok := strings.Cut(line, "serving on http://"); ok && !sent {
				a, _, _ := strings.Cut(rest, " ")
				p.addr <- a
				sent = true
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitReady waits until GET /readyz answers 200 and returns when that was.
// It fails when the process exits first or ctx ends.
func (p *proc) waitReady(ctx context.Context) (time.Time, error) {
	var addr string
	select {
	case addr = <-p.addr:
	case <-p.exited:
		return time.Time{}, fmt.Errorf("exited before listening: %v", p.err)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-p.exited:
			return time.Time{}, fmt.Errorf("exited before ready: %v", p.err)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// kill sends SIGKILL to the server (not to its tools: those die with it,
// or are left for the next start to kill) and waits for it to exit.
func (p *proc) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("process %d did not exit 30s after SIGKILL", p.pid())
	}
}

// stop sends SIGTERM and waits up to d; it reports whether the process
// exited by itself in time (else it is killed).
func (p *proc) stop(d time.Duration) (clean bool) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		_ = p.kill()
		return false
	}
}

// done reports whether the process has exited.
func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// logTail returns the last n lines the process printed.
func (p *proc) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procStat is what the campaign reads of /proc/PID/stat.
type procStat struct {
	state byte
	pgid  int
	start uint64
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may contain anything.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{state: f[0][0], pgid: pgid, start: start}, nil
}

// workspaceProc is a live process working in the campaign's workspace.
type workspaceProc struct {
	pid     int
	pgid    int
	start   uint64
	cmdline string
}

// workspaceProcs lists the live, non-zombie processes whose working
// directory is ws or below it, except the pids in skip.
func workspaceProcs(ws string, skip ...int) []workspaceProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []workspaceProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || slices.Contains(skip, pid) {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != ws && !strings.HasPrefix(cwd, ws+"/")) {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, workspaceProc{pid: pid, pgid: st.pgid, start: st.start, cmdline: strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))})
	}
	return out
}

// leftovers returns the processes in ws that started before the server p
// (so a crashed run left them) and are still alive after a short grace,
// which covers a SIGKILL the new server sent an instant ago.
func leftovers(ws string, p *proc) []workspaceProc {
	var old []workspaceProc
	for _, w := range workspaceProcs(ws, p.pid()) {
		if p.startTicks == 0 || w.start < p.startTicks {
			old = append(old, w)
		}
	}
	if len(old) == 0 {
		return nil
	}
	time.Sleep(500 * time.Millisecond)
	var still []workspaceProc
	for _, w := range old {
		if st, err := readStat(w.pid); err == nil && st.start == w.start && st.state != 'Z' && st.state != 'X' {
			still = append(still, w)
		}
	}
	return still
}
