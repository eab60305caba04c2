package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the command in its own process group and has the kernel
// kill it when the forking thread (see the package doc) or process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitLeader blocks until the group leader has exited, without reaping it:
// while it is an unreaped zombie its pid, and so the group id, cannot be
// reused, which makes the group kill that follows safe. It reports whether
// it reaped the process (never, on Linux).
func waitLeader(cmd *exec.Cmd) (reaped bool, err error) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("wait for pid %d: %w", cmd.Process.Pid, err)
		}
		return false, nil
	}
}
