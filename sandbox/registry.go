package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Registry records running process groups durably in a directory, one
// small JSON file per group, so that groups left over from a crashed
// process can be killed at the next start. Several processes may share the
// directory: a group is left over only when its owner process is gone (its
// pid is dead, or alive with a different start time, which is PID reuse).
// A Registry is safe for concurrent use.
type Registry struct {
	dir        string
	ownerPID   int
	ownerStart uint64
}

// groupRecord is the JSON stored for one running group.
type groupRecord struct {
	PGID int `json:"pgid"`
	// LeaderStart is field 22 of /proc/<pgid>/stat at start: a group is
	// only killed while its leader (or, once the leader is gone, members of
	// the same session that started no earlier) can be matched to it.
	LeaderStart uint64    `json:"leader_start"`
	Session     int       `json:"session"`
	OwnerPID    int       `json:"owner_pid"`
	OwnerStart  uint64    `json:"owner_start"`
	Command     string    `json:"command"`
	Started     time.Time `json:"started"`
}

// OpenRegistry opens (creating it with mode 0700 if needed) the registry
// directory dir for the calling process.
func OpenRegistry(dir string) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open process registry %s: %w", dir, err)
	}
	pid := os.Getpid()
	st, err := readStat(pid)
	if err != nil {
		return nil, fmt.Errorf("open process registry %s: this process's start time: %w", dir, err)
	}
	return &Registry{dir: dir, ownerPID: pid, ownerStart: st.Start}, nil
}

// Dir returns the registry's directory.
func (g *Registry) Dir() string { return g.dir }

func (g *Registry) recordPath(pgid int, leaderStart uint64) string {
	return filepath.Join(g.dir, fmt.Sprintf("group-%d-%d.json", pgid, leaderStart))
}

// add records a running group. command should already be redacted.
func (g *Registry) add(pgid int, leader procStat, command string) (string, error) {
	if len(command) > 512 {
		command = command[:512]
		for !utf8.ValidString(command) {
			command = command[:len(command)-1]
		}
	}
	rec := groupRecord{
		PGID: pgid, LeaderStart: leader.Start, Session: leader.Session,
		OwnerPID: g.ownerPID, OwnerStart: g.ownerStart,
		Command: command, Started: time.Now().UTC(),
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return "", fmt.Errorf("record process group %d: %w", pgid, err)
	}
	path := g.recordPath(pgid, leader.Start)
	f, err := os.CreateTemp(g.dir, ".group-*.tmp")
	if err != nil {
		return "", fmt.Errorf("record process group %d: %w", pgid, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("record process group %d: %w", pgid, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("record process group %d: %w", pgid, err)
	}
	return path, nil
}

// remove deletes a record written by add.
func (g *Registry) remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove process group record: %w", err)
	}
	return nil
}

// KillLeftovers sends SIGKILL to every recorded group whose owner process
// is gone and that can still be matched to the recorded group (the leader's
// start time, or when the leader has exited, live members of the recorded
// session that started no earlier than it), then removes those records.
// Records of groups that no longer exist are removed too; records owned by
// live processes (this one included) are left alone. Unreadable records are
// removed and reported in err after the others were handled.
func (g *Registry) KillLeftovers(ctx context.Context) (killed int, err error) {
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		return 0, fmt.Errorf("kill leftover process groups: list %s: %w", g.dir, err)
	}
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return killed, fmt.Errorf("kill leftover process groups: %w", err)
		}
		name := e.Name()
		if !strings.HasPrefix(name, "group-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(g.dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // its owner finished meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", path, err))
			continue
		}
		var rec groupRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.PGID <= 1 || rec.OwnerPID <= 0 {
			// Nothing in it can be trusted enough to send a signal.
			errs = append(errs, fmt.Errorf("record %s is unreadable (removed it; any group it named was not killed)", path))
			errs = append(errs, g.remove(path))
			continue
		}
		if processAlive(rec.OwnerPID, rec.OwnerStart) {
			continue
		}
		k, err := killRecordedGroup(rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if k {
			killed++
		}
		errs = append(errs, g.remove(path))
	}
	if err := errors.Join(errs...); err != nil {
		return killed, fmt.Errorf("kill leftover process groups in %s: %w", g.dir, err)
	}
	return killed, nil
}

// processAlive reports whether pid is a live (non-zombie) process that
// started at start.
func processAlive(pid int, start uint64) bool {
	st, err := readStat(pid)
	return err == nil && !st.zombie() && st.Start == start
}

// killRecordedGroup kills the group of rec if it can be matched to the
// group that was recorded. It reports whether a signal was sent.
func killRecordedGroup(rec groupRecord) (bool, error) {
	leader, err := readStat(rec.PGID)
	switch {
	case err == nil && leader.Start == rec.LeaderStart && leader.Pgrp == rec.PGID:
		// The leader itself (perhaps a zombie, which still holds the id).
		return signalGroup(rec.PGID, syscall.SIGKILL)
	case err == nil:
		// The pid belongs to another process now. Linux does not reuse a
		// pid while a group of that id exists, so the recorded group is
		// gone entirely.
		return false, nil
	case !errors.Is(err, errNoProcess):
		return false, fmt.Errorf("group %d: %w", rec.PGID, err)
	}
	// The leader has exited (Pdeathsig kills it with its owner) but members
	// such as `sleep 1000 &` may live on. While any member lives the id
	// cannot be reused, so members that belong to the recorded session and
	// started no earlier than the recorded leader are the recorded group.
	pids, stats, err := groupMembers(rec.PGID)
	if err != nil {
		return false, fmt.Errorf("group %d: %w", rec.PGID, err)
	}
	if len(pids) == 0 {
		return false, nil
	}
	for _, st := range stats {
		if st.Session != rec.Session || st.Start < rec.LeaderStart {
			return false, nil // not provably ours: leave it
		}
	}
	return signalGroup(rec.PGID, syscall.SIGKILL)
}

// signalGroup sends sig to every process of group pgid. A group that no
// longer exists is not an error; it reports whether the signal was sent.
func signalGroup(pgid int, sig syscall.Signal) (bool, error) {
	if pgid <= 1 {
		return false, fmt.Errorf("refusing to signal process group %d", pgid)
	}
	switch err := syscall.Kill(-pgid, sig); {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.ESRCH):
		return false, nil
	default:
		return false, fmt.Errorf("signal process group %d: %w", pgid, err)
	}
}
