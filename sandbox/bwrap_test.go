package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBwrapArgsOrder(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	home, mem, ws, wsSecret := mk("home"), mk("home/agents/a/memory"), mk("ws"), mk("ws/.secrets")
	tests := []struct {
		name     string
		cmd      Cmd
		wantSeq  [][]string // these argument groups, in this order
		wantNot  []string
		netFlags bool
	}{
		{
			name:    "writable inside hidden is bound back after the tmpfs",
			cmd:     Cmd{Writable: []string{mem}, Hidden: []string{home}},
			wantSeq: [][]string{{"--tmpfs", "/tmp"}, {"--tmpfs", home}, {"--bind", mem, mem}, {"--remount-ro", home}},
		},
		{
			name:    "hidden inside writable is covered after the bind",
			cmd:     Cmd{Writable: []string{ws}, Hidden: []string{wsSecret}},
			wantSeq: [][]string{{"--bind", ws, ws}, {"--tmpfs", wsSecret}, {"--remount-ro", wsSecret}},
		},
		{
			name:    "same path: hidden wins",
			cmd:     Cmd{Writable: []string{ws}, Hidden: []string{ws}},
			wantSeq: [][]string{{"--bind", ws, ws}, {"--tmpfs", ws}},
		},
		{
			name:    "missing hidden dir is skipped; no network",
			cmd:     Cmd{Hidden: []string{filepath.Join(root, "missing")}, Dir: ws},
			wantSeq: [][]string{{"--unshare-net"}, {"--chdir", ws}, {"--setenv", "TMPDIR", "/tmp"}, {"--", "/bin/bash", "-c", ""}},
			wantNot: []string{filepath.Join(root, "missing")},
		},
		{
			name:    "network allowed",
			cmd:     Cmd{Network: true},
			wantNot: []string{"--unshare-net"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := bwrapArgs(tt.cmd, "/bin/bash")
			if err != nil {
				t.Fatal(err)
			}
			for _, must := range []string{"--die-with-parent", "--new-session", "--unshare-pid"} {
				if !slices.Contains(args, must) {
					t.Errorf("missing %s in %q", must, args)
				}
			}
			at := 0
			for _, seq := range tt.wantSeq {
				i := indexSeq(args[at:], seq)
				if i < 0 {
					t.Fatalf("%q not found after position %d in %q", seq, at, args)
				}
				at += i + len(seq)
			}
			for _, not := range tt.wantNot {
				if slices.Contains(args, not) {
					t.Errorf("unexpected %q in %q", not, args)
				}
			}
		})
	}
	if _, err := bwrapArgs(Cmd{Writable: []string{filepath.Join(root, "nope")}}, "/bin/bash"); err == nil {
		t.Error("a missing writable directory must be an error")
	}
}

