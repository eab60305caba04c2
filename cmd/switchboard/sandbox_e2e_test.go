package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/sandbox"
)

// needBwrap skips when bubblewrap cannot run here, except in CI, where a
// skipped confinement test would be a test that cannot fail (DESIGN §9).
func needBwrap(t *testing.T) {
	t.Helper()
	if sandbox.BwrapAvailable() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("bubblewrap is not usable, and CI=true: install it (apt-get install bubblewrap)")
	}
	t.Skip("bubblewrap is not usable here; set CI=true to make this a failure")
}

func bashTimeoutStep(id, command string, timeoutMS int) fakemodel.Step {
	args, _ := json.Marshal(map[string]any{"command": command, "timeout": timeoutMS})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}}
}

// writeSandboxConfig writes a config with two agents on the same
// workspace: "main" confined by bwrap without network, "open" not
// confined (the control that shows the probes can succeed).
func writeSandboxConfig(t *testing.T, e *env, key string) string {
	t.Helper()
	return e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
api_key = %q
model = "test-model"

[agents.main]
provider = "default"
workspace = %q
permission_mode = "unrestricted"
sandbox = "bwrap"
network = false

[agents.open]
provider = "default"
workspace = %q
permission_mode = "unrestricted"
`, e.model.URL(), key, e.workspace, e.workspace))
}

// listen opens a TCP listener on 127.0.0.1 that counts connections.
func listen(t *testing.T) (port int, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

// lastResults runs the binary and returns the tool results of the last
// request the model received, by call id.
func lastResults(t *testing.T, e *env, args ...string) map[string]string {
	t.Helper()
	r := e.run("", args...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	reqs := e.model.Requests()
	out := map[string]string{}
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		out[m.ToolCallID] = contentText(m)
	}
	return out
}

func TestBwrapConfinement(t *testing.T) {
	needBwrap(t)
	e := newEnv(t)
	key := "canary-key-" + rand.Text()
	cfgPath := writeSandboxConfig(t, e, key)
	port, accepted := listen(t)

	// A directory outside both the workspace and /tmp (which bwrap
	// replaces with a private tmpfs), writable on the host.
	outsideDir, err := os.MkdirTemp(".", "sbx-outside-")
	if err != nil {
		t.Fatal(err)
	}
	outsideDir, _ = filepath.Abs(outsideDir)
	t.Cleanup(func() { os.RemoveAll(outsideDir) })
	outside := filepath.Join(outsideDir, "escaped.txt")
	outsideTmp := filepath.Join(filepath.Dir(e.workspace), "escaped.txt")
	connect := fmt.Sprintf("if (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null; then echo CONNECTED; else echo NOCONNECT; fi", port)

	e.model.Push(fakemodel.Step{ToolCalls: []fakemodel.ToolCall{
		{ID: "call_out", Name: "Bash", Arguments: bashArgs(fmt.Sprintf("echo x > %s && echo WROTE || echo BLOCKED", outside))},
		{ID: "call_outtmp", Name: "Bash", Arguments: bashArgs(fmt.Sprintf("echo x > %s; echo done", outsideTmp))},
		{ID: "call_cfg", Name: "Bash", Arguments: bashArgs(fmt.Sprintf("cat %s && echo READ || echo NOREAD", cfgPath))},
		{ID: "call_db", Name: "Bash", Arguments: bashArgs(fmt.Sprintf("ls -A %s; test -e %s && echo DBVISIBLE || echo DBHIDDEN", e.home, filepath.Join(e.home, "switchboard.db")))},
		{ID: "call_net", Name: "Bash", Arguments: bashArgs(connect)},
		{ID: "call_in", Name: "Bash", Arguments: bashArgs("echo hello > inside.txt && echo WROTE")},
	}}, fakemodel.Step{Text: "probed"})
	res := lastResults(t, e, "run", "-p", "probe the sandbox", "--agent", "main", "--output-format", "json")

	if got := res["call_out"]; !strings.Contains(got, "BLOCKED") || strings.Contains(got, "WROTE") {
		t.Errorf("write outside the workspace: %q", got)
	}
	for _, p := range []string{outside, outsideTmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a confined command wrote %s on the host", p)
		}
	}
	if got := res["call_cfg"]; !strings.Contains(got, "NOREAD") || strings.Contains(got, "api_key") {
		t.Errorf("reading the config: %q", got)
	}
	if got := res["call_db"]; !strings.Contains(got, "DBHIDDEN") || strings.Contains(got, "switchboard.db") {
		t.Errorf("the data directory is visible: %q", got)
	}
	if got := res["call_net"]; !strings.Contains(got, "NOCONNECT") {
		t.Errorf("connect to 127.0.0.1 without network: %q", got)
	}
	if got := res["call_in"]; !strings.Contains(got, "WROTE") {
		t.Errorf("write inside the workspace: %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "inside.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("inside.txt = %q, %v", b, err)
	}

	// Control: the same probes unconfined do reach the listener and the
	// config, so the checks above can fail.
	e.model.Push(fakemodel.Step{ToolCalls: []fakemodel.ToolCall{
		{ID: "call_net_open", Name: "Bash", Arguments: bashArgs(connect)},
		{ID: "call_cfg_open", Name: "Bash", Arguments: bashArgs(fmt.Sprintf("test -r %s && echo READ || echo NOREAD", cfgPath))},
	}}, fakemodel.Step{Text: "probed"})
	open := lastResults(t, e, "run", "-p", "probe again", "--agent", "open", "--output-format", "json")
	if got := open["call_net_open"]; !strings.Contains(got, "CONNECTED") {
		t.Errorf("control: unconfined connect: %q", got)
	}
	if got := open["call_cfg_open"]; !strings.Contains(got, "READ") || strings.Contains(got, "NOREAD") {
		t.Errorf("control: unconfined read of the config: %q", got)
	}
	if accepted.Load() != 1 {
		t.Errorf("listener accepted %d connections, want 1 (the control's)", accepted.Load())
	}
}

func bashArgs(command string) string {
	b, _ := json.Marshal(map[string]string{"command": command})
	return string(b)
}

// TestBashTimeoutKillsGroup runs `sleep N & sleep N` with a short timeout,
// confined and not: the result says it timed out and no process of the
// group is left.
func TestBashTimeoutKillsGroup(t *testing.T) {
	for _, agent := range []string{"open", "main"} {
		t.Run(agent, func(t *testing.T) {
			if agent == "main" {
				needBwrap(t)
			}
			e := newEnv(t)
			writeSandboxConfig(t, e, "test-key-"+rand.Text())
			// A unique duration marks this test's processes in /proc.
			marker := fmt.Sprintf("1000.%d", os.Getpid()*1000+len(agent))
			cmd := fmt.Sprintf("sleep %s & sleep %s", marker, marker)
			e.model.Push(bashTimeoutStep("call_sleep", cmd, 1500), fakemodel.Step{Text: "it timed out"})
			res := lastResults(t, e, "run", "-p", "sleep", "--agent", agent, "--output-format", "json")
			got := res["call_sleep"]
			if !strings.Contains(got, "timed out") {
				t.Fatalf("result = %q; want a timeout", got)
			}
			// A killed process can take a moment to be gone from /proc.
			eventually(t, 10*time.Second, "no sleep "+marker+" left", func() bool {
				return len(procsWithArg("sleep", marker)) == 0
			})
		})
	}
}

// procsWithArg returns the pids of processes named name with arg among
// their arguments.
func procsWithArg(name, arg string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
		if filepath.Base(string(args[0])) != name {
			continue
		}
		for _, a := range args[1:] {
			if string(a) == arg {
				out = append(out, ent.Name())
			}
		}
	}
	return out
}
