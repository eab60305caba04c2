package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchboard-gw/switchboard/config"
)

// checkConfig loads the config; a nil config means it does not load.
func checkConfig(paths config.Paths, env config.Env) (*config.Config, checkResult) {
	r := checkResult{Check: "config"}
	cfg, err := config.Load(paths, env)
	if err == nil {
		err = validateRules(cfg)
	}
	if err != nil {
		r.Status = statusFail
		var es config.Errors
		if errors.As(err, &es) && len(es) > 1 {
			r.Message = fmt.Sprintf("%s (and %s: `switchboard config validate` lists them all)", es[0], plural(len(es)-1, "more problem", "more problems"))
		} else {
			r.Message = err.Error()
		}
		return nil, r
	}
	var channels []string
	if cfg.Channels.Web.Enabled {
		channels = append(channels, "web")
	}
	for _, ch := range chatChannels() {
		if ch.name != "web" && ch.enabled(cfg) {
			channels = append(channels, ch.name)
		}
	}
	what := fmt.Sprintf("agents %s; channels %s", strings.Join(agentNames(cfg), ", "), orDash(strings.Join(channels, ", ")))
	r.Status = statusOK
	if paths.ConfigFile == "" {
		r.Message = fmt.Sprintf("no config file, built-in defaults (%s)", what)
		r.Fix = "`switchboard init` writes one"
		return cfg, r
	}
	r.Message = fmt.Sprintf("%s is valid (%s)", paths.ConfigFile, what)
	if fi, err := os.Stat(paths.ConfigFile); err == nil && fi.Mode().Perm()&0o004 != 0 {
		r.Status = statusWarn
		r.Message = fmt.Sprintf("%s is valid, but every user can read it (mode %04o)", paths.ConfigFile, fi.Mode().Perm())
		r.Fix = fmt.Sprintf("chmod 600 %s (it may hold tokens)", paths.ConfigFile)
	}
	return cfg, r
}

// minFreeBytes is the free space below which doctor warns.
const minFreeBytes = 200 << 20

// checkDataDir checks that the data directory can be written and that
// other users cannot read it: it holds every transcript.
func checkDataDir(home string) checkResult {
	r := checkResult{Check: "data"}
	fi, err := os.Stat(home)
	if errors.Is(err, fs.ErrNotExist) {
		parent := filepath.Dir(home)
		for {
			if _, err := os.Stat(parent); err == nil || parent == filepath.Dir(parent) {
				break
			}
			parent = filepath.Dir(parent)
		}
		if err := writable(parent); err != nil {
			r.Status = statusFail
			r.Message = fmt.Sprintf("%s does not exist and cannot be created (%s is not writable)", home, parent)
			r.Fix = fmt.Sprintf("create it (mkdir -m 700 -p %s) as the user that runs switchboard, or set SWITCHBOARD_HOME", home)
			return r
		}
		r.Status = statusOK
		r.Message = fmt.Sprintf("%s does not exist yet; the first command that needs it creates it (mode 0700)", home)
		return r
	}
	if err != nil {
		r.Status, r.Message = statusFail, fmt.Sprintf("cannot read %s: %v", home, err)
		r.Fix = "set SWITCHBOARD_HOME to a directory you own"
		return r
	}
	if !fi.IsDir() {
		r.Status, r.Message = statusFail, fmt.Sprintf("%s is not a directory", home)
		r.Fix = "remove it or set SWITCHBOARD_HOME to a directory"
		return r
	}
	if err := writable(home); err != nil {
		r.Status, r.Message = statusFail, fmt.Sprintf("%s is not writable: %v", home, err)
		r.Fix = fmt.Sprintf("chown it to the user that runs switchboard (chown -R $(id -un) %s), or set SWITCHBOARD_HOME", home)
		return r
	}
	perm := fi.Mode().Perm()
	if perm&0o007 != 0 {
		r.Status = statusFail
		r.Message = fmt.Sprintf("%s is open to every user (mode %04o); it holds the transcripts and the database", home, perm)
		r.Fix = fmt.Sprintf("chmod 700 %s", home)
		return r
	}
	db := filepath.Join(home, dbFileName)
	if dfi, err := os.Stat(db); err == nil && dfi.Mode().Perm()&0o077 != 0 {
		r.Status = statusFail
		r.Message = fmt.Sprintf("%s is readable by other users (mode %04o)", db, dfi.Mode().Perm())
		r.Fix = fmt.Sprintf("chmod 600 %s %s-wal %s-shm", db, db, db)
		return r
	}
	if perm&0o070 != 0 {
		r.Status = statusWarn
		r.Message = fmt.Sprintf("%s is open to its group (mode %04o)", home, perm)
		r.Fix = fmt.Sprintf("chmod 700 %s, unless the group is meant to read transcripts", home)
		return r
	}
	var st unix.Statfs_t
	if err := unix.Statfs(home, &st); err == nil {
		if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFreeBytes {
			r.Status = statusWarn
			r.Message = fmt.Sprintf("%s has only %d MB free", home, free>>20)
			r.Fix = "free some space: the database stops taking messages when the disk is full"
			return r
		}
	}
	r.Status = statusOK
	r.Message = fmt.Sprintf("%s is writable and private (mode %04o)", home, perm)
	return r
}

