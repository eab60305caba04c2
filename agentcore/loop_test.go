package agentcore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/agentcore/agentcoretest"
	"github.com/switchboard-gw/switchboard/agentcore/permission"
	"github.com/switchboard-gw/switchboard/agentcore/tools"
	"github.com/switchboard-gw/switchboard/internal/fakemodel"
	"github.com/switchboard-gw/switchboard/sandbox"
	"github.com/switchboard-gw/switchboard/store"
)

// world is one test's real parts: a sqlite store, a workspace, a fake
// model over HTTP and the real provider.
type world struct {
	t     testing.TB
	db    *store.DB
	model *fakemodel.Server
	ws    string
	home  string
	red   *sandbox.Redactor
}

func newWorld(t testing.TB, steps ...fakemodel.Step) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), model: fakemodel.New(t, steps...), red: sandbox.NewRedactor()}
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), filepath.Join(w.home, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w.db = db
	return w
}

// agentOpts tweak the agent a world builds.
type agentOpts struct {
	mode     permission.Mode
	deny     []string
	maxSteps int
	owner    string
	now      func() time.Time
	tools    *agentcore.Tools
	// turnTimeout, maxStepOutput and streamIdle set the bounds of a turn
	// and its steps (0: the defaults).
	turnTimeout   time.Duration
	maxStepOutput int
	streamIdle    time.Duration
}

func (w *world) agent(o agentOpts) *agentcore.Agent {
	w.t.Helper()
	if o.mode == "" {
		o.mode = permission.ModeStandard
	}
	pol := permission.Policy{Mode: o.mode, Workspace: w.ws}
	for _, s := range o.deny {
		r, err := permission.ParseRule(s)
		if err != nil {
			w.t.Fatal(err)
		}
		pol.Deny = append(pol.Deny, r)
	}
	if o.tools == nil {
		o.tools = agentcore.NewTools(tools.Default()...)
	}
	overflow := filepath.Join(w.home, "overflow", "main")
	return agentcore.New(agentcore.Config{
		ID:            "main",
		Model:         "test-model",
		MaxSteps:      o.maxSteps,
		TurnTimeout:   o.turnTimeout,
		MaxStepOutput: o.maxStepOutput,
		Preset:        "You are a test agent.",
		Policy:        pol,
	}, agentcore.Deps{
		Store: w.db,
		Provider: agentcore.NewOpenAI(agentcore.OpenAIOptions{BaseURL: w.model.URL(), APIKey: "test-key", Model: "test-model",
			StreamIdleTimeout: o.streamIdle}),
		Tools: o.tools,
		Env: agentcore.ToolEnv{
			AgentID:     "main",
			Workspace:   w.ws,
			OverflowDir: overflow,
			Runner:      sandbox.NewRunner(sandbox.Options{Redactor: w.red}),
			Redactor:    w.red,
			Env:         sandbox.ScrubEnv(os.Environ(), nil, w.red),
		},
		Owner: o.owner,
		Now:   o.now,
	})
}

func (w *world) conversation(ag *agentcore.Agent) string {
	w.t.Helper()
	c, err := ag.NewConversation(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return c.ID
}

// messages returns the whole stored transcript of a conversation.
func (w *world) messages(convID string) []agentcore.Message {
	w.t.Helper()
	msgs, err := w.db.Messages(context.Background(), convID, 0, 10000)
	if err != nil {
		w.t.Fatal(err)
	}
	return msgs
}

func userInput(text string) agentcore.Input {
	return agentcore.Input{Kind: agentcore.InputUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}, Requester: "telegram:4242"}
}

var resume = agentcore.Input{Kind: agentcore.InputResume}

func bashCall(id, command string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"command": command})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Bash", Arguments: string(args)}}}
}

func readCall(id, path string) fakemodel.Step {
	args, _ := json.Marshal(map[string]string{"file_path": path})
	return fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: id, Name: "Read", Arguments: string(args)}}}
}

func turn(t testing.TB, ag *agentcore.Agent, convID string, in agentcore.Input, sink agentcore.Sink) agentcore.TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := ag.Turn(ctx, convID, in, sink)
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	return res
}

