package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startOwner starts the test binary as an owner process that runs
// `sleep m & sleep m` through a Runner recording into dir, and waits until
// the group is recorded and both sleeps run.
func startOwner(t *testing.T, dir, m string) *exec.Cmd {
	t.Helper()
	owner := exec.Command(os.Args[0])
	owner.Env = append(os.Environ(),
		"SANDBOX_TEST_HELPER=owner",
		"SANDBOX_TEST_REGISTRY="+dir,
		"SANDBOX_TEST_COMMAND=sleep "+m+" & sleep "+m,
	)
	owner.Stderr = os.Stderr
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		owner.Process.Kill()
		owner.Wait()
	})
	eventually(t, "the owner's group is recorded and running", func() bool {
		recs, _ := filepath.Glob(filepath.Join(dir, "group-*.json"))
		return len(recs) == 1 && len(markerProcs(t, m)) == 2
	})
	return owner
}

func TestKillLeftoversCrashedOwner(t *testing.T) {
	dir := t.TempDir()
	m := marker()
	killMarker(t, m)
	owner := startOwner(t, dir, m)

	reg, err := OpenRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The owner is alive: its group is not ours to kill.
	killed, err := reg.KillLeftovers(t.Context())
	if err != nil || killed != 0 {
		t.Fatalf("owner alive: killed %d, err %v; want 0, nil", killed, err)
	}
	if n := len(markerProcs(t, m)); n != 2 {
		t.Fatalf("owner alive: %d sleeps remain, want 2", n)
	}

	// Crash the owner. Pdeathsig ends the group leader; the background
	// sleeps live on as leftovers.
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	owner.Wait()
	killed, err = reg.KillLeftovers(t.Context())
	if err != nil || killed != 1 {
		t.Fatalf("owner dead: killed %d, err %v; want 1, nil", killed, err)
	}
	assertGone(t, 0, m)
	if recs, _ := filepath.Glob(filepath.Join(dir, "group-*.json")); len(recs) != 0 {
		t.Fatalf("records left: %v", recs)
	}
	if killed, err := reg.KillLeftovers(t.Context()); err != nil || killed != 0 {
		t.Fatalf("second pass: killed %d, err %v", killed, err)
	}
}

// startGroup starts `sleep m` as the leader of its own group.
func startGroup(t *testing.T, m string) (pid int, st procStat) {
	t.Helper()
	cmd := exec.Command("sleep", m)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	st, err := readStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, st
}

