//go:build linux

package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-gw/switchboard/internal/fakemodel"
)

// needTool skips when a system tool is missing, and fails under CI=true.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed, and CI=true: .ci/run must install it", name)
	}
	t.Skipf("%s is not installed", name)
}

// permWorld is a workspace that is a git repository, with the files the attacks need, a
// directory outside it reached through symlinks, and another agent's memory.
type permWorld struct {
	e                        *env
	outside, otherMem        string
	outsideCanary, memCanary string
	gitConfig                []byte
}

func newPermWorld(t *testing.T, steps ...fakemodel.Step) *permWorld {
	t.Helper()
	needTool(t, "git")
	w := &permWorld{e: newEnv(t, steps...), outsideCanary: "OUTSIDE-" + rand.Text(), memCanary: "MEMORY-" + rand.Text()}
	ws := w.e.workspace
	root := filepath.Dir(ws)
	w.outside = filepath.Join(root, "outside")
	w.otherMem = filepath.Join(w.e.home, "memory", "other")
	for _, d := range []string{filepath.Join(w.outside, "dir"), w.otherMem} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Input for sort that runs as a shell script if sort hands it to sh as a compressor.
	script := strings.Repeat("touch "+filepath.Join(ws, "marker-sort")+"; exit\n", 5000)
	files := map[string]string{
		filepath.Join(ws, "README.md"):               "hello\n",
		filepath.Join(ws, "lines.txt"):               script,
		filepath.Join(ws, "evil-config.txt"):         "[core]\nfsmonitor = touch " + filepath.Join(ws, "marker-git") + "; echo\n",
		filepath.Join(w.outside, "secret.txt"):       w.outsideCanary + "\n",
		filepath.Join(w.outside, "dir", "inner.txt"): w.outsideCanary + "\n",
		filepath.Join(w.otherMem, "notes.md"):        w.memCanary + "\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(ws, "link"):   filepath.Join(w.outside, "dir"),
		filepath.Join(ws, "deref"):  w.outside,
		filepath.Join(ws, "membak"): w.otherMem,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", ws)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	var err error
	if w.gitConfig, err = os.ReadFile(filepath.Join(ws, ".git", "config")); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *permWorld) config(mode string) {
	w.e.writeConfig(fmt.Sprintf(`[providers.default]
base_url = %q
api_key = "key-%s"
model = "test-model"

[agents.main]
provider = "default"
workspace = %q
permission_mode = %q
`, w.e.model.URL(), rand.Text(), w.e.workspace, mode))
}

// results maps tool call ids to what the model was told.
func (w *permWorld) results(t *testing.T) map[string]string {
	t.Helper()
	reqs := w.e.model.Requests()
	out := map[string]string{}
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		out[m.ToolCallID] = contentText(m)
	}
	return out
}

