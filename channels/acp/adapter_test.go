package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/switchboard-gw/switchboard/channels"
)

// These tests run the adapter against a tiny gateway stand-in (the
// adapter's tests cannot import the gateway) that records what reaches it
// and scripts the live events of turns; cmd/switchboard's tests run the
// real gateway.

type fakeGateway struct {
	a *Adapter

	mu        sync.Mutex
	inbound   []channels.Inbound
	decisions []channels.Decision
	onMessage func(in channels.Inbound)
	onDecide  func(d channels.Decision) channels.DecisionReply
}

func (g *fakeGateway) OnInbound(ctx context.Context, in channels.Inbound) error {
	g.mu.Lock()
	g.inbound = append(g.inbound, in)
	f := g.onMessage
	g.mu.Unlock()
	if name := channels.CommandName(in.Text); name != "" {
		_, _ = g.a.Send(ctx, in.Location, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "reply to /" + name}}, ReplyTo: in.MessageID})
		return nil
	}
	if f != nil {
		f(in)
	}
	return nil
}

func (g *fakeGateway) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	return channels.ActionReply{}, nil
}

func (g *fakeGateway) Decide(ctx context.Context, d channels.Decision) (channels.DecisionReply, error) {
	g.mu.Lock()
	g.decisions = append(g.decisions, d)
	f := g.onDecide
	g.mu.Unlock()
	if f != nil {
		return f(d), nil
	}
	return channels.DecisionReply{Decided: true, Resumed: true}, nil
}

func (g *fakeGateway) texts() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, in := range g.inbound {
		out = append(out, in.Text)
	}
	return out
}

// turn plays a turn's live events at loc.
func (g *fakeGateway) turn(loc channels.Location, evs ...channels.LiveEvent) {
	for _, ev := range evs {
		ev.Location, ev.ConversationID = loc, loc.ChatID
		g.a.Live(context.Background(), ev)
	}
}

type fakeHost struct {
	mu     sync.Mutex
	closed []string
}

func (h *fakeHost) NewSession(ctx context.Context, req SessionRequest) (SessionSpec, error) {
	return SessionSpec{ConversationID: "conv-1", Agent: "main", Workspace: req.Cwd,
		Location: channels.Location{Channel: Name, Account: "acp", ChatID: "conv-1", ThreadID: "s1"}, Settings: Settings{Mode: "standard"}}, nil
}
func (h *fakeHost) OpenSession(ctx context.Context, req SessionRequest) (SessionSpec, error) {
	return SessionSpec{}, errors.New("no such conversation")
}
func (h *fakeHost) CloseSession(ctx context.Context, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = append(h.closed, id)
}
func (h *fakeHost) Settings(ctx context.Context, id string) (Settings, error) {
	return Settings{Mode: "standard"}, nil
}
func (h *fakeHost) Workspace(ctx context.Context, id string) (string, bool) { return "/ws", true }

// testClient is the editor side.
type testClient struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	perm    func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

func (c *testClient) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}
func (c *testClient) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return c.perm(ctx, r)
}
func (c *testClient) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, u := range c.updates {
		if u.AgentMessageChunk != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}
func (c *testClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errors.New("no")
}
func (c *testClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errors.New("no")
}
func (c *testClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("no")
}
func (c *testClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("no")
}
func (c *testClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("no")
}
func (c *testClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("no")
}
func (c *testClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("no")
}

type rig struct {
	a      *Adapter
	g      *fakeGateway
	host   *fakeHost
	conn   *sdk.ClientSideConnection
	client *testClient
	sess   sdk.SessionId
	loc    channels.Location
}