func writeRecord(t *testing.T, reg *Registry, rec groupRecord) string {
	t.Helper()
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	path := reg.recordPath(rec.PGID, rec.LeaderStart)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKillLeftoversChecks(t *testing.T) {
	const deadPID = 1 << 30 // above any pid_max: never a live process
	tests := []struct {
		name       string
		rec        func(pid int, st procStat, reg *Registry) groupRecord
		wantKilled int
	}{
		{"dead owner, matching leader", func(pid int, st procStat, reg *Registry) groupRecord {
			return groupRecord{PGID: pid, LeaderStart: st.Start, Session: st.Session, OwnerPID: deadPID}
		}, 1},
		{"owner pid reused (start time differs)", func(pid int, st procStat, reg *Registry) groupRecord {
			return groupRecord{PGID: pid, LeaderStart: st.Start, Session: st.Session, OwnerPID: reg.ownerPID, OwnerStart: reg.ownerStart + 1}
		}, 1},
		{"live owner", func(pid int, st procStat, reg *Registry) groupRecord {
			return groupRecord{PGID: pid, LeaderStart: st.Start, Session: st.Session, OwnerPID: reg.ownerPID, OwnerStart: reg.ownerStart}
		}, 0},
		{"leader pid reused (start time differs)", func(pid int, st procStat, reg *Registry) groupRecord {
			return groupRecord{PGID: pid, LeaderStart: st.Start + 1, Session: st.Session, OwnerPID: deadPID}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := OpenRegistry(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			m := marker()
			pid, st := startGroup(t, m)
			rec := tt.rec(pid, st, reg)
			path := writeRecord(t, reg, rec)
			killed, err := reg.KillLeftovers(t.Context())
			if err != nil || killed != tt.wantKilled {
				t.Fatalf("killed %d, err %v; want %d", killed, err, tt.wantKilled)
			}
			if tt.wantKilled == 1 {
				eventually(t, "the group is killed", func() bool { s, err := readStat(pid); return err != nil || s.zombie() })
			} else if s, err := readStat(pid); err != nil || s.zombie() {
				t.Fatal("a group that was not provably left over was killed")
			}
			_, err = os.Stat(path)
			ownerAlive := rec.OwnerPID == reg.ownerPID && rec.OwnerStart == reg.ownerStart
			if ownerAlive != (err == nil) {
				t.Fatalf("record kept = %v, want %v", err == nil, ownerAlive)
			}
		})
	}
}

func TestKillLeftoversBadRecords(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(reg.Dir(), "group-1-1.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	pgidOne := filepath.Join(reg.Dir(), "group-2-2.json")
	os.WriteFile(pgidOne, []byte(`{"pgid":1,"owner_pid":5}`), 0o600)
	other := filepath.Join(reg.Dir(), "notes.txt")
	os.WriteFile(other, []byte("x"), 0o600)
	// A group that no longer exists: the record just goes.
	gone := writeRecord(t, reg, groupRecord{PGID: 1 << 30, LeaderStart: 5, OwnerPID: 1 << 30})

	killed, err := reg.KillLeftovers(t.Context())
	if killed != 0 || err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("killed %d, err %v; want 0 and an unreadable-record error", killed, err)
	}
	for _, p := range []string{bad, pgidOne, gone} {
		if fileExists(p) {
			t.Errorf("%s not removed", filepath.Base(p))
		}
	}
	if !fileExists(other) {
		t.Error("a file that is not a record was removed")
	}
}

func TestKillLeftoversCancelled(t *testing.T) {
	reg, err := OpenRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeRecord(t, reg, groupRecord{PGID: 1 << 30, LeaderStart: 5, OwnerPID: 1 << 30})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := reg.KillLeftovers(ctx); err == nil {
		t.Fatal("want the context's error")
	}
}

// TestKillLeftoversLeaderGone covers the usual crash: Pdeathsig killed the
// leader, which has been reaped, while a background member lives on.
func TestKillLeftoversLeaderGone(t *testing.T) {
	for _, tt := range []struct {
		name        string
		sessionSkew int
		wantKilled  int
	}{
		{"member of the recorded session", 0, 1},
		{"member of another session (not provably ours)", 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := marker()
			killMarker(t, m)
			leader := exec.Command("sh", "-c", "sleep "+m+" & exit 0")
			leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := leader.Start(); err != nil {
				t.Fatal(err)
			}
			pid := leader.Process.Pid
			st, err := readStat(pid)
			if err != nil {
				t.Fatal(err)
			}
			leader.Wait() // reaped: /proc/<pgid> is gone
			eventually(t, "the member runs", func() bool { return len(markerProcs(t, m)) == 1 })
			if _, err := readStat(pid); err == nil {
				t.Skip("the leader's pid was reused at once; nothing to test")
			}
			reg, err := OpenRegistry(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			writeRecord(t, reg, groupRecord{PGID: pid, LeaderStart: st.Start, Session: st.Session + tt.sessionSkew, OwnerPID: 1 << 30})
			killed, err := reg.KillLeftovers(t.Context())
			if err != nil || killed != tt.wantKilled {
				t.Fatalf("killed %d, err %v; want %d", killed, err, tt.wantKilled)
			}
			if tt.wantKilled == 1 {
				assertGone(t, pid, m)
			} else if len(markerProcs(t, m)) != 1 {
				t.Fatal("a member of another session was killed")
			}
		})
	}
}
