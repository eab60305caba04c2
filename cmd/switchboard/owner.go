package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// leaseOwner names this process in the leases it takes:
// host:pid:pidns:random. The pid namespace (Linux: the inode of
// /proc/self/ns/pid) makes "the process with this pid on this host is gone"
// a safe judgement even when containers share a host name.
func leaseOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%s:%s", strings.ReplaceAll(host, ":", "_"), os.Getpid(), pidNamespace(), rand.Text()[:8])
}

func pidNamespace() string {
	if l, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		return strings.Trim(strings.TrimPrefix(l, "pid:"), "[]")
	}
	return "-"
}

// deadOwner reports whether owner (as leaseOwner writes it) is a process of
// this host and pid namespace that no longer exists. Anything else — another
// host, another namespace, another format, a live or unknown pid — is not
// judged dead.
func deadOwner(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 4 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != strings.ReplaceAll(host, ":", "_") || parts[2] != pidNamespace() || parts[2] == "-" {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// dropDeadLeases releases the leases of processes of this machine that
// died (SIGKILL, a crash), so a restart works their conversations at once
// instead of after the leases' 10 s expiry.
func (a *app) dropDeadLeases(ctx context.Context) {
	owners, err := a.store.LeaseOwners(ctx)
	if err != nil {
		a.log.Warn("read leases", "err", err)
		return
	}
	for _, o := range owners {
		if !deadOwner(o) {
			continue
		}
		if n, err := a.store.DropLeasesOf(ctx, o); err != nil {
			a.log.Warn("drop the leases of a dead process", "err", err)
		} else if n > 0 {
			a.log.Info("released the leases of a process that died", "leases", n)
		}
	}
}