// newRig starts an adapter on pipes with a session.
func newRig(t *testing.T, client *testClient) *rig {
	t.Helper()
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	host := &fakeHost{}
	a, err := New(Options{In: agentIn, Out: agentOut, Host: host, User: channels.User{ID: "me"}, Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGateway{a: a}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx, g) }()
	t.Cleanup(func() {
		toAgent.Close()
		select {
		case <-a.Done():
		case <-time.After(10 * time.Second):
			t.Error("Done was not closed when the client disconnected")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
		agentOut.Close()
	})
	gate := &gatedReader{r: fromAgent, open: make(chan struct{})}
	conn := sdk.NewClientSideConnection(client, toAgent, gate)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	close(gate.open)
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(tcancel)
	if _, err := conn.Initialize(tctx, sdk.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(tctx, sdk.NewSessionRequest{Cwd: "/ws", McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{a: a, g: g, host: host, conn: conn, client: client, sess: ns.SessionId,
		loc: channels.Location{Channel: Name, Account: "acp", ChatID: "conv-1", ThreadID: "s1"}}
}

func (r *rig) prompt(ctx context.Context, text string) (sdk.PromptResponse, error) {
	return r.conn.Prompt(ctx, sdk.PromptRequest{SessionId: r.sess, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var (
	running = &channels.ToolActivity{ID: "c1", Title: "Bash `x`", Kind: "execute", Status: channels.StatusRunning}
	ranOK   = &channels.ToolActivity{ID: "c1", Title: "Bash `x`", Kind: "execute", Status: channels.StatusDone, Outcome: channels.OutcomeOK, Output: "ok"}
	card    = &channels.ApprovalCard{ID: "ap1", ToolCallID: "c1", Summary: "x", Rule: "Bash(x)"}
)

// A permission request is withdrawn when the ask is decided elsewhere
// (the turn resumes at the session's location), and the prompt goes on
// to the resumed turn's end; nothing is decided from the editor.
func TestAskDecidedElsewhere(t *testing.T) {
	withdrawn := make(chan struct{})
	asked := make(chan struct{})
	client := &testClient{perm: func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		close(asked)
		<-ctx.Done()
		close(withdrawn)
		return sdk.RequestPermissionResponse{}, ctx.Err()
	}}
	r := newRig(t, client)
	r.g.onMessage = func(in channels.Inbound) {
		r.g.turn(in.Location, channels.LiveEvent{Kind: channels.LiveTurnStart}, channels.LiveEvent{Kind: channels.LiveTool, Tool: running},
			channels.LiveEvent{Kind: channels.LiveApproval, Approval: card}, channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "requires_approval"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resc := make(chan sdk.PromptResponse, 1)
	go func() {
		res, err := r.prompt(ctx, "run x")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		resc <- res
	}()
	<-asked
	r.g.turn(r.loc, channels.LiveEvent{Kind: channels.LiveTurnStart}, channels.LiveEvent{Kind: channels.LiveTool, Tool: ranOK},
		channels.LiveEvent{Kind: channels.LiveText, Text: "after the phone said yes", OTID: "m"},
		channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "end_turn"})
	select {
	case <-withdrawn:
	case <-ctx.Done():
		t.Fatal("the permission request was not withdrawn")
	}
	if res := <-resc; res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop = %s", res.StopReason)
	}
	if len(r.g.decisions) != 0 {
		t.Errorf("the editor decided too: %+v", r.g.decisions)
	}
	if !strings.Contains(r.client.text(), "after the phone said yes") {
		t.Errorf("text = %q", r.client.text())
	}
}

// Answered in the editor, the decision goes through the Decider as the
// local person at the session's location; a refusal is shown and the
// prompt keeps waiting for whoever may decide.
func TestAskAnsweredHere(t *testing.T) {
	client := &testClient{perm: func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(optAlways)}, nil
	}}
	r := newRig(t, client)
	r.g.onMessage = func(in channels.Inbound) {
		r.g.turn(in.Location, channels.LiveEvent{Kind: channels.LiveTurnStart}, channels.LiveEvent{Kind: channels.LiveTool, Tool: running},
			channels.LiveEvent{Kind: channels.LiveApproval, Approval: card}, channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "requires_approval"})
	}
	refused := make(chan struct{})
	r.g.onDecide = func(d channels.Decision) channels.DecisionReply {
		close(refused)
		return channels.DecisionReply{Refused: true, Text: "Only telegram:42 can decide this."}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resc := make(chan sdk.PromptResponse, 1)
	go func() {
		res, _ := r.prompt(ctx, "run x")
		resc <- res
	}()
	<-refused
	waitUntil(t, "the refusal shown", func() bool { return strings.Contains(r.client.text(), "Only telegram:42") })
	select {
	case res := <-resc:
		t.Fatalf("the prompt ended (%s) while the ask waits for another approver", res.StopReason)
	default:
	}
	r.g.turn(r.loc, channels.LiveEvent{Kind: channels.LiveTurnStart}, channels.LiveEvent{Kind: channels.LiveTool, Tool: ranOK},
		channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "end_turn"})
	if res := <-resc; res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop = %s", res.StopReason)
	}
	d := r.g.decisions[0]
	if d.ApprovalID != "ap1" || d.Action != channels.DecideAlways || d.User.ID != "me" || d.Location != r.loc {
		t.Errorf("decision = %+v", d)
	}
}

// A prompt cancelled before its turn started stops the turn when it
// starts (the first /stop found nothing running), and answers cancelled.
func TestCancelBeforeTheTurnStarts(t *testing.T) {
	r := newRig(t, &testClient{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resc := make(chan sdk.PromptResponse, 1)
	go func() {
		res, _ := r.prompt(ctx, "slow one")
		resc <- res
	}()
	waitUntil(t, "the message queued", func() bool { return len(r.g.texts()) == 1 })
	if err := r.conn.Cancel(ctx, sdk.CancelNotification{SessionId: r.sess}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the first /stop", func() bool { return len(r.g.texts()) == 2 })
	r.g.turn(r.loc, channels.LiveEvent{Kind: channels.LiveTurnStart})
	waitUntil(t, "a /stop once the turn started", func() bool { return len(r.g.texts()) == 3 })
	r.g.turn(r.loc, channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "cancelled"})
	if res := <-resc; res.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("stop = %s", res.StopReason)
	}
	if got := r.g.texts(); got[1] != "/stop" || got[2] != "/stop" {
		t.Errorf("inbound = %q", got)
	}
}

// A /command typed in the editor is answered by its reply, before the
// prompt ends; /new is refused (a new conversation is a new session);
// a message of the gateway outside a turn is shown as agent text.
func TestCommandsAndNotices(t *testing.T) {
	r := newRig(t, &testClient{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.prompt(ctx, "/status")
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("/status: %v %v", res, err)
	}
	if !strings.Contains(r.client.text(), "reply to /status") {
		t.Errorf("the reply did not arrive before the prompt ended: %q", r.client.text())
	}
	if _, err := r.prompt(ctx, "/new"); err != nil {
		t.Fatal(err)
	}
	if got := r.g.texts(); len(got) != 1 {
		t.Errorf("/new reached the gateway: %q", got)
	}
	_, _ = r.a.Send(ctx, r.loc, channels.TextMessage("a notice from the gateway"))
	waitUntil(t, "the notice", func() bool { return strings.Contains(r.client.text(), "a notice from the gateway") })
	// A turn's final message and an approval card are not shown again.
	_, _ = r.a.Send(ctx, r.loc, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "final"}}, Turn: "turn-1"})
	_, _ = r.a.Send(ctx, r.loc, channels.Message{Parts: []channels.Part{channels.Text{Markdown: "card"},
		channels.Buttons{Rows: [][]channels.Button{{{Label: "Approve", Token: "t"}}}}}})
	r.a.sessions["conv-1"].flush(ctx)
	if strings.Contains(r.client.text(), "final") || strings.Contains(r.client.text(), "card") {
		t.Errorf("shown twice: %q", r.client.text())
	}
}

// session/load of a conversation the host does not know fails with the
// host's advice; session/close releases the session.
func TestLoadUnknownAndClose(t *testing.T) {
	r := newRig(t, &testClient{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: "conv-x", Cwd: "/ws", McpServers: []sdk.McpServer{}})
	if err == nil || !strings.Contains(err.Error(), "no such conversation") {
		t.Errorf("load unknown = %v", err)
	}
	if _, err := r.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: r.sess}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.prompt(ctx, "still there?"); err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Errorf("prompt after close = %v", err)
	}
	if len(r.host.closed) != 1 || r.host.closed[0] != "conv-1" {
		t.Errorf("closed = %v", r.host.closed)
	}
}

