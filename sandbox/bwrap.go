package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Confinement selects how a command is confined.
type Confinement string

const (
	// ConfineNone runs the command directly on the host (the empty value
	// means the same).
	ConfineNone Confinement = "none"
	// ConfineBwrap runs the command under bubblewrap: the root file system
	// read-only, Hidden directories covered, Writable ones and a private
	// /tmp writable, its own PID namespace, and no network unless allowed.
	ConfineBwrap Confinement = "bwrap"
)

// ErrConfinementUnavailable means bubblewrap confinement was asked for but
// bwrap is missing or does not work here. The command is not run: a
// confined agent never runs unconfined.
var ErrConfinementUnavailable = errors.New(`sandbox = "bwrap" is configured but bubblewrap is not usable on this machine, so the command was not run; install bubblewrap (e.g. apt-get install bubblewrap) and make sure unprivileged user namespaces are allowed, or set sandbox = "none" for this agent`)

// bwrapTmp is where the private temp dir appears inside the sandbox.
const bwrapTmp = "/tmp"

// BwrapAvailable reports whether bubblewrap is installed and can create
// the sandbox switchboard uses (it runs a trivial command to find out).
func BwrapAvailable() bool {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return false
	}
	return probeBwrap(path, findShell()) == nil
}

// probeBwrap runs a trivial command with the namespaces Run uses.
func probeBwrap(bwrap, shell string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session",
		"--", shell, "-c", ":"}
	out, err := exec.CommandContext(ctx, bwrap, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", bwrap, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// bwrapArgs builds the bubblewrap argument list that runs shell -c
// c.Command. The order matters because bwrap applies mounts in order:
// a tmpfs over /tmp (the private temp dir), then Hidden and Writable
// directories sorted by depth, so a Writable directory inside a Hidden one
// is bound back after the tmpfs covers its parent, and a Hidden directory
// inside a Writable one is covered after the bind. When one path is both,
// Hidden wins. Hidden directories end up empty and read-only.
func bwrapArgs(c Cmd, shell string) ([]string, error) {
	args := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", bwrapTmp,
		// Its own PID namespace: when bwrap dies (group kill, or our death
		// through --die-with-parent) the kernel kills everything inside,
		// including processes that left the process group.
		"--unshare-pid",
		"--die-with-parent",
		// A new session so the command cannot push input into a terminal
		// of ours (TIOCSTI).
		"--new-session",
	}
	if !c.Network {
		args = append(args, "--unshare-net")
	}
	type mount struct {
		path   string
		hidden bool
	}
	var mounts []mount
	for _, list := range []struct {
		paths  []string
		hidden bool
	}{{c.Writable, false}, {c.Hidden, true}} {
		for _, p := range list.paths {
			if p == "" {
				continue
			}
			abs, err := resolvePath(p)
			if errors.Is(err, os.ErrNotExist) && list.hidden {
				continue // nothing there to hide
			}
			if err != nil {
				kind := "writable"
				if list.hidden {
					kind = "hidden"
				}
				return nil, fmt.Errorf("sandbox %s directory %s: %w", kind, p, err)
			}
			mounts = append(mounts, mount{abs, list.hidden})
		}
	}
	slices.SortStableFunc(mounts, func(a, b mount) int {
		if d := cmp.Compare(depth(a.path), depth(b.path)); d != 0 {
			return d
		}
		if a.hidden != b.hidden {
			if a.hidden {
				return 1 // the tmpfs goes last, so it wins
			}
			return -1
		}
		return 0
	})
	for _, m := range mounts {
		if m.hidden {
			args = append(args, "--tmpfs", m.path)
		} else {
			args = append(args, "--bind", m.path, m.path)
		}
	}
	// The covering tmpfs become read-only only now, after the mount points
	// of the directories bound back into them were created.
	for _, m := range mounts {
		if m.hidden {
			args = append(args, "--remount-ro", m.path)
		}
	}
	if c.Dir != "" {
		dir, err := filepath.Abs(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("sandbox working directory %s: %w", c.Dir, err)
		}
		args = append(args, "--chdir", dir)
	}
	args = append(args, "--setenv", "TMPDIR", bwrapTmp, "--", shell, "-c", c.Command)
	return args, nil
}

// resolvePath makes p absolute and resolves symlinks, so the mount lands on
// the directory the host path really names.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	return real, nil
}

// depth counts the elements of a clean absolute path ("/" is 0).
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
