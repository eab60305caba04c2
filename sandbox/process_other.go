//go:build !linux

package sandbox

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the command in its own process group. Outside Linux there
// is no parent-death signal; the Registry (which needs /proc) is Linux-only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitLeader reaps the group leader: outside Linux there is no portable
// wait-without-reaping, so the group kill that follows has a small window
// in which the group id could be reused.
func waitLeader(cmd *exec.Cmd) (reaped bool, err error) {
	err = cmd.Wait()
	if _, ok := err.(*exec.ExitError); ok {
		err = nil
	}
	return true, err
}