// session/cancel while the editor shows a permission request: the client
// answers it cancelled, nothing is decided, the prompt answers cancelled
// (the ask stays pending for another place or the next message).
func TestCancelWhileAsking(t *testing.T) {
	asked := make(chan struct{})
	client := &testClient{perm: func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		close(asked)
		<-ctx.Done()
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}}
	r := newRig(t, client)
	r.g.onMessage = func(in channels.Inbound) {
		r.g.turn(in.Location, channels.LiveEvent{Kind: channels.LiveTurnStart}, channels.LiveEvent{Kind: channels.LiveTool, Tool: running},
			channels.LiveEvent{Kind: channels.LiveApproval, Approval: card}, channels.LiveEvent{Kind: channels.LiveTurnEnd, StopReason: "requires_approval"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resc := make(chan sdk.PromptResponse, 1)
	go func() {
		res, _ := r.prompt(ctx, "run x")
		resc <- res
	}()
	<-asked
	if err := r.conn.Cancel(ctx, sdk.CancelNotification{SessionId: r.sess}); err != nil {
		t.Fatal(err)
	}
	if res := <-resc; res.StopReason != sdk.StopReasonCancelled {
		t.Fatalf("stop = %s", res.StopReason)
	}
	if len(r.g.decisions) != 0 {
		t.Errorf("decided: %+v", r.g.decisions)
	}
}