func indexSeq(args, seq []string) int {
	for i := 0; i+len(seq) <= len(args); i++ {
		if slices.Equal(args[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

func TestBwrapUnavailableFailsClosed(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap-broken")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "no-such-bwrap"), fake} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r := NewRunner(Options{BwrapPath: path})
			ran := filepath.Join(dir, "ran")
			_, err := r.Run(t.Context(), Cmd{Command: "touch " + ran, Dir: dir, Env: baseEnv(), Confine: ConfineBwrap})
			if !errors.Is(err, ErrConfinementUnavailable) {
				t.Fatalf("got %v, want ErrConfinementUnavailable", err)
			}
			if !strings.Contains(err.Error(), `sandbox = "none"`) || !strings.Contains(err.Error(), "install bubblewrap") {
				t.Errorf("error does not say what to do: %v", err)
			}
			if fileExists(ran) {
				t.Fatal("the command ran unconfined")
			}
		})
	}
}

// bwrapEnv is a tree like a switchboard home: a hidden home holding a
// config file and the agent's memory, a workspace, and an outside dir.
type bwrapEnv struct {
	home, config, mem, ws, outside string
	r                              *Runner
}

func newBwrapEnv(t *testing.T) bwrapEnv {
	requireBwrap(t)
	root := t.TempDir()
	e := bwrapEnv{
		home:    filepath.Join(root, "home"),
		mem:     filepath.Join(root, "home", "agents", "a", "memory"),
		ws:      filepath.Join(root, "ws"),
		outside: filepath.Join(root, "outside"),
		r:       NewRunner(Options{Grace: 500 * time.Millisecond}),
	}
	e.config = filepath.Join(e.home, "config.toml")
	for _, d := range []string{e.mem, e.ws, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.config, []byte("api_key = \"canary-config-secret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e bwrapEnv) run(t *testing.T, command string, network bool) Output {
	t.Helper()
	out, err := e.r.Run(t.Context(), Cmd{
		Command: command, Dir: e.ws, Env: baseEnv(), Confine: ConfineBwrap, Network: network,
		Writable: []string{e.ws, e.mem}, Hidden: []string{e.home}, Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBwrapFilesystem(t *testing.T) {
	e := newBwrapEnv(t)
	out := e.run(t, "echo ws > ws.txt && echo mem > "+e.mem+"/m.txt && echo tmp > $TMPDIR/t.txt && cat $TMPDIR/t.txt", false)
	if out.ExitCode != 0 || out.Stdout != "tmp\n" {
		t.Fatalf("writes inside the workspace failed: %+v", out)
	}
	for _, p := range []string{filepath.Join(e.ws, "ws.txt"), filepath.Join(e.mem, "m.txt")} {
		if !fileExists(p) {
			t.Errorf("%s was not written through to the host", p)
		}
	}

	for _, target := range []string{filepath.Join(e.outside, "x"), filepath.Join(e.home, "x"), "/usr/sandbox-test-x"} {
		out := e.run(t, "echo x > "+target, false)
		if out.ExitCode == 0 || fileExists(target) {
			t.Errorf("wrote outside the workspace to %s: %+v", target, out)
		}
	}

	out = e.run(t, "cat "+e.config, false)
	if strings.Contains(out.Stdout, "canary") || out.ExitCode == 0 {
		t.Fatalf("read a file in the hidden home: %+v", out)
	}
	out = e.run(t, "ls -A "+e.home, false)
	if strings.TrimSpace(out.Stdout) != "agents" {
		t.Errorf("hidden home shows %q, want only the bound-back agents dir", out.Stdout)
	}
}

func TestBwrapNetwork(t *testing.T) {
	e := newBwrapEnv(t)
	requireBash(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	connect := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)

	out := e.run(t, connect, false)
	if out.ExitCode == 0 || strings.Contains(out.Stdout, "connected") {
		t.Fatalf("network=false still reached the host's 127.0.0.1: %+v", out)
	}
	// The control: with the network allowed the same line connects, so the
	// check above can fail.
	out = e.run(t, connect, true)
	if out.ExitCode != 0 || out.Stdout != "connected\n" {
		t.Fatalf("network=true could not connect: %+v", out)
	}
	<-accepted
}

func TestBwrapKillsEverything(t *testing.T) {
	e := newBwrapEnv(t)
	m := marker()
	killMarker(t, m)
	// setsid inside the sandbox still dies: the PID namespace ends with bwrap.
	out, err := e.r.Run(t.Context(), Cmd{
		Command: "sleep " + m + " & setsid sleep " + m + " & touch ready; sleep " + m,
		Dir:     e.ws, Env: baseEnv(), Confine: ConfineBwrap, Writable: []string{e.ws},
		Timeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || !fileExists(filepath.Join(e.ws, "ready")) {
		t.Fatalf("got %+v", out)
	}
	assertGone(t, out.PID, m)
}

func BenchmarkRunTrueBwrap(b *testing.B) {
	requireBwrap(b)
	r := NewRunner(Options{})
	dir := b.TempDir()
	for _, network := range []bool{false, true} {
		b.Run(fmt.Sprintf("network=%v", network), func(b *testing.B) {
			for b.Loop() {
				out, err := r.Run(b.Context(), Cmd{Command: "true", Dir: dir, Env: baseEnv(), Confine: ConfineBwrap, Network: network, Writable: []string{dir}})
				if err != nil || out.ExitCode != 0 {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// TestBwrapOwnProc: a confined command gets its own /proc (--unshare-pid, --proc): another
// process's environment, readable without the sandbox, is not there.
func TestBwrapOwnProc(t *testing.T) {
	e := newBwrapEnv(t)
	canary := "SANDBOX_PROC_CANARY=" + marker()
	host := exec.Command("sleep", "60")
	host.Env = append(baseEnv(), canary)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
	read := fmt.Sprintf("cat /proc/%d/environ | tr '\\0' '\\n'; for p in /proc/[0-9]*; do cat $p/environ; done | tr '\\0' '\\n'", host.Process.Pid)

	// The control: unconfined, the same line reads the canary, so the check below can fail.
	out, err := e.r.Run(t.Context(), Cmd{Command: read, Dir: e.ws, Env: baseEnv(), Timeout: time.Minute})
	if err != nil || !strings.Contains(out.Stdout, canary) {
		t.Fatalf("unconfined read did not see the canary: %v %+v", err, out)
	}
	out = e.run(t, read, false)
	if strings.Contains(out.Stdout+out.Stderr, canary) {
		t.Fatalf("a confined command read another process's environment: %+v", out)
	}
	out = e.run(t, "ls /proc | grep -c '^[0-9]'", false)
	if n := strings.TrimSpace(out.Stdout); n == "" || len(n) > 1 {
		t.Errorf("the sandbox's /proc lists %q processes; want only its own few", n)
	}
}
