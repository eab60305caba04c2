package acp

// The mapping of ACP protocol version 1: the acp.Agent methods, prompt
// content to message text and attachments, live events to session/update
// kinds, approval cards to permission options, stop reasons, modes and
// config options, and the client's fs/* and terminal/* methods. These files
// (v1.go: the agent methods; v1_content.go: prompt content and session
// updates; v1_peer.go: one session's calls to the client) are the only
// ones that know the protocol's types; a later revision's mapping
// sits beside it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/switchboard-gw/switchboard/channels"
)

// serveV1 serves protocol version 1 on out/in; the returned channel is
// closed when the client disconnects.
func serveV1(a *Adapter, out io.Writer, in io.Reader) <-chan struct{} {
	v := &agentV1{a: a}
	gate := &gatedReader{r: in, open: make(chan struct{})}
	conn := sdk.NewAgentSideConnection(v, out, gate)
	conn.SetLogger(a.log)
	v.conn.Store(conn)
	close(gate.open)
	return conn.Done()
}

// gatedReader holds the SDK's reader until the connection is set up: its
// SetLogger is not synchronized with the reading goroutine
// NewAgentSideConnection starts, so nothing may be read before it.
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// agentV1 implements sdk.Agent and sdk.AgentLoader.
type agentV1 struct {
	a    *Adapter
	conn atomic.Pointer[sdk.AgentSideConnection]

	mu   sync.Mutex
	caps channels.ClientAbilities
}

var _ interface {
	sdk.Agent
	sdk.AgentLoader
} = (*agentV1)(nil)

// errV1 is an error for the client, its message for people.
func errV1(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	return &sdk.RequestError{Code: -32603, Message: err.Error()}
}

func (v *agentV1) clientCaps() channels.ClientAbilities {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.caps
}

// Initialize negotiates version 1 and says honestly what we do: load,
// list, resume and close sessions; images when the model sees them;
// embedded context; no MCP servers and no authentication.
func (v *agentV1) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	cc := p.ClientCapabilities
	v.mu.Lock()
	v.caps = channels.ClientAbilities{ReadFiles: cc.Fs.ReadTextFile, WriteFiles: cc.Fs.WriteTextFile, Terminal: cc.Terminal}
	v.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersion(sdk.ProtocolVersionNumber),
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{Image: v.a.o.Vision, EmbeddedContext: true},
			SessionCapabilities: sdk.SessionCapabilities{List: &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{}, Close: &sdk.SessionCloseCapabilities{}},
		},
		AgentInfo:   &sdk.Implementation{Name: "switchboard", Title: sdk.Ptr("switchboard"), Version: v.a.o.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate implements sdk.Agent: no authentication methods exist.
func (v *agentV1) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// Logout implements sdk.Agent.
func (v *agentV1) Logout(ctx context.Context, p sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	return sdk.LogoutResponse{}, nil
}

func (v *agentV1) peerFor(spec SessionSpec) peer {
	return &peerV1{v: v, id: sdk.SessionId(spec.ConversationID), st: newV1State(spec.Workspace)}
}

// NewSession starts a conversation: the agent from _meta.agent (else the
// process's), working in the client's cwd. MCP servers are accepted and
// ignored (none is advertised).
func (v *agentV1) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	agent, _ := p.Meta["agent"].(string)
	s, err := v.a.newSession(ctx, SessionRequest{Agent: agent, Cwd: p.Cwd}, v.peerFor, v.clientCaps())
	if err != nil {
		return sdk.NewSessionResponse{}, errV1(err)
	}
	st := s.spec.Settings
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.spec.ConversationID), Modes: modesV1(st), ConfigOptions: configV1(st),
		Meta: map[string]any{"agent": s.spec.Agent}}, nil
}

// LoadSession replays the conversation's history as updates, then
// continues it here.
func (v *agentV1) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, err := v.a.openSession(ctx, SessionRequest{ConversationID: string(p.SessionId), Cwd: p.Cwd}, v.peerFor, v.clientCaps(), true)
	if err != nil {
		return sdk.LoadSessionResponse{}, errV1(err)
	}
	st := s.spec.Settings
	return sdk.LoadSessionResponse{Modes: modesV1(st), ConfigOptions: configV1(st)}, nil
}

// ResumeSession continues the conversation without replaying it.
func (v *agentV1) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, err := v.a.openSession(ctx, SessionRequest{ConversationID: string(p.SessionId), Cwd: p.Cwd}, v.peerFor, v.clientCaps(), false)
	if err != nil {
		return sdk.ResumeSessionResponse{}, errV1(err)
	}
	st := s.spec.Settings
	return sdk.ResumeSessionResponse{Modes: modesV1(st), ConfigOptions: configV1(st)}, nil
}