// noCanary checks that none of the strings (nor their reversals) appears in the run's output,
// in what the model was sent, or in any file under the data directory except skip.
func noCanary(t *testing.T, e *env, r result, skip string, canaries ...string) {
	t.Helper()
	var all []string
	for _, c := range canaries {
		all = append(all, c, reverse(c))
	}
	leak := func(where string, b []byte) {
		t.Helper()
		for _, c := range all {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("canary %.14s… found in %s", c, where)
			}
		}
	}
	leak("stdout", []byte(r.stdout))
	leak("stderr", []byte(r.stderr))
	for i, req := range e.model.Requests() {
		leak(fmt.Sprintf("model request %d", i), req.Raw)
	}
	err := filepath.WalkDir(e.home, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == skip {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		leak(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// TestPermissionAttacksRunNothing drives the binary in standard mode with no allow rules and
// text input, where every ask becomes a denial: the attacks of issue 9 and their variants run
// nothing, read nothing outside the workspace, and never reach another agent's memory.
func TestPermissionAttacksRunNothing(t *testing.T) {
	memNotes := "memory/other/notes.md"
	attacks := []struct{ id, cmd string }{
		{"sort_compress", "sort --compress-prog=sh -S 100K lines.txt > /dev/null"},
		{"sort_compress_full", "sort --compress-program=sh -S 100K lines.txt > /dev/null"},
		{"sort_compress_sep", "sort --compress-p sh -S 100K lines.txt > /dev/null"},
		{"sort_out", "sort --out=.git/config evil-config.txt"},
		{"sort_out_sep", "sort --outp .git/config evil-config.txt"},
		{"sort_o", "sort -o .git/config evil-config.txt"},
		{"sort_bundled_o", "sort -uo .git/config evil-config.txt"},
		{"glob_dotdot", "cat l*/../secret.txt"},
		{"glob_dotdot_star", "cat */../secret.txt"},
		{"link_dotdot", "cat link/../secret.txt"},
		{"grep_R", "grep -R OUTSIDE ."},
		{"grep_deref", "grep --dereference-recursive OUTSIDE ."},
		{"grep_deref_abbrev", "grep --dereference-r OUTSIDE ."},
		{"grep_deref_short", "grep --deref OUTSIDE deref"},
		{"grep_Rn", "grep -nR OUTSIDE ."},
		{"rg_follow", "rg -L OUTSIDE ."},
		{"mem_abs", "cat $HOME/home/" + memNotes},
		{"mem_glob", "cat ~/home/memory/*/notes.md"},
		{"mem_link", "cat membak/notes.md"},
		{"mem_glob_link", "cat memb*/notes.md"},
		{"mem_cd", "cd membak && cat notes.md"},
		{"mem_link_dotdot", "cat link/../../home/" + memNotes},
		{"mem_glob_dotdot", "cat l*/../../home/" + memNotes},
	}
	var steps []fakemodel.Step
	for _, a := range attacks {
		steps = append(steps, bashStep(a.id, a.cmd))
	}
	steps = append(steps,
		bashStep("git_status", "git status"),
		bashStep("grep_r", "grep -r OUTSIDE . ; echo grep-ran"),
		readStep("mem_read", "membak/notes.md"),
		fakemodel.Step{Text: "done"},
	)
	w := newPermWorld(t, steps...)
	w.config("standard")
	r := w.e.run("", "run", "-p", "try everything")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	ws := w.e.workspace
	for _, m := range []string{"marker-sort", "marker-git"} {
		if _, err := os.Stat(filepath.Join(ws, m)); err == nil {
			t.Errorf("%s exists: an attack ran a command", m)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); !bytes.Equal(b, w.gitConfig) {
		t.Errorf(".git/config changed:\n%s", b)
	}
	res := w.results(t)
	for _, a := range attacks {
		if got := res[a.id]; !strings.Contains(got, "Permission denied") {
			t.Errorf("%s (%s) was not denied: %.300q", a.id, a.cmd, got)
		}
	}
	if got := res["mem_read"]; !strings.Contains(got, "another agent's memory") {
		t.Errorf("Read of another agent's memory: %.300q", got)
	}
	// The controls: the read-only commands still run.
	if got := res["git_status"]; strings.Contains(got, "Permission denied") || !strings.Contains(got, "branch") {
		t.Errorf("git status did not run: %.300q", got)
	}
	if got := res["grep_r"]; !strings.Contains(got, "grep-ran") {
		t.Errorf("grep -r did not run: %.300q", got)
	}
	noCanary(t, w.e, r, filepath.Join(w.otherMem, "notes.md"), w.outsideCanary, w.memCanary)
	validTranscript(t, w.e.transcript())
}

// TestPermissionAttacksControl runs two of the attacks in unrestricted mode, where nothing
// stops them, to show that the markers above would appear if the attacks ran.
func TestPermissionAttacksControl(t *testing.T) {
	w := newPermWorld(t,
		bashStep("sort_compress", "sort --compress-prog=sh -S 100K lines.txt > /dev/null; true"),
		bashStep("sort_out", "sort --out=.git/config evil-config.txt"),
		bashStep("git_status", "git status"),
		fakemodel.Step{Text: "done"},
	)
	w.config("unrestricted")
	r := w.e.run("", "run", "-p", "try everything")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, m := range []string{"marker-sort", "marker-git"} {
		if _, err := os.Stat(filepath.Join(w.e.workspace, m)); err != nil {
			t.Errorf("%s is missing: the attack does not work, so the test above proves nothing (%v)", m, err)
		}
	}
}

// TestOtherMemoryEveryMode: another agent's memory is denied in every mode, also unrestricted.
func TestOtherMemoryEveryMode(t *testing.T) {
	cmds := []string{
		"cat ~/home/memory/other/notes.md", "cat memb*/notes.md", "cd membak && cat notes.md",
		"cat l*/../../home/memory/other/notes.md", "ls -R ~/home/memory", "cp membak/notes.md x.md",
	}
	var steps []fakemodel.Step
	for i, c := range cmds {
		steps = append(steps, bashStep(fmt.Sprintf("c%d", i), c))
	}
	steps = append(steps, readStep("read", "membak/notes.md"), fakemodel.Step{Text: "done"})
	w := newPermWorld(t, steps...)
	w.config("unrestricted")
	r := w.e.run("", "run", "-p", "read the other agent")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	res := w.results(t)
	for i, c := range cmds {
		if got := res[fmt.Sprintf("c%d", i)]; !strings.Contains(got, "another agent's memory") {
			t.Errorf("%s: %.300q", c, got)
		}
	}
	if _, err := os.Stat(filepath.Join(w.e.workspace, "x.md")); err == nil {
		t.Error("cp copied another agent's memory")
	}
	noCanary(t, w.e, r, filepath.Join(w.otherMem, "notes.md"), w.memCanary)
}

// procReads are the tool calls that try the gateway's environment through /proc.
func procReads() []fakemodel.Step {
	return []fakemodel.Step{
		bashStep("ppid", "cat /proc/$PPID/environ"),
		bashStep("ppid_rev", "perl -0777 -pe '$_ = reverse' /proc/$PPID/environ"),
		bashStep("all", "for p in /proc/[0-9]*; do cat $p/environ; done 2>&1 | perl -0777 -pe '$_ = reverse'"),
		bashStep("glob", "cat /proc/*/environ"),
		bashStep("maps", "grep -m1 heap /proc/$PPID/maps"),
		readStep("read_self", "/proc/self/environ"),
		readStep("read_fd", "/dev/stdin"),
		bashStep("own", "tr '\\0' '\\n' < /proc/$$/environ | grep -c '^PATH='"),
	}
}

// TestGatewayEnvironStandard: in standard mode the policy refuses every read of /proc.
func TestGatewayEnvironStandard(t *testing.T) {
	canary := "GWCANARY" + rand.Text()
	e := newEnv(t, append(procReads(), fakemodel.Step{Text: "done"})...)
	e.extra = append(e.extra, "SWB_GATEWAY_CANARY="+canary)
	cfg := e.writeConfig(fmt.Sprintf("[providers.default]\nbase_url = %q\nmodel = \"test-model\"\n\n[agents.main]\nprovider = \"default\"\nworkspace = %q\n", e.model.URL(), e.workspace))
	r := e.run("", "run", "-p", "read the gateway")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	reqs := e.model.Requests()
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		if m.ToolCallID != "own" && !strings.Contains(contentText(m), "Permission denied") {
			t.Errorf("%s was not denied: %.300q", m.ToolCallID, contentText(m))
		}
	}
	noCanary(t, e, r, cfg, canary)
}

// TestGatewayEnvironUnprivileged: with every command allowed (unrestricted), a tool running as
// the same ordinary user as the gateway still cannot read the gateway's environment or memory:
// the gateway is non-dumpable. CI runs as root, which may read anything, so the gateway is
// started as nobody.
func TestGatewayEnvironUnprivileged(t *testing.T) {
	canary := "GWCANARY" + rand.Text()
	e := newEnv(t, append(procReads(), fakemodel.Step{Text: "done"})...)
	e.extra = append(e.extra, "SWB_GATEWAY_CANARY="+canary)
	cfg := e.writeConfig(fmt.Sprintf("[providers.default]\nbase_url = %q\nmodel = \"test-model\"\n\n[agents.main]\nprovider = \"default\"\nworkspace = %q\npermission_mode = \"unrestricted\"\n", e.model.URL(), e.workspace))
	args := []string{"run", "-p", "read the gateway"}
	bin := binPath
	if os.Geteuid() == 0 {
		needTool(t, "setpriv")
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("no user nobody to drop to: %v", err)
		}
		root := filepath.Dir(e.home)
		bin = filepath.Join(root, "switchboard")
		if err := copyFile(binPath, bin); err != nil {
			t.Fatal(err)
		}
		var uid, gid int
		fmt.Sscan(nobody.Uid, &uid)
		fmt.Sscan(nobody.Gid, &gid)
		if err := chownTree(root, uid, gid); err != nil {
			t.Fatal(err)
		}
		// t.TempDir's own parent is 0700; open it (and only it) so nobody can reach root.
		if parent := filepath.Dir(root); filepath.Dir(parent) == filepath.Clean(os.TempDir()) {
			if err := os.Chmod(parent, 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Fatalf("unexpected temp layout %s", root)
		}
		args = append([]string{"--reuid=" + nobody.Uid, "--regid=" + nobody.Gid, "--clear-groups", bin}, args...)
		bin = "setpriv"
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.workspace
	cmd.Env = e.environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	reqs := e.model.Requests()
	res := map[string]string{}
	for _, m := range toolMessages(reqs[len(reqs)-1]) {
		res[m.ToolCallID] = contentText(m)
	}
	// The control: the tool can read /proc of its own process, so the reads above were real.
	if strings.TrimSpace(res["own"]) != "1" {
		t.Fatalf("the tool could not read its own environ, so the check proves nothing: %q", res["own"])
	}
	for _, id := range []string{"ppid", "maps"} {
		if !strings.Contains(res[id], "Permission denied") {
			t.Errorf("%s: reading the gateway's /proc did not fail with EACCES: %.300q", id, res[id])
		}
	}
	for _, id := range []string{"read_self", "read_fd"} {
		if !strings.Contains(res[id], "gateway's own process") {
			t.Errorf("%s: %.300q", id, res[id])
		}
	}
	noCanary(t, e, r, cfg, canary)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return syscall.Lchown(p, uid, gid)
	})
}
