package main

import (
	"os/exec"
	"testing"
	"time"
)

// TestLeftovers: a process working in the workspace that started before
// the server is a leftover; the server itself and what it started later
// are not.
func TestLeftovers(t *testing.T) {
	ws := t.TempDir()
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Dir = ws
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	old := start()
	// Start times count in clock ticks (10 ms): let one pass so the server
	// is measurably younger.
	time.Sleep(50 * time.Millisecond)
	server := start()
	st, err := readStat(server.Process.Pid)
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	p := &proc{cmd: server, startTicks: st.start}
	time.Sleep(50 * time.Millisecond)
	start() // a tool of the current server

	left := leftovers(ws, p)
	if len(left) != 1 || left[0].pid != old.Process.Pid {
		t.Fatalf("leftovers = %+v, want only pid %d", left, old.Process.Pid)
	}
	_ = old.Process.Kill()
	_ = old.Wait()
	if left := leftovers(ws, p); len(left) != 0 {
		t.Fatalf("after the leftover died: %+v", left)
	}
}
