package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// procStat is the part of /proc/<pid>/stat the sandbox needs.
type procStat struct {
	State   byte   // field 3: R, S, D, Z, ...
	Pgrp    int    // field 5
	Session int    // field 6
	Start   uint64 // field 22: start time in clock ticks since boot
}

// zombie reports whether the process has exited and waits to be reaped.
func (p procStat) zombie() bool { return p.State == 'Z' || p.State == 'X' }

// errNoProcess means /proc has no entry for the pid.
var errNoProcess = errors.New("no such process")

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return procStat{}, errNoProcess
	}
	if err != nil {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	st, err := parseStat(data)
	if err != nil {
		return procStat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// parseStat parses the contents of a /proc/<pid>/stat file. The command
// name (field 2) is in parentheses and may itself contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat: no command name")
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3; field 22 is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed stat: too few fields")
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	session, err2 := strconv.Atoi(string(f[3]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("malformed stat: %w", err)
	}
	return procStat{State: f[0][0], Pgrp: pgrp, Session: session, Start: start}, nil
}

// groupMembers lists the live (non-zombie) processes whose process group is
// pgid, by scanning /proc.
func groupMembers(pgid int) ([]int, []procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	var stats []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.Pgrp != pgid || st.zombie() {
			continue // gone meanwhile, or not ours
		}
		pids = append(pids, pid)
		stats = append(stats, st)
	}
	return pids, stats, nil
}