// toolResults returns the text of the tool messages of a recorded request,
// by call id.
func toolResults(req fakemodel.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

// events collects a turn's events.
type events struct {
	mu sync.Mutex
	es []agentcore.Event
}

func (e *events) Emit(ev agentcore.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.es = append(e.es, ev)
}

func (e *events) ofType(typ agentcore.EventType) []agentcore.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []agentcore.Event
	for _, ev := range e.es {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// park runs a turn whose only step asks to run `touch marker` and checks
// that it parks with one stored approval.
func park(t *testing.T, w *world, ag *agentcore.Agent, convID, callID string) agentcore.Approval {
	t.Helper()
	var ev events
	w.model.Push(bashCall(callID, "touch marker"))
	res := turn(t, ag, convID, userInput("make a marker"), &ev)
	if res.StopReason != agentcore.StopRequiresApproval || len(res.Pending) != 1 {
		t.Fatalf("turn ended %s with %d pending (%s); want requires_approval with 1", res.StopReason, len(res.Pending), res.Error)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the command ran before anyone approved it")
	}
	pending, err := w.db.PendingApprovals(context.Background(), convID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 {
		t.Fatalf("store holds %d pending approvals, want 1", len(pending))
	}
	ap := pending[0]
	if ap.ID != res.Pending[0].ID || ap.ToolCallID != callID || ap.ToolName != "Bash" {
		t.Fatalf("stored approval %+v does not match the turn's %+v", ap, res.Pending[0])
	}
	if ap.Summary != "Bash: touch marker" || ap.Rule != "Bash(touch marker)" || ap.Requester != "telegram:4242" || ap.Reason == "" {
		t.Errorf("approval summary %q rule %q requester %q reason %q", ap.Summary, ap.Rule, ap.Requester, ap.Reason)
	}
	if !ap.Expires.After(ap.Created) {
		t.Errorf("approval expires %v, created %v", ap.Expires, ap.Created)
	}
	if reqs := ev.ofType(agentcore.EventApprovalRequest); len(reqs) != 1 || reqs[0].Approval == nil || reqs[0].Approval.ID != ap.ID {
		t.Errorf("approval_request events = %+v", reqs)
	}
	agentcoretest.CheckTranscript(t, w.messages(convID), true)
	return ap
}

func TestApprovalAllowResumes(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")

	got, decided, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalAllowed, By: "telegram:4242"})
	if err != nil || !decided || got.State != agentcore.ApprovalAllowed {
		t.Fatalf("decide = %+v, %v, %v", got, decided, err)
	}
	if _, again, _ := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalDenied}); again {
		t.Fatal("a second decision took effect")
	}
	w.model.Push(fakemodel.Step{Text: "made it"})
	res := turn(t, ag, conv, resume, nil)
	if res.StopReason != agentcore.StopEndTurn || res.Text != "made it" {
		t.Fatalf("resume ended %s %q (%s)", res.StopReason, res.Text, res.Error)
	}
	if !exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the approved command did not run")
	}
	reqs := w.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	if r, ok := toolResults(reqs[1])["call_1"]; !ok || strings.Contains(r, "denied") {
		t.Fatalf("second request's tool result = %q (present %v)", r, ok)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)

	// A second resume finds nothing to do and does not call the model.
	if res := turn(t, ag, conv, resume, nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("idle resume ended %s", res.StopReason)
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Fatalf("idle resume called the model (%d requests)", n)
	}
}

