package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// fakeClient is an editor's side: its buffers (which may differ from the
// disk) and a terminal that records commands.
type fakeClient struct {
	ab agentcore.ClientAbilities

	mu       sync.Mutex
	files    map[string]string
	commands []agentcore.ClientCommand
	run      func(ctx context.Context, c agentcore.ClientCommand) (agentcore.ClientCommandResult, error)
}

func (f *fakeClient) Abilities() agentcore.ClientAbilities { return f.ab }
func (f *fakeClient) ReadTextFile(ctx context.Context, path string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.files[path]; ok {
		return s, nil
	}
	return "", errors.New("Resource not found")
}
func (f *fakeClient) WriteTextFile(ctx context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = content
	return nil
}
func (f *fakeClient) RunCommand(ctx context.Context, c agentcore.ClientCommand) (agentcore.ClientCommandResult, error) {
	f.mu.Lock()
	f.commands = append(f.commands, c)
	run := f.run
	f.mu.Unlock()
	return run(ctx, c)
}

var allAbilities = agentcore.ClientAbilities{ReadFiles: true, WriteFiles: true, Terminal: true}

func clientEnv(t *testing.T, route agentcore.ClientRoute, c *fakeClient) *agentcore.ToolEnv {
	env := testEnv(t)
	env.MemoryDir = filepath.Join(env.Workspace, ".memory")
	env.ClientRoute, env.Client = route, c
	return env
}

// Read, Write and Edit of workspace files go to the editor (its unsaved
// buffer, not the disk); the disk is not touched.
func TestFilesThroughTheClient(t *testing.T) {
	c := &fakeClient{ab: allAbilities, files: map[string]string{}}
	env := clientEnv(t, agentcore.ClientRoute{Files: true}, c)
	ws := env.Workspace
	writeFiles(t, ws, map[string]string{"a.go": "on disk\n"})
	c.files[filepath.Join(ws, "a.go")] = "unsaved line one\nline two\n"

	if res := run(t, Read(), env, `{"file_path":"a.go"}`); res.IsError || !strings.Contains(res.Content, "unsaved line one") || !strings.Contains(res.Content, "     2\tline two") {
		t.Errorf("Read = %+v", res)
	}
	if res := run(t, Edit(), env, `{"file_path":"a.go","old_string":"line two","new_string":"line 2"}`); res.IsError || !strings.Contains(res.Content, "+line 2") {
		t.Errorf("Edit = %+v", res)
	}
	if got := c.files[filepath.Join(ws, "a.go")]; got != "unsaved line one\nline 2\n" {
		t.Errorf("buffer after Edit = %q", got)
	}
	if res := run(t, Write(), env, `{"file_path":"b.txt","content":"new"}`); res.IsError || res.Content != "Created b.txt (3 bytes)." {
		t.Errorf("Write = %+v", res)
	}
	if res := run(t, Write(), env, `{"file_path":"b.txt","content":"newer"}`); res.Content != "Overwrote b.txt (5 bytes, was 3)." {
		t.Errorf("Write again = %+v", res)
	}
	if got := readFile(t, filepath.Join(ws, "a.go")); got != "on disk\n" {
		t.Errorf("the disk changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err == nil {
		t.Error("Write reached the disk")
	}
	if res := run(t, Read(), env, `{"file_path":"missing.go"}`); !res.IsError || !strings.Contains(res.Content, "through the editor") {
		t.Errorf("Read of a file the editor lacks = %+v", res)
	}
}

// What stays here: paths outside the workspace, the agent's own memory,
// agents that do not route files, clients that cannot write.
func TestFilesThatStayHere(t *testing.T) {
	c := &fakeClient{ab: allAbilities, files: map[string]string{}}
	env := clientEnv(t, agentcore.ClientRoute{Files: true}, c)
	outside := filepath.Join(t.TempDir(), "o.txt")
	writeFiles(t, filepath.Dir(outside), map[string]string{"o.txt": "outside"})
	writeFiles(t, env.MemoryDir, map[string]string{"notes.md": "memory"})
	for _, p := range []string{outside, filepath.Join(env.MemoryDir, "notes.md")} {
		if env.FileClient(p, false) != nil {
			t.Errorf("%s would be read by the client", p)
		}
	}
	if res := run(t, Read(), env, `{"file_path":"`+outside+`"}`); !strings.Contains(res.Content, "outside") {
		t.Errorf("Read outside = %+v", res)
	}
	notRouted := clientEnv(t, agentcore.ClientRoute{}, c)
	if notRouted.FileClient(filepath.Join(notRouted.Workspace, "x"), false) != nil {
		t.Error("routed although the agent does not route files")
	}
	noClient := testEnv(t)
	noClient.ClientRoute = agentcore.ClientRoute{Files: true, Shell: true}
	if noClient.FileClient(filepath.Join(noClient.Workspace, "x"), false) != nil || noClient.ShellClient() != nil {
		t.Error("routed without a client")
	}
	readOnly := clientEnv(t, agentcore.ClientRoute{Files: true}, &fakeClient{ab: agentcore.ClientAbilities{ReadFiles: true}})
	x := filepath.Join(readOnly.Workspace, "x")
	if readOnly.FileClient(x, true) != nil || readOnly.FileClient(x, false) == nil {
		t.Error("a client that can only read got writes, or not reads")
	}
	if env.ShellClient() != nil {
		t.Error("Bash routed without the shell route")
	}
}

// Bash runs in the editor's terminal with the workspace as its directory;
// the result reads like a local one (exit code, timeout).
func TestBashThroughTheClient(t *testing.T) {
	c := &fakeClient{ab: allAbilities, files: map[string]string{}}
	c.run = func(ctx context.Context, cmd agentcore.ClientCommand) (agentcore.ClientCommandResult, error) {
		if strings.Contains(cmd.Command, "sleep") {
			<-ctx.Done()
			return agentcore.ClientCommandResult{Output: "partial", ExitCode: -1}, ctx.Err()
		}
		return agentcore.ClientCommandResult{Output: "from the editor\n", ExitCode: 3}, nil
	}
	env := clientEnv(t, agentcore.ClientRoute{Shell: true}, c)
	res := run(t, Bash(), env, `{"command":"make test"}`)
	if !res.IsError || res.Content != "from the editor\nexit code 3" {
		t.Errorf("Bash = %+v", res)
	}
	if cmd := c.commands[0]; cmd.Command != "make test" || cmd.Cwd != env.Workspace || cmd.OutputLimit == 0 {
		t.Errorf("command = %+v", cmd)
	}
	res = run(t, Bash(), env, `{"command":"sleep 100","timeout":50}`)
	if !res.IsError || !strings.Contains(res.Content, "timed out") {
		t.Errorf("timed out Bash = %+v", res)
	}
}