// ListSessions lists the agent's conversations the person may see, those
// living in chat threads too (their _meta names the channels).
func (v *agentV1) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	ls, err := v.a.listSessions(ctx, cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, errV1(err)
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, l := range ls {
		info := sdk.SessionInfo{SessionId: sdk.SessionId(l.ID), Cwd: l.Workspace,
			Meta: map[string]any{"agent": l.Agent, "channels": append([]string{}, l.Elsewhere...)}}
		if l.Title != "" {
			info.Title = sdk.Ptr(l.Title)
		}
		if !l.UpdatedAt.IsZero() {
			info.UpdatedAt = sdk.Ptr(l.UpdatedAt.UTC().Format(time.RFC3339))
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// CloseSession ends a session of this process (the conversation stays).
func (v *agentV1) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	v.a.closeSession(ctx, string(p.SessionId))
	return sdk.CloseSessionResponse{}, nil
}

// Prompt runs one prompt to its stop reason.
func (v *agentV1) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := v.a.session(string(p.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, errV1(err)
	}
	text, atts := promptV1(p.Prompt)
	res, err := s.prompt(ctx, text, atts)
	if err != nil {
		return sdk.PromptResponse{}, errV1(err)
	}
	stop, err := stopV1(res)
	if err != nil {
		return sdk.PromptResponse{}, errV1(err)
	}
	u := res.Usage
	return sdk.PromptResponse{StopReason: stop, Usage: &sdk.Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens),
		CachedReadTokens: sdk.Ptr(int(u.CachedTokens)), TotalTokens: int(u.InputTokens + u.OutputTokens)}}, nil
}

// Cancel implements sdk.Agent: the SDK cancels the running prompt's
// context, and the prompt stops its turn.
func (v *agentV1) Cancel(ctx context.Context, p sdk.CancelNotification) error { return nil }

// SetSessionMode switches the permission mode (the gateway's /mode).
func (v *agentV1) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := v.a.session(string(p.SessionId))
	if err != nil {
		return sdk.SetSessionModeResponse{}, errV1(err)
	}
	if _, err := s.setMode(ctx, string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, errV1(err)
	}
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the mode or the model.
func (v *agentV1) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		return sdk.SetSessionConfigOptionResponse{}, errV1(errors.New("only the mode and model options exist"))
	}
	s, err := v.a.session(string(p.ValueId.SessionId))
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, errV1(err)
	}
	var st Settings
	switch val := string(p.ValueId.Value); p.ValueId.ConfigId {
	case "mode":
		st, err = s.setMode(ctx, val)
	case "model":
		st, err = s.setModel(ctx, val)
	default:
		err = fmt.Errorf("unknown option %q: use mode or model", p.ValueId.ConfigId)
	}
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, errV1(err)
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: configV1(st)}, nil
}

// modesV1 offers the permission modes.
func modesV1(st Settings) *sdk.SessionModeState {
	ms := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(st.Mode)}
	for _, m := range modes {
		ms.AvailableModes = append(ms.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	return ms
}

// configV1 offers the mode and the model as config options.
func configV1(st Settings) []sdk.SessionConfigOption {
	var mo sdk.SessionConfigSelectOptionsUngrouped
	for _, m := range modes {
		mo = append(mo, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	out := []sdk.SessionConfigOption{{Select: &sdk.SessionConfigOptionSelect{Id: "mode", Name: "Permission mode",
		Category: sdk.Ptr(sdk.SessionConfigOptionCategoryMode), CurrentValue: sdk.SessionConfigValueId(st.Mode),
		Options: sdk.SessionConfigSelectOptions{Ungrouped: &mo}}}}
	if st.Model == "" {
		return out
	}
	var models sdk.SessionConfigSelectOptionsUngrouped
	seen := map[string]bool{}
	for _, m := range append([]string{st.Model}, st.Models...) {
		if m != "" && !seen[m] {
			seen[m] = true
			models = append(models, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: m})
		}
	}
	return append(out, sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{Id: "model", Name: "Model",
		Category: sdk.Ptr(sdk.SessionConfigOptionCategoryModel), CurrentValue: sdk.SessionConfigValueId(st.Model),
		Options: sdk.SessionConfigSelectOptions{Ungrouped: &models}}})
}

// stopV1 maps a turn's stop reason; a failed turn is an error for the
// client, with the reason for people.
func stopV1(res promptResult) (sdk.StopReason, error) {
	switch res.Stop {
	case "cancelled":
		return sdk.StopReasonCancelled, nil
	case "max_tokens":
		return sdk.StopReasonMaxTokens, nil
	case "max_steps":
		return sdk.StopReasonMaxTurnRequests, nil
	case "error":
		msg := res.Error
		if msg == "" {
			msg = "the turn failed"
		}
		return "", &sdk.RequestError{Code: -32603, Message: msg}
	}
	return sdk.StopReasonEndTurn, nil
}

// maxResourceText bounds the text of one embedded resource given to the
// model.
const maxResourceText = 256 << 10
