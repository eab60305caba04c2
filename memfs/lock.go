package memfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockFileName is the flock file inside .git shared by every process that
// opens the repository.
const lockFileName = "switchboard-memfs.lock"

// lock takes the in-process lock and then the cross-process flock (shared
// for reads, exclusive for writes). The returned function releases both.
func (r *Repo) lock(ctx context.Context, exclusive bool) (func(), error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for memory repository %s: %w", r.dir, ctx.Err())
	}
	f, err := flockFile(ctx, r.lockPath, exclusive)
	if err != nil {
		<-r.sem
		return nil, err
	}
	return func() {
		f.Close() // closing the descriptor releases the flock
		<-r.sem
	}, nil
}

// flockFile opens path and flocks it, polling with a growing pause so that
// a cancelled context ends the wait (a blocking flock cannot be interrupted).
func flockFile(ctx context.Context, path string, exclusive bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open memory lock file %s: %w", path, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	pause := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock memory repository (%s): %w", path, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("wait for memory lock %s: %w", path, ctx.Err())
		}
		if pause < 50*time.Millisecond {
			pause *= 2
		}
	}
}
