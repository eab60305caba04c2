package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type resultServe struct {
	ready []time.Duration
	rss   []int64 // bytes
}

// measureServe builds the real binary (from the module in the working
// directory) and starts `serve` runs times, each on a fresh data directory
// with the web channel on a free port: the time from starting the process
// to the first 200 of GET /readyz, and VmRSS after idle.
func measureServe(dir string, runs int, idle time.Duration) (resultServe, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return resultServe{}, err
	}
	bin := filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", bin, "./cmd/switchboard")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return resultServe{}, fmt.Errorf("build (run from the module root): %w", err)
	}
	var r resultServe
	for i := range runs {
		ready, rss, err := serveOnce(bin, filepath.Join(dir, "home"+strconv.Itoa(i)), idle)
		if err != nil {
			return resultServe{}, err
		}
		r.ready = append(r.ready, ready)
		r.rss = append(r.rss, rss)
	}
	return r, nil
}

func serveOnce(bin, home string, idle time.Duration) (time.Duration, int64, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, 0, err
	}
	conf := "[http]\nlisten = \"127.0.0.1:0\"\n\n[channels.web]\nenabled = true\n"
	if err := os.WriteFile(filepath.Join(home, "switchboard.toml"), []byte(conf), 0o600); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "SWITCHBOARD_HOME="+home, "SWITCHBOARD_MODEL=x")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, rest, ok := strings.Cut(line, "serving on http://"); ok {
				a, _, _ := strings.Cut(rest, " ")
				select {
				case addr <- a:
				default:
				}
			}
		}
	}()
	var a string
	select {
	case a = <-addr:
	case <-time.After(30 * time.Second):
		return 0, 0, fmt.Errorf("serve printed no address within 30s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var ready time.Duration
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = time.Since(start)
				break
			}
		}
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("/readyz did not answer 200 within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	client.CloseIdleConnections()
	time.Sleep(idle)
	rss, err := vmRSS(cmd.Process.Pid)
	return ready, rss, err
}
