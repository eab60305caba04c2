package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/channelstest"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// clock is real time plus an offset tests can advance.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// harness is a gateway with a fake chat adapter ("chat"), a second fake
// ("phone") for approval routes, a real store and the scripted model.
type harness struct {
	t         testing.TB
	db        *store.DB
	model     *fakemodel.Server
	chat      *channelstest.Adapter
	phone     *channelstest.Adapter
	gw        *gateway.Gateway
	workspace string
	overflow  string
	clock     *clock
	cancel    context.CancelFunc
	done      chan error
	// agent and opts rebuild the gateway on the same data (restart).
	agent *agentcore.Agent
	opts  harnessOpts
}

type harnessOpts struct {
	mode         permission.Mode
	routes       []string
	queueMode    string
	timeout      time.Duration
	modelProblem string
	allowAll     bool
	noEdit       bool
	// sub-agent tasks
	subagents  []agentcore.SubagentType
	maxTasks   int
	deny       []permission.Rule
	memoryDir  string
	memoryRoot string
	// store, when set, is what the first gateway uses instead of the
	// database (a test's hooks around it); restart uses the database.
	store func(*store.DB) gateway.Store
	// workers is Options.Workers (0: the default).
	workers int
}

func newHarness(t testing.TB, o harnessOpts, steps ...fakemodel.Step) *harness {
	t.Helper()
	return newHarnessWith(t, o, nil, steps...)
}

// newHarnessWith replaces the "chat" fake with chat when it is not nil.
func newHarnessWith(t testing.TB, o harnessOpts, chat channels.Adapter, steps ...fakemodel.Step) *harness {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(dir, "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{t: t, db: db, model: fakemodel.New(t, steps...), workspace: filepath.Join(dir, "ws"), overflow: filepath.Join(dir, "overflow"), clock: &clock{}}
	if err := mkdir(h.workspace); err != nil {
		t.Fatal(err)
	}
	if o.mode == "" {
		o.mode = permission.Mode("standard")
	}
	red := sandbox.NewRedactor()
	ag := agentcore.New(agentcore.Config{
		ID:              "main",
		Model:           "test-model",
		ContextWindow:   32768,
		MaxOutputTokens: 1024,
		Preset:          "You are a test agent.",
		Policy:          permission.Policy{Mode: o.mode, Workspace: h.workspace, Deny: o.deny, ReadOnlyDirs: []string{h.overflow}, MemoryDir: o.memoryDir, MemoryRoot: o.memoryRoot},
		ApprovalTimeout: o.timeout,
		Subagents:       o.subagents,
	}, agentcore.Deps{
		Store:    db,
		Provider: agentcore.NewOpenAI(agentcore.OpenAIOptions{BaseURL: h.model.URL(), Model: "test-model"}),
		Tools:    agentcore.NewTools(tools.WithSubagents(agentcore.MergeSubagents(o.subagents...))...),
		Env: agentcore.ToolEnv{AgentID: "main", Workspace: h.workspace, OverflowDir: h.overflow, MemoryDir: o.memoryDir,
			Runner: sandbox.NewRunner(sandbox.Options{Redactor: red}), Redactor: red, Env: []string{"PATH=/usr/bin:/bin"}},
		Now: h.clock.Now,
	})
	h.agent, h.opts = ag, o
	caps := channels.Capabilities{MaxMessageLen: 4000, Edit: !o.noEdit, Buttons: true, Dialect: channels.Plain}
	h.chat = channelstest.New("chat", caps)
	h.phone = channelstest.New("phone", caps)
	var st gateway.Store = db
	if o.store != nil {
		st = o.store(db)
	}
	h.gw = h.newGateway(st, pick(chat, h.chat))
	h.start(chat == nil)
	return h
}

// newGateway builds the harness's gateway over st with chat as the
// "chat" channel.
func (h *harness) newGateway(st gateway.Store, chat channels.Adapter) *gateway.Gateway {
	o := h.opts
	gw, err := gateway.New(gateway.Options{
		Store:        st,
		Agents:       map[string]*agentcore.Agent{"main": h.agent},
		AgentStore:   h.db,
		AgentOptions: map[string]gateway.AgentOptions{"main": {ApprovalRoutes: o.routes, MaxTasks: o.maxTasks}},
		Channels: map[string]gateway.ChannelOptions{
			"chat":  {AllowUsers: []string{"alice", "bob"}, Admins: []string{"admin"}, AllowAll: o.allowAll, RequireMention: true, QueueMode: o.queueMode, EditInterval: time.Millisecond},
			"phone": {Admins: []string{"owner"}, EditInterval: time.Millisecond},
		},
		ApprovalTimeout: o.timeout,
		Now:             h.clock.Now,
		ModelProblem:    o.modelProblem,
		Workers:         o.workers,
	}, chat, h.phone)
	if err != nil {
		h.t.Fatal(err)
	}
	return gw
}

// restart stops the gateway and starts a new one on the same database
// and fakes, as a process started after a crash would.
func (h *harness) restart() {
	h.stop()
	h.gw = h.newGateway(h.db, h.chat)
	h.start(false)
}

func pick(a channels.Adapter, fallback *channelstest.Adapter) channels.Adapter {
	if a != nil {
		return a
	}
	return fallback
}

func (h *harness) start(waitChat bool) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.gw.Run(ctx, 5*time.Second) }()
	if waitChat {
		if err := h.chat.WaitStarted(h.ctx()); err != nil {
			h.t.Fatal(err)
		}
	}
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.t.Error("gateway did not stop within 30s")
	}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// longCtx is for waits on large loads.
func (h *harness) longCtx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	h.t.Cleanup(cancel)
	return ctx
}

var dm = channels.Location{Channel: "chat", Account: "bot", ChatID: "dm-alice"}

func inbound(id, user, text string, loc channels.Location) channels.Inbound {
	return channels.Inbound{EventID: id, Location: loc, User: channels.User{ID: user, Name: user}, Text: text, DirectMessage: true, Mentioned: true, At: time.Now()}
}

// send delivers a message and fails the test if the gateway refused it.
func (h *harness) send(in channels.Inbound) {
	h.t.Helper()
	if err := h.chat.Inbound(h.ctx(), in); err != nil {
		h.t.Fatalf("inbound: %v", err)
	}
}

// waitText waits until a message on the adapter contains substr.
func waitText(t *testing.T, a *channelstest.Adapter, substr string) []channelstest.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs, err := a.WaitFor(ctx, channelstest.Count(1, channelstest.Contains(substr)))
	if err != nil {
		t.Fatalf("waiting for %q: %v", substr, err)
	}
	return recs
}

// buttons returns the button rows of the newest message containing substr.
func buttons(t *testing.T, a *channelstest.Adapter, substr string) (channels.MessageRef, [][]channels.Button) {
	t.Helper()
	for _, p := range reverse(a.Posted(channels.Location{})) {
		var text strings.Builder
		var rows [][]channels.Button
		for _, part := range p.Message.Parts {
			switch v := part.(type) {
			case channels.Text:
				text.WriteString(v.Markdown)
			case channels.Buttons:
				rows = v.Rows
			}
		}
		if strings.Contains(text.String(), substr) && len(rows) > 0 {
			return p.Ref, rows
		}
	}
	t.Fatalf("no message with buttons containing %q", substr)
	return channels.MessageRef{}, nil
}

func reverse[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func bashCall(id, command string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"command": command})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}}
}

func mkdir(p string) error { return os.MkdirAll(p, 0o755) }

// eventually polls cond until it holds or 30 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
