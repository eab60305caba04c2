package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/config"
)

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dockerfileFinalStage returns the Dockerfile's instructions of the last stage
// (the runtime image), keyword first, continuation lines joined.
func dockerfileFinalStage(t *testing.T) []string {
	t.Helper()
	var out []string
	cur := ""
	for _, l := range strings.Split(readRepoFile(t, "Dockerfile"), "\n") {
		s := strings.TrimSpace(l)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		cur += " " + strings.TrimSuffix(s, "\\")
		if strings.HasSuffix(s, "\\") {
			continue
		}
		cur = strings.TrimSpace(cur)
		if strings.HasPrefix(cur, "FROM ") {
			out = nil
		}
		out = append(out, cur)
		cur = ""
	}
	return out
}

// TestDockerfileKeepsItsData: no Docker engine here, so the image is
// checked as text: a volume at SWITCHBOARD_HOME, the listen port exposed,
// a health check through the binary, a reaper as PID 1, and the config
// whose ${VAR}s take the listen address and web token from the
// environment.
func TestDockerfileKeepsItsData(t *testing.T) {
	ins := dockerfileFinalStage(t)
	find := func(keyword string) string {
		for _, s := range ins {
			if strings.HasPrefix(s, keyword+" ") {
				return s
			}
		}
		t.Errorf("the runtime stage has no %s instruction", keyword)
		return ""
	}
	env := find("ENV")
	home := regexp.MustCompile(`SWITCHBOARD_HOME=(\S+)`).FindStringSubmatch(env)
	listen := regexp.MustCompile(`SWITCHBOARD_LISTEN=\S+:(\d+)`).FindStringSubmatch(env)
	if home == nil || listen == nil || !strings.Contains(env, "SWITCHBOARD_CONFIG=/etc/switchboard/switchboard.toml") {
		t.Fatalf("ENV = %q: want SWITCHBOARD_HOME, SWITCHBOARD_CONFIG and SWITCHBOARD_LISTEN", env)
	}
	if v := find("VOLUME"); !strings.Contains(v, `"`+home[1]+`"`) {
		t.Errorf("VOLUME %q does not hold SWITCHBOARD_HOME %s", v, home[1])
	}
	if e := find("EXPOSE"); e != "EXPOSE "+listen[1] {
		t.Errorf("%q does not expose the listen port %s", e, listen[1])
	}
	if h := find("HEALTHCHECK"); !strings.Contains(h, `CMD ["switchboard", "health"]`) {
		t.Errorf("HEALTHCHECK %q does not use switchboard health", h)
	}
	if e := find("ENTRYPOINT"); !strings.Contains(e, "tini") {
		t.Errorf("ENTRYPOINT %q has no reaper as PID 1", e)
	}
	if r := find("RUN"); !strings.Contains(r, " tini") {
		t.Errorf("tini is not installed: %q", r)
	}

	// The image's config validates with the environment docker run gives,
	// and names the missing web token when it is not given.
	cfgText := readRepoFile(t, "contrib/docker/switchboard.toml")
	work := t.TempDir()
	cfg, err := config.Parse("switchboard.toml", []byte(cfgText), work, config.MapEnv(map[string]string{
		"SWITCHBOARD_LISTEN": "0.0.0.0:" + listen[1], "SWITCHBOARD_WEB_TOKEN": "0123456789abcdef0123456789abcdef",
	}))
	if err != nil {
		t.Fatalf("the image's config does not validate: %v", err)
	}
	if cfg.HTTP.Listen != "0.0.0.0:"+listen[1] || cfg.Channels.Web.Token == "" {
		t.Errorf("listen %q, web token %q: not from the environment", cfg.HTTP.Listen, cfg.Channels.Web.Token)
	}
	if _, err := config.Parse("switchboard.toml", []byte(cfgText), work, config.MapEnv(map[string]string{"SWITCHBOARD_LISTEN": "0.0.0.0:7700"})); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_WEB_TOKEN") {
		t.Errorf("without SWITCHBOARD_WEB_TOKEN: %v, want an error naming it", err)
	}
	if ig := readRepoFile(t, ".dockerignore"); !regexp.MustCompile(`(?m)^\.git$`).MatchString(ig) {
		t.Error(".dockerignore does not keep .git out of the build context")
	}
}

// TestSystemdUnit checks the unit as text: restarts on failure only, runs
// serve as its own user with the data directory systemd creates, and
// hardening that leaves bubblewrap working.
func TestSystemdUnit(t *testing.T) {
	unit := readRepoFile(t, "contrib/switchboard.service")
	keys := map[string][]string{}
	for _, l := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(l, "#") {
			keys[k] = append(keys[k], v)
		}
	}
	for k, want := range map[string]string{
		"Restart":            "on-failure",
		"NoNewPrivileges":    "yes",
		"ProtectSystem":      "full",
		"StateDirectory":     "switchboard",
		"User":               "switchboard",
		"KillMode":           "mixed",
		"WantedBy":           "multi-user.target",
		"Environment":        "SWITCHBOARD_HOME=/var/lib/switchboard",
		"ExecStart":          "/usr/local/bin/switchboard serve --grace 10s",
		"StateDirectoryMode": "0700",
	} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s = %v, want %q", k, got, want)
		}
	}
	for _, k := range []string{"RestrictNamespaces", "ProtectKernelTunables", "ProtectProc", "MemoryDenyWriteExecute"} {
		if _, ok := keys[k]; ok {
			t.Errorf("%s is set: it breaks bubblewrap or the tools", k)
		}
	}
}