// A resume the host retries because it died after the resumed turn stored
// its answer, before recording the end, returns that answer and tells the
// host the turn's results and texts again — without calling the model. A
// resume of another item still finds nothing to do.
func TestRetriedResumeReturnsItsAnswer(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	if _, ok, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalAllowed, By: "telegram:4242"}); !ok || err != nil {
		t.Fatalf("decide: %v %v", ok, err)
	}
	w.model.Push(fakemodel.Step{Text: "made it"})
	in := agentcore.Input{Kind: agentcore.InputResume, MessageID: "in-c-7"}
	if res := turn(t, ag, conv, in, nil); res.StopReason != agentcore.StopEndTurn || res.Text != "made it" {
		t.Fatalf("resume ended %s %q (%s)", res.StopReason, res.Text, res.Error)
	}
	var ev events
	res := turn(t, ag, conv, in, &ev)
	if res.StopReason != agentcore.StopEndTurn || res.Text != "made it" || res.Idle {
		t.Fatalf("retried resume ended %s %q idle=%v, want the stored answer", res.StopReason, res.Text, res.Idle)
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Fatalf("model got %d requests, want 2", n)
	}
	results, texts := ev.ofType(agentcore.EventToolResult), ev.ofType(agentcore.EventAssistantMessage)
	if len(results) != 1 || results[0].ToolCallID != "call_1" || results[0].Outcome != agentcore.OutcomeOK || len(texts) != 1 || texts[0].Text != "made it" {
		t.Fatalf("retried resume told the host results %+v, texts %+v", results, texts)
	}
	if res := turn(t, ag, conv, agentcore.Input{Kind: agentcore.InputResume, MessageID: "in-c-8"}, nil); !res.Idle {
		t.Fatalf("another item's resume ended %s %q, want idle", res.StopReason, res.Text)
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Fatalf("model got %d requests, want 2", n)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestApprovalDenyTellsModelWhy(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	if _, ok, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalDenied, Reason: "not on a Friday", By: "telegram:4242"}); !ok || err != nil {
		t.Fatalf("decide: %v %v", ok, err)
	}
	w.model.Push(fakemodel.Step{Text: "ok, not doing it"})
	res := turn(t, ag, conv, resume, nil)
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("resume ended %s (%s)", res.StopReason, res.Error)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the denied command ran")
	}
	r := toolResults(w.model.Requests()[1])["call_1"]
	if !strings.Contains(r, "Permission denied") || !strings.Contains(r, "not on a Friday") || !strings.Contains(r, "telegram:4242") {
		t.Fatalf("the model was not told who denied and why: %q", r)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestNewMessageDeniesPendingAsk(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")

	var ev events
	w.model.Push(fakemodel.Step{Text: "fine, forgot it"})
	res := turn(t, ag, conv, userInput("never mind, do something else"), &ev)
	if res.StopReason != agentcore.StopEndTurn || res.Text != "fine, forgot it" {
		t.Fatalf("turn ended %s %q (%s)", res.StopReason, res.Text, res.Error)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the pending command ran")
	}
	got, err := w.db.Approval(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != agentcore.ApprovalDenied || got.DecisionReason != "the user sent a new message instead" {
		t.Fatalf("approval = %s %q", got.State, got.DecisionReason)
	}
	if d := ev.ofType(agentcore.EventApprovalDecision); len(d) != 1 || d[0].Approval.State != agentcore.ApprovalDenied {
		t.Errorf("approval_decision events = %+v", d)
	}
	req := w.model.Requests()[1]
	if r := toolResults(req)["call_1"]; !strings.Contains(r, "the user sent a new message instead") {
		t.Fatalf("tool result = %q", r)
	}
	if last := req.LastMessage(); last.Role != "user" || !strings.Contains(last.Text(), "never mind") {
		t.Fatalf("the new message is not the last input: %s %q", last.Role, last.Text())
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

// clock is a settable time source for Deps.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestApprovalExpires(t *testing.T) {
	w := newWorld(t)
	clk := &clock{t: time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)}
	ag := w.agent(agentOpts{now: clk.now})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	if want := clk.now().Add(12 * time.Hour); !ap.Expires.Equal(want) {
		t.Fatalf("expires %v, want %v (default 12h)", ap.Expires, want)
	}

	// Before the expiry a resume keeps waiting.
	clk.advance(11 * time.Hour)
	res := turn(t, ag, conv, resume, nil)
	if res.StopReason != agentcore.StopRequiresApproval || len(w.model.Requests()) != 1 {
		t.Fatalf("resume before expiry ended %s after %d requests", res.StopReason, len(w.model.Requests()))
	}

	clk.advance(2 * time.Hour)
	w.model.Push(fakemodel.Step{Text: "it expired"})
	res = turn(t, ag, conv, resume, nil)
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("resume after expiry ended %s (%s)", res.StopReason, res.Error)
	}
	got, _ := w.db.Approval(context.Background(), ap.ID)
	if got.State != agentcore.ApprovalExpired {
		t.Fatalf("approval state %s, want expired", got.State)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the expired call ran")
	}
	if r := toolResults(w.model.Requests()[1])["call_1"]; !strings.Contains(r, "expired") {
		t.Fatalf("tool result = %q", r)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestAlwaysStoresDurableRule(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	if _, ok, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalAlways, By: "telegram:4242"}); !ok || err != nil {
		t.Fatalf("decide: %v %v", ok, err)
	}
	rules, err := w.db.AgentRules(context.Background(), "main")
	if err != nil || !slices.Equal(rules, []string{"Bash(touch marker)"}) {
		t.Fatalf("agent rules = %q, %v", rules, err)
	}
	w.model.Push(fakemodel.Step{Text: "done"})
	if res := turn(t, ag, conv, resume, nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("resume ended %s", res.StopReason)
	}

	// The next identical call runs without asking, in this agent and in a
	// new one built on the same store (a restart).
	for i, a := range []*agentcore.Agent{ag, w.agent(agentOpts{})} {
		os.Remove(filepath.Join(w.ws, "marker"))
		id := fmt.Sprintf("call_again_%d", i)
		w.model.Push(bashCall(id, "touch marker"), fakemodel.Step{Text: "done again"})
		c := conv
		if i == 1 {
			c = w.conversation(a)
		}
		res := turn(t, a, c, userInput("again"), nil)
		if res.StopReason != agentcore.StopEndTurn || len(res.Pending) != 0 {
			t.Fatalf("agent %d: turn ended %s with %d pending", i, res.StopReason, len(res.Pending))
		}
		if !exists(filepath.Join(w.ws, "marker")) {
			t.Fatalf("agent %d: the always-allowed command did not run", i)
		}
		agentcoretest.CheckTranscript(t, w.messages(c), false)
	}
	// A different command is still asked about.
	w.model.Push(bashCall("call_other", "rm -f marker"))
	if res := turn(t, ag, conv, userInput("remove it"), nil); res.StopReason != agentcore.StopRequiresApproval {
		t.Fatalf("a command the rule does not cover ended %s", res.StopReason)
	}
}

func TestDenyRuleWinsAtExecutionTime(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	if _, ok, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalAllowed, By: "telegram:4242"}); !ok || err != nil {
		t.Fatalf("decide: %v %v", ok, err)
	}
	// The process restarts with a deny rule added to the config.
	strict := w.agent(agentOpts{deny: []string{"Bash(touch:*)"}})
	w.model.Push(fakemodel.Step{Text: "blocked"})
	res := turn(t, strict, conv, resume, nil)
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("resume ended %s (%s)", res.StopReason, res.Error)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("a call matching a deny rule ran because a person had approved it earlier")
	}
	if r := toolResults(w.model.Requests()[1])["call_1"]; !strings.Contains(r, "Permission denied at execution time") {
		t.Fatalf("tool result = %q", r)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestMaxSteps(t *testing.T) {
	w := newWorld(t)
	if err := os.WriteFile(filepath.Join(w.ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	w.model.SetResponder(func(fakemodel.Request) fakemodel.Step {
		mu.Lock()
		defer mu.Unlock()
		n++
		return readCall(fmt.Sprintf("call_%d", n), "a.txt")
	})
	ag := w.agent(agentOpts{maxSteps: 3})
	conv := w.conversation(ag)
	res := turn(t, ag, conv, userInput("loop forever"), nil)
	if res.StopReason != agentcore.StopMaxSteps || res.Steps != 3 || res.Error == "" {
		t.Fatalf("turn ended %s after %d steps (%q); want max_steps after 3", res.StopReason, res.Steps, res.Error)
	}
	if got := len(w.model.Requests()); got != 3 {
		t.Fatalf("model got %d requests, want 3", got)
	}
	runs, err := w.db.ListRuns(context.Background(), conv)
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs = %d, %v", len(runs), err)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestCancelMidStep(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	w := newWorld(t, bashCall("call_1", "echo one"), fakemodel.Step{Text: "never", Block: block})
	ag := w.agent(agentOpts{mode: permission.ModeUnrestricted})
	conv := w.conversation(ag)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		res agentcore.TurnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := ag.Turn(ctx, conv, userInput("start"), nil)
		done <- out{res, err}
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := w.model.WaitRequests(wctx, 2); err != nil {
		t.Fatal(err)
	}
	cancel()
	var o out
	select {
	case o = <-done:
	case <-wctx.Done():
		t.Fatal("the turn did not stop after cancellation")
	}
	if o.err != nil || o.res.StopReason != agentcore.StopCancelled {
		t.Fatalf("turn = %s, %v; want cancelled", o.res.StopReason, o.err)
	}
	msgs := w.messages(conv)
	agentcoretest.CheckTranscript(t, msgs, false)
	if len(msgs) != 3 {
		t.Fatalf("transcript has %d messages, want user, assistant, tool", len(msgs))
	}
	// The lease was released: the next turn runs.
	w.model.Push(fakemodel.Step{Text: "back"})
	if res := turn(t, ag, conv, userInput("again"), nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn after cancel ended %s (%s)", res.StopReason, res.Error)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestCrashedToolCallSettledAsUnknown(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{mode: permission.ModeUnrestricted})
	conv := w.conversation(ag)
	ctx := context.Background()
	// What a crash leaves: the call was stored and marked started, and no
	// result was ever written.
	args := `{"command":"touch marker"}`
	if _, err := w.db.Append(ctx, conv,
		agentcore.Message{Role: agentcore.RoleUser, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: "make it"}}},
		agentcore.Message{Role: agentcore.RoleAssistant, ToolCalls: []agentcore.ToolCall{{ID: "call_crash", Name: "Bash", Arguments: args}}},
	); err != nil {
		t.Fatal(err)
	}
	if err := w.db.MarkToolStarted(ctx, conv, "call_crash"); err != nil {
		t.Fatal(err)
	}
	w.model.Push(fakemodel.Step{Text: "I will check first"})
	res := turn(t, ag, conv, userInput("did it work?"), nil)
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn ended %s (%s)", res.StopReason, res.Error)
	}
	if exists(filepath.Join(w.ws, "marker")) {
		t.Fatal("the call was run again")
	}
	if r := toolResults(w.model.Requests()[0])["call_crash"]; !strings.HasPrefix(r, "Outcome unknown") {
		t.Fatalf("tool result = %q", r)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

func TestLeaseBusy(t *testing.T) {
	block := make(chan struct{})
	w := newWorld(t, fakemodel.Step{Text: "slow", Block: block})
	first := w.agent(agentOpts{owner: "first"})
	second := w.agent(agentOpts{owner: "second"})
	conv := w.conversation(first)

	done := make(chan error, 1)
	go func() {
		_, err := first.Turn(context.Background(), conv, userInput("slow one"), nil)
		done <- err
	}()
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.model.WaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Turn(context.Background(), conv, userInput("me too"), nil); !errors.Is(err, agentcore.ErrBusy) {
		t.Fatalf("second owner's turn: %v; want ErrBusy", err)
	}
	close(block)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-wctx.Done():
		t.Fatal("first turn did not finish")
	}
	w.model.Push(fakemodel.Step{Text: "my turn"})
	if res := turn(t, second, conv, userInput("now me"), nil); res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("second owner after release: %s", res.StopReason)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

// textTool returns a fixed text.
type textTool struct {
	name, text string
}

func (x textTool) Spec() agentcore.ToolSpec {
	return agentcore.ToolSpec{Name: x.name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (textTool) Resource(json.RawMessage, *agentcore.ToolEnv) agentcore.Resource {
	return agentcore.Resource{Kind: agentcore.ResourceRead}
}
func (x textTool) Run(context.Context, json.RawMessage, *agentcore.ToolEnv) agentcore.Result {
	return agentcore.Result{Content: x.text}
}

// TestClampOverflow: a result above the clamp is cut head and tail with a
// note naming an overflow file that holds it whole; a result just above the
// clamp by a tool's own note is left alone; the same call id in two
// conversations gets two files.
func TestClampOverflow(t *testing.T) {
	big := strings.Repeat("0123456789\n", 4000) + "THE END"
	near := strings.Repeat("x", 30000) + "\n[output cut; the full output is in /somewhere]"
	w := newWorld(t)
	ag := w.agent(agentOpts{mode: permission.ModeUnrestricted, tools: agentcore.NewTools(textTool{"Big", big}, textTool{"Near", near})})
	var paths []string
	for i := range 2 {
		conv := w.conversation(ag)
		w.model.Push(fakemodel.Step{ToolCalls: []fakemodel.ToolCall{{ID: "call_big", Name: "Big", Arguments: "{}"}, {ID: "call_near", Name: "Near", Arguments: "{}"}}}, fakemodel.Step{Text: "ok"})
		if res := turn(t, ag, conv, userInput("go"), nil); res.StopReason != agentcore.StopEndTurn {
			t.Fatalf("turn ended %s (%s)", res.StopReason, res.Error)
		}
		reqs := w.model.Requests()
		got := toolResults(reqs[len(reqs)-1])
		if got["call_near"] != near {
			t.Errorf("conversation %d: a result within the note room was cut: %d chars", i, len(got["call_near"]))
		}
		r := got["call_big"]
		if len(r) > 31000 || !strings.Contains(r, "characters cut") || !strings.Contains(r, "THE END") {
			t.Fatalf("conversation %d: big result not clamped head+tail: %d chars, tail %q", i, len(r), r[max(0, len(r)-300):])
		}
		_, after, ok := strings.Cut(r, "the full output is in ")
		path, _, _ := strings.Cut(after, " — ")
		if !ok {
			t.Fatalf("no overflow note: %q", r[len(r)-300:])
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != big {
			t.Fatalf("overflow file %s does not hold the whole result (%d bytes, %v)", path, len(b), err)
		}
		paths = append(paths, path)
	}
	if paths[0] == paths[1] {
		t.Fatalf("two conversations' results share the overflow file %s", paths[0])
	}
}

// A model that repeats a tool call id across steps (or a server that does)
// must not get "outcome unknown" or an old decision for a new call.
func TestRepeatedToolCallIDRunsEachCall(t *testing.T) {
	w := newWorld(t,
		bashCall("call_1", "echo one"),
		bashCall("call_1", "touch marker"),
		fakemodel.Step{Text: "both ran"},
	)
	ag := w.agent(agentOpts{mode: "unrestricted"})
	conv := w.conversation(ag)
	res := turn(t, ag, conv, userInput("go"), nil)
	if res.StopReason != agentcore.StopEndTurn {
		t.Fatalf("turn ended %s: %s", res.StopReason, res.Error)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "marker")); err != nil {
		t.Fatal("the second call with a repeated id did not run")
	}
	msgs := w.messages(conv)
	agentcoretest.CheckTranscript(t, msgs, false)
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if seen[c.ID] {
				t.Fatalf("call id %s stored twice", c.ID)
			}
			seen[c.ID] = true
		}
	}
}

// A resume that died after the decided calls' results were appended but
// before the next model call (here: the call fails) is retried and
// continues with that model call, so the answer still comes (issue 10).
func TestResumeAfterResultsContinues(t *testing.T) {
	for _, decision := range []agentcore.ApprovalState{agentcore.ApprovalAllowed, agentcore.ApprovalDenied} {
		t.Run(string(decision), func(t *testing.T) {
			w := newWorld(t)
			ag := w.agent(agentOpts{})
			conv := w.conversation(ag)
			ap := park(t, w, ag, conv, "call_1")
			if _, ok, err := ag.Decide(context.Background(), ap.ID, agentcore.Decision{State: decision, By: "telegram:4242"}); !ok || err != nil {
				t.Fatalf("decide: %v %v", ok, err)
			}
			w.model.Push(fakemodel.Step{Status: http.StatusServiceUnavailable, RetryAfter: "0"})
			res := turn(t, ag, conv, resume, nil)
			if res.StopReason != agentcore.StopError {
				t.Fatalf("first resume ended %s, want error from the model", res.StopReason)
			}
			msgs := w.messages(conv)
			if last := msgs[len(msgs)-1]; last.Role != agentcore.RoleTool {
				t.Fatalf("transcript ends with %s, want the tool result", last.Role)
			}
			before := len(w.model.Requests())
			w.model.Push(fakemodel.Step{Text: "answer after restart"})
			res = turn(t, ag, conv, resume, nil)
			if res.StopReason != agentcore.StopEndTurn || res.Text != "answer after restart" {
				t.Fatalf("retried resume ended %s %q (%s); want the model's answer", res.StopReason, res.Text, res.Error)
			}
			if n := len(w.model.Requests()) - before; n != 1 {
				t.Fatalf("retried resume made %d model calls, want 1", n)
			}
			agentcoretest.CheckTranscript(t, w.messages(conv), false)
			// Done: one more resume finds nothing to do.
			if res := turn(t, ag, conv, resume, nil); res.StopReason != agentcore.StopEndTurn || len(w.model.Requests())-before != 1 {
				t.Fatalf("idle resume ended %s after %d calls", res.StopReason, len(w.model.Requests())-before)
			}
		})
	}
}

// A run's seqIds grow across the turns that emit its events: the resumed
// turn's tool_result for the asking step's run continues after the
// approval_request the first turn emitted for it (a replay cursor never
// repeats).
func TestSeqIDsGrowAcrossResume(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	var first, second events
	w.model.Push(bashCall("call_1", "touch marker"))
	res := turn(t, ag, conv, userInput("make a marker"), &first)
	if res.StopReason != agentcore.StopRequiresApproval {
		t.Fatalf("turn ended %s", res.StopReason)
	}
	if _, _, err := ag.Decide(context.Background(), res.Pending[0].ID, agentcore.Decision{State: agentcore.ApprovalAllowed, By: "telegram:4242"}); err != nil {
		t.Fatal(err)
	}
	w.model.Push(fakemodel.Step{Text: "made it"})
	turn(t, ag, conv, resume, &second)
	last := map[string]int64{}
	for _, e := range append(first.es, second.es...) {
		if e.SeqID <= last[e.RunID] {
			t.Fatalf("%s event of run %s has seqId %d after %d", e.Type, e.RunID, e.SeqID, last[e.RunID])
		}
		last[e.RunID] = e.SeqID
	}
	if rs := second.ofType(agentcore.EventToolResult); len(rs) != 1 || rs[0].RunID != first.ofType(agentcore.EventApprovalRequest)[0].RunID {
		t.Fatalf("the tool result should belong to the asking step's run")
	}
}

// An ask the harness settled in an attempt that died before the call's
// result was appended is announced again by the retried attempt, so the
// host still edits its posted copies (the crash campaign found them left
// with live buttons).
func TestSettledAskAnnouncedAgainAfterACrash(t *testing.T) {
	w := newWorld(t)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	ap := park(t, w, ag, conv, "call_1")
	// The dead attempt: it denied the ask, then died.
	if _, ok, err := w.db.Decide(context.Background(), ap.ID, agentcore.Decision{State: agentcore.ApprovalDenied, Reason: "the user sent a new message instead", By: "switchboard"}); !ok || err != nil {
		t.Fatalf("decide: %v %v", ok, err)
	}
	var ev events
	w.model.Push(fakemodel.Step{Text: "on to the new message"})
	turn(t, ag, conv, userInput("something else"), &ev)
	ds := ev.ofType(agentcore.EventApprovalDecision)
	if len(ds) != 1 || ds[0].Approval == nil || ds[0].Approval.ID != ap.ID || ds[0].Approval.State != agentcore.ApprovalDenied {
		t.Fatalf("approval_decision events = %+v; want the settled ask announced once", ds)
	}
	agentcoretest.CheckTranscript(t, w.messages(conv), false)
}

// An approval of a command that holds a secret shows none of it: not in
// its summary, not in the reason that quotes the command, and it offers no
// Always rule (which would spell the secret on its button and keep it).
func TestApprovalHidesSecretsInItsCommand(t *testing.T) {
	w := newWorld(t)
	const secret = "tok-3f9a7c21d44e"
	w.red.Add(secret)
	ag := w.agent(agentOpts{})
	conv := w.conversation(ag)
	var ev events
	w.model.Push(bashCall("call_1", "touch "+secret))
	res := turn(t, ag, conv, userInput("make it"), &ev)
	if res.StopReason != agentcore.StopRequiresApproval || len(res.Pending) != 1 {
		t.Fatalf("turn ended %s with %d pending (%s)", res.StopReason, len(res.Pending), res.Error)
	}
	pending, err := w.db.PendingApprovals(context.Background(), conv)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	shown := []agentcore.Approval{pending[0]}
	for _, e := range ev.ofType(agentcore.EventApprovalRequest) {
		shown = append(shown, *e.Approval)
	}
	for _, ap := range shown {
		if strings.Contains(ap.Summary+ap.Reason+ap.Rule, secret) {
			t.Errorf("approval shows the secret: summary %q reason %q rule %q", ap.Summary, ap.Reason, ap.Rule)
		}
		if ap.Rule != "" || !strings.Contains(ap.Reason, sandbox.Redacted) {
			t.Errorf("approval rule %q reason %q: want no rule and the reason redacted", ap.Rule, ap.Reason)
		}
	}
}
