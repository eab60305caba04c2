package main

import (
	"encoding/json"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	stamped := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/switchboard-gw/switchboard", Version: "v0.4.0"},
			Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0767515abcdef0123456789abcdef0123456789"},
				{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, true
	}
	for _, tc := range []struct {
		name      string
		ld, built string
		read      func() (*debug.BuildInfo, bool)
		want      []string
		notWant   []string
	}{
		{"stamped build", "dev", "", stamped,
			[]string{"switchboard v0.4.0 (revision 0767515abcdef0123456789abcdef0123456789, modified, committed 2026-11-30T10:00:00Z)", "go1.26.8"},
			[]string{"built"}},
		{"ldflags version wins", "v1.2.3", "2026-12-01T00:00:00Z", stamped,
			[]string{"switchboard v1.2.3 (revision 0767515", ", built 2026-12-01T00:00:00Z"}, nil},
		{"no build info", "dev", "", func() (*debug.BuildInfo, bool) { return nil, false },
			[]string{"switchboard dev\n"}, []string{"revision"}},
		{"clean checkout", "dev", "", func() (*debug.BuildInfo, bool) {
			bi, _ := stamped()
			bi.Main.Version = "(devel)"
			bi.Settings[3].Value = "false"
			return bi, true
		}, []string{"switchboard (devel) (revision 0767515abcdef0123456789abcdef0123456789, committed"}, []string{"modified"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuildInfo(tc.ld, tc.built, tc.read).String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("version output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("version output has %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestVersionMatchesTheBinary: what `switchboard version --json` says is
// what the toolchain stamped into the binary (go version -m).
func TestVersionMatchesTheBinary(t *testing.T) {
	e := newEnv(t)
	r := e.run("", "version", "--json")
	var b buildInfo
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil || r.code != 0 {
		t.Fatalf("version --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if b.Module != "github.com/switchboard-gw/switchboard" || b.Version == "" || b.Go == "" {
		t.Errorf("version --json = %+v", b)
	}
	out, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	rev := ""
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if b.Revision != rev {
		t.Errorf("version says revision %q, the binary carries %q", b.Revision, rev)
	}
	if text := e.run("", "version"); rev != "" && !strings.Contains(text.stdout, rev) {
		t.Errorf("version does not print the revision %s:\n%s", rev, text.stdout)
	}
}
