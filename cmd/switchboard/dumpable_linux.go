package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// markNotDumpable makes the gateway process non-dumpable: /proc/<pid>/environ, mem, maps and
// the like become owned by root, so a tool running as the same (non-root) user cannot read the
// provider keys and bot tokens in the gateway's environment and memory, and cannot ptrace it.
// Root still can; run the gateway as an ordinary user.
func markNotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}
