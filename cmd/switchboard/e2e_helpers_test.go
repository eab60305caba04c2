package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/agentcoretest"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/store"
)

// binPath is the switchboard binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build switchboard:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is one test's isolated world: a data directory, a workspace and a
// fake model.
type env struct {
	t         *testing.T
	home      string
	workspace string
	model     *fakemodel.Server
	extra     []string
}

func newEnv(t *testing.T, steps ...fakemodel.Step) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, home: filepath.Join(root, "home"), workspace: filepath.Join(root, "ws"), model: fakemodel.New(t, steps...)}
	if err := os.MkdirAll(e.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) environ() []string {
	base := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Dir(e.home),
		"SWITCHBOARD_HOME=" + e.home,
		"OPENAI_BASE_URL=" + e.model.URL(),
		"SWITCHBOARD_MODEL=test-model",
	}
	return append(base, e.extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

// command prepares the binary with the env's environment in its workspace.
func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = e.workspace
	cmd.Env = e.environ()
	return cmd
}

// run runs the binary to completion with stdin.
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// resultLine decodes the last stdout line as the result object.
func resultLine(t *testing.T, stdout string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last stdout line is not JSON: %v\n%s", err, stdout)
	}
	if m["type"] != "result" {
		t.Fatalf("last line is not a result: %v", m)
	}
	return m
}

// transcript opens the env's store and returns every message of the
// agent's latest conversation.
func (e *env) transcript() []agentcore.Message {
	e.t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	conv, err := db.LatestConversation(ctx, "main")
	if err != nil {
		e.t.Fatal(err)
	}
	msgs, err := db.Messages(ctx, conv.ID, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

// writeConfig writes the env's $SWITCHBOARD_HOME/switchboard.toml (0600)
// and returns its path.
func (e *env) writeConfig(body string) string {
	e.t.Helper()
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.home, "switchboard.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// toolMessages returns the tool-role messages of a recorded request.
func toolMessages(req fakemodel.Request) []fakemodel.Message {
	var out []fakemodel.Message
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

func contentText(m fakemodel.Message) string {
	var b strings.Builder
	for _, p := range m.Parts() {
		b.WriteString(p.Text)
	}
	return b.String()
}

// validTranscript checks the provider invariant on a transcript that may
// end parked on approvals.
func validTranscript(t *testing.T, msgs []agentcore.Message) {
	t.Helper()
	agentcoretest.CheckTranscript(t, msgs, true)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// conversationWith returns the messages of the conversation of agent main
// whose transcript contains text.
func conversationWith(t *testing.T, e *env, text string) []agentcore.Message {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(e.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	convs, err := db.ListConversations(ctx, "main", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		msgs, err := db.Messages(ctx, c.ID, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if strings.Contains(m.Text(), text) {
				return msgs
			}
		}
	}
	t.Fatalf("no conversation contains %q", text)
	return nil
}