// writable tries to create a file in dir.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".switchboard-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkSandbox checks bubblewrap for the agents that ask for it.
func (d *doctor) checkSandbox(cfg *config.Config) []checkResult {
	var agents []string
	for _, name := range agentNames(cfg) {
		if cfg.Agents[name].Sandbox == config.SandboxBwrap {
			agents = append(agents, name)
		}
	}
	if len(agents) == 0 {
		return nil
	}
	who, use := "agent "+joinAnd(agents), "uses"
	if len(agents) > 1 {
		who, use = "agents "+joinAnd(agents), "use"
	}
	r := checkResult{Check: "sandbox"}
	path, err := d.lookPath("bwrap")
	switch {
	case err != nil:
		r.Status = statusFail
		r.Message = fmt.Sprintf(`%s %s sandbox = "bwrap", but bubblewrap (bwrap) is not installed, so its tools will not run`, who, use)
		r.Fix = `install it (apt-get install bubblewrap), or set sandbox = "none"`
	case !d.bwrapWorks():
		r.Status = statusFail
		r.Message = fmt.Sprintf("%s cannot create the sandbox %s needs", path, who)
		r.Fix = `allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; in a container, run it with --security-opt seccomp=unconfined or without the sandbox), or set sandbox = "none"`
	default:
		r.Status = statusOK
		r.Message = fmt.Sprintf("bubblewrap at %s works (for %s)", path, who)
	}
	return []checkResult{r}
}

func (d *doctor) checkRipgrep() checkResult {
	path, err := d.lookPath("rg")
	if err != nil {
		return checkResult{Check: "ripgrep", Status: statusWarn,
			Message: "ripgrep (rg) is not installed, so the Grep tool uses its slower built-in search",
			Fix:     "install it for faster searches (apt-get install ripgrep)"}
	}
	return checkResult{Check: "ripgrep", Status: statusOK, Message: "rg at " + path + " serves the Grep tool"}
}

// checkListen checks that serve can listen on addr, or that a switchboard
// already does.
func (d *doctor) checkListen(ctx context.Context, addr string) checkResult {
	r := checkResult{Check: "listen"}
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		r.Status, r.Message = statusOK, addr+": serve picks a free port at start"
		return r
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		r.Status, r.Message = statusOK, addr+" is free for serve"
		return r
	}
	r.Status = statusFail
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		if checkHealth(ctx, healthURL(addr), 2*time.Second) == nil {
			r.Status = statusOK
			r.Message = addr + " is held by a running switchboard serve (GET /healthz answers ok)"
			return r
		}
		r.Message = addr + " is in use by another program"
		r.Fix = "stop it, or set [http] listen to a free address (e.g. 127.0.0.1:7701)"
	case errors.Is(err, syscall.EACCES):
		r.Message = "no permission to listen on " + addr + " (ports below 1024 need privileges)"
		r.Fix = "use a port above 1024 in [http] listen, e.g. 127.0.0.1:7700"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		r.Message = addr + " is not an address of this machine"
		r.Fix = "set [http] listen to 127.0.0.1:PORT (this machine only) or 0.0.0.0:PORT (every interface)"
	default:
		r.Message = fmt.Sprintf("cannot listen on %s: %v", addr, err)
		r.Fix = "set [http] listen to a free address"
	}
	return r
}
