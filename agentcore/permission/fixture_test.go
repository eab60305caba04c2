package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// fixture is a real directory tree: a workspace with a symlink that leads out, a memory root
// holding this agent's memory and another agent's, a directory outside everything, and HOME
// set to the base so ~ spellings of the memory root work.
type fixture struct {
	base, ws, memRoot, mem, other, outside, overflow string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		base:     base,
		ws:       filepath.Join(base, "ws"),
		memRoot:  filepath.Join(base, "memory"),
		mem:      filepath.Join(base, "memory", "agent-a"),
		other:    filepath.Join(base, "memory", "agent-b"),
		outside:  filepath.Join(base, "outside"),
		overflow: filepath.Join(base, "overflow", "agent-a"),
	}
	for _, d := range []string{
		filepath.Join(f.ws, "src", "sub"), filepath.Join(f.ws, ".git"), f.mem, f.other, f.outside, f.overflow,
		filepath.Join(f.ws, "links"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(f.ws, "src", "main.go"):     "package main\n",
		filepath.Join(f.ws, "README.md"):          "hello\n",
		filepath.Join(f.mem, "notes.md"):          "mine\n",
		filepath.Join(f.other, "notes.md"):        "theirs\n",
		filepath.Join(f.outside, "secret.txt"):    "secret\n",
		filepath.Join(f.overflow, "out-1.txt"):    "overflow\n",
		filepath.Join(f.ws, ".git", "config"):     "[core]\n",
		filepath.Join(f.ws, "links", "plain.txt"): "plain\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(f.ws, "escape"):               f.outside,
		filepath.Join(f.ws, "escape.txt"):           filepath.Join(f.outside, "secret.txt"),
		filepath.Join(f.ws, "links", "out.txt"):     filepath.Join(f.outside, "secret.txt"),
		filepath.Join(f.ws, "membak"):               f.other,
		filepath.Join(f.ws, "dangling"):             filepath.Join(f.outside, "new.txt"),
		filepath.Join(f.ws, "src", "inner"):         filepath.Join(f.ws, "src", "sub"),
		filepath.Join(f.ws, "src", "deep"):          filepath.Join(f.ws, "src", "sub"),
		filepath.Join(f.ws, "loop"):                 filepath.Join(f.ws, "loop"),
		filepath.Join(f.ws, "src", "sub", "up2out"): "../../../outside",
	}
	for l, target := range links {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", base)
	return f
}

func (f *fixture) policy(mode Mode) *Policy {
	return &Policy{
		Mode:         mode,
		Workspace:    f.ws,
		MemoryDir:    f.mem,
		MemoryRoot:   f.memRoot,
		ReadOnlyDirs: []string{f.overflow},
	}
}

func call(tool string, kv ...string) Call {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return Call{Tool: tool, Args: b}
}

func bash(cmd string) Call     { return call("Bash", "command", cmd) }
func read(p string) Call       { return call("Read", "file_path", p) }
func write(p string) Call      { return call("Write", "file_path", p, "content", "x") }
func edit(p string) Call       { return call("Edit", "file_path", p, "old_string", "a", "new_string", "b") }
func grep(p string) Call       { return call("Grep", "pattern", "TODO", "path", p) }
func globCall(pat string) Call { return call("Glob", "pattern", pat) }

func rules(t testing.TB, ss ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, s := range ss {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var allModes = []Mode{ModeStandard, ModeAcceptEdits, ModeUnrestricted, ModeStrict}
