package agentcore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/memfs"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// memAdapter fits *memfs.Repo to agentcore.Memory and MemoryHistory, the
// way cmd/switchboard does.
type memAdapter struct{ r *memfs.Repo }

func (m memAdapter) Dir() string { return m.r.Dir() }
func (m memAdapter) Revision(ctx context.Context) (string, error) {
	return m.r.Revision(ctx)
}
func (m memAdapter) Compile(ctx context.Context) (string, string, error) {
	c, err := m.r.Compile(ctx)
	return c.Text, c.Revision, err
}
func (m memAdapter) Commit(ctx context.Context, message string, paths ...string) (bool, error) {
	if len(paths) > 0 {
		res, err := m.r.CommitPaths(ctx, message, paths...)
		return res.Changed, err
	}
	res, err := m.r.CommitWorkTree(ctx, message)
	return res.Changed, err
}
func (m memAdapter) Diff(ctx context.Context, from, to string) (string, error) {
	d, err := m.r.Diff(ctx, from, to, 4000)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "%s %s\n", c.Kind, c.Path)
	}
	b.WriteString(d.Patch)
	return b.String(), nil
}
func (m memAdapter) Log(ctx context.Context, n int) ([]agentcore.MemoryCommit, error) {
	cs, err := m.r.Log(ctx, n)
	out := make([]agentcore.MemoryCommit, len(cs))
	for i, c := range cs {
		out[i] = memCommit(c)
	}
	return out, err
}
func (m memAdapter) Show(ctx context.Context, rev string) (agentcore.MemoryCommit, string, error) {
	c, d, err := m.r.Show(ctx, rev, 8000)
	return memCommit(c), d.Patch, err
}
func (m memAdapter) Revert(ctx context.Context, rev string) (string, error) {
	res, err := m.r.Revert(ctx, rev, "")
	return res.Revision, err
}

func memCommit(c memfs.Commit) agentcore.MemoryCommit {
	mc := agentcore.MemoryCommit{Revision: c.Revision, Message: c.Message, When: c.When}
	for _, ch := range c.Changes {
		mc.Changes = append(mc.Changes, agentcore.MemoryChange{Path: ch.Path, Kind: ch.Kind})
	}
	return mc
}

// memWorld is one test's real parts: a sqlite store, a workspace, a memfs
// repository, a fake model over HTTP and the real provider and tools.
type memWorld struct {
	t        testing.TB
	db       *store.DB
	model    *fakemodel.Server
	repo     *memfs.Repo
	ws       string
	memRoot  string
	memDir   string
	overflow string
}

func newMemWorld(t testing.TB, steps ...fakemodel.Step) *memWorld {
	t.Helper()
	root := t.TempDir()
	w := &memWorld{
		t:        t,
		model:    fakemodel.New(t, steps...),
		ws:       filepath.Join(root, "ws"),
		memRoot:  filepath.Join(root, "home", "memory"),
		overflow: filepath.Join(root, "home", "overflow"),
	}
	w.memDir = filepath.Join(w.memRoot, "main")
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(root, "home", "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w.db = db
	repo, err := memfs.Open(ctx, w.memDir, memfs.Options{AgentName: "main", Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	w.repo = repo
	return w
}

var testEpoch = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func fixedNow() time.Time { return testEpoch }

// memAgentOpts tweak the agent a memWorld builds.
type memAgentOpts struct {
	mode     permission.Mode
	window   int
	maxOut   int
	preset   string
	maxSteps int
	noMemory bool
}

func (w *memWorld) agent(o memAgentOpts) *agentcore.Agent {
	w.t.Helper()
	if o.mode == "" {
		o.mode = permission.ModeStandard
	}
	if o.preset == "" {
		o.preset = agentcore.DefaultPreset("main", w.ws, w.memDir)
	}
	red := sandbox.NewRedactor()
	var mem agentcore.Memory
	if !o.noMemory {
		mem = memAdapter{w.repo}
	}
	return agentcore.New(agentcore.Config{
		ID:              "main",
		Model:           "test-model",
		ContextWindow:   o.window,
		MaxOutputTokens: o.maxOut,
		MaxSteps:        o.maxSteps,
		Preset:          o.preset,
		Policy: permission.Policy{
			Mode:         o.mode,
			Workspace:    w.ws,
			MemoryDir:    w.memDir,
			MemoryRoot:   w.memRoot,
			ReadOnlyDirs: []string{w.overflow},
		},
	}, agentcore.Deps{
		Store:    w.db,
		Provider: agentcore.NewOpenAI(agentcore.OpenAIOptions{BaseURL: w.model.URL(), Model: "test-model", MaxRetries: -1}),
		Tools:    agentcore.NewTools(tools.Default()...),
		Memory:   mem,
		Now:      fixedNow,
		Env: agentcore.ToolEnv{
			AgentID:     "main",
			Workspace:   w.ws,
			MemoryDir:   w.memDir,
			OverflowDir: w.overflow,
			Runner:      sandbox.NewRunner(sandbox.Options{Redactor: red}),
			Redactor:    red,
			Env:         []string{"PATH=" + os.Getenv("PATH")},
			Writable:    []string{w.ws, w.memDir},
			Recall:      w.db,
		},
	})
}

func (w *memWorld) conversation(a *agentcore.Agent) string {
	w.t.Helper()
	c, err := a.NewConversation(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return c.ID
}

// say runs one user turn and fails the test on a storage error.
func (w *memWorld) say(a *agentcore.Agent, convID, text string, sink agentcore.Sink) agentcore.TurnResult {
	w.t.Helper()
	res, err := a.Turn(context.Background(), convID, agentcore.Input{
		Kind:    agentcore.InputUser,
		Parts:   []agentcore.Part{{Type: agentcore.PartText, Text: text}},
		Speaker: "alice (web:1)",
		Origin:  "web page",
	}, sink)
	if err != nil {
		w.t.Fatalf("turn %q: %v", text, err)
	}
	return res
}

// wireRequest is a recorded request split into raw JSON pieces.
type wireRequest struct {
	raw      []byte
	system   string
	messages []json.RawMessage
	tools    []json.RawMessage
	maxOut   int
}

func splitRequest(t testing.TB, r fakemodel.Request) wireRequest {
	t.Helper()
	var body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		t.Fatal(err)
	}
	wr := wireRequest{raw: r.Raw, messages: body.Messages, tools: body.Tools, maxOut: r.MaxTokens}
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		wr.system = r.Messages[0].Text()
	}
	return wr
}

// prefixBytes is the request's prompt as one byte string in wire order
// (tools, then messages), for measuring shared prefixes.
func (wr wireRequest) prefixBytes() []byte {
	var b bytes.Buffer
	for _, t := range wr.tools {
		b.Write(t)
	}
	for _, m := range wr.messages {
		b.Write(m)
	}
	return b.Bytes()
}

// isSummarization tells a compaction's summary request from a step: it
// carries no tools.
func isSummarization(r fakemodel.Request) bool {
	return len(r.Tools) == 0
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
