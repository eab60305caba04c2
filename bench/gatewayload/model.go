package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// modelProc is bench/fakemodel-server -mode load running in its own
// process, so the fake's CPU and memory stay out of the measured one (it
// still shares the machine's cores).
type modelProc struct {
	cmd *exec.Cmd
	url string
}

// startModel builds the fake into dir and starts it; with a non-empty
// cpuprofile it writes a CPU profile of its whole run there.
func startModel(dir, cpuprofile string) (*modelProc, error) {
	bin := filepath.Join(dir, "fakemodel-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/switchboard-gw/switchboard/bench/fakemodel-server")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build the fake model (run inside the module): %w", err)
	}
	args := []string{"-mode", "load"}
	if cpuprofile != "" {
		args = append(args, "-cpuprofile", cpuprofile)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	// It dies with this process, however this one ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	m := &modelProc{cmd: cmd}
	select {
	case url, ok := <-lines:
		if !ok || !strings.HasPrefix(url, "http://") {
			m.close()
			return nil, fmt.Errorf("the fake model printed %q, not its URL", url)
		}
		m.url = url
	case <-time.After(30 * time.Second):
		m.close()
		return nil, fmt.Errorf("the fake model printed no URL within 30s")
	}
	return m, nil
}

func (m *modelProc) close() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}
