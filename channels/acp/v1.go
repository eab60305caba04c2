package acp

// The mapping of ACP protocol version 1: the acp.Agent methods, prompt
// content to message text and attachments, live events to session/update
// kinds, approval cards to permission options, stop reasons, modes and
// config options, and the client's fs/* and terminal/* methods. This is the
// only file that knows the protocol's types; a later revision's mapping
// sits beside it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
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

// promptV1 turns prompt content into the message text and attachments:
// text as is; images as attachments (the gateway passes them to models
// with vision and tells the others); resource links and embedded text
// resources as text the model can read; anything else as a note.
func promptV1(blocks []sdk.ContentBlock) (string, []channels.Attachment) {
	var parts []string
	var atts []channels.Attachment
	image := func(data, mime, uri string) {
		b, err := decodeBase64(data)
		switch {
		case err != nil || len(b) == 0:
			what := "an image"
			if uri != "" {
				what += " (" + uri + ")"
			}
			parts = append(parts, "[The user attached "+what+" that could not be decoded.]")
		default:
			atts = append(atts, channels.Attachment{Name: fmt.Sprintf("image-%d%s", len(atts)+1, imageExt(mime)), MIME: mime, Data: b})
		}
	}
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.Image != nil:
			uri := ""
			if b.Image.Uri != nil {
				uri = *b.Image.Uri
			}
			image(b.Image.Data, mimeOr(b.Image.MimeType, "image/png"), uri)
		case b.Audio != nil:
			parts = append(parts, "[The user attached audio ("+b.Audio.MimeType+"), which is not passed to the model.]")
		case b.ResourceLink != nil:
			parts = append(parts, linkText(b.ResourceLink))
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				parts = append(parts, resourceText(r.TextResourceContents.Uri, r.TextResourceContents.Text))
			case r.BlobResourceContents != nil:
				mime := ""
				if r.BlobResourceContents.MimeType != nil {
					mime = *r.BlobResourceContents.MimeType
				}
				if strings.HasPrefix(mime, "image/") {
					image(r.BlobResourceContents.Blob, mime, r.BlobResourceContents.Uri)
					continue
				}
				parts = append(parts, fmt.Sprintf("[The user attached %s (%s), binary content that is not passed to the model.]",
					uriPath(r.BlobResourceContents.Uri), mimeOr(mime, "unknown type")))
			}
		}
	}
	return strings.Join(parts, "\n\n"), atts
}

// uriPath shows a file: URI as its path, other URIs as they are.
func uriPath(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" && u.Path != "" {
		return u.Path
	}
	return uri
}

func linkText(l *sdk.ContentBlockResourceLink) string {
	var b strings.Builder
	b.WriteString("[The user referred to ")
	if p := uriPath(l.Uri); p != l.Uri {
		b.WriteString("the file " + p)
	} else {
		b.WriteString(l.Uri)
	}
	name := l.Name
	if l.Title != nil && *l.Title != "" {
		name = *l.Title
	}
	var facts []string
	if name != "" && !strings.HasSuffix(l.Uri, name) {
		facts = append(facts, name)
	}
	if l.MimeType != nil && *l.MimeType != "" {
		facts = append(facts, *l.MimeType)
	}
	if l.Size != nil {
		facts = append(facts, fmt.Sprintf("%d bytes", *l.Size))
	}
	if len(facts) > 0 {
		b.WriteString(" (" + strings.Join(facts, ", ") + ")")
	}
	if l.Description != nil && *l.Description != "" {
		b.WriteString(": " + *l.Description)
	}
	b.WriteString("]")
	return b.String()
}

// resourceText is an embedded text resource as the model reads it: its
// place and its text in a fence no line of it can close.
func resourceText(uri, text string) string {
	note := ""
	if len(text) > maxResourceText {
		cut := maxResourceText
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text, note = text[:cut], fmt.Sprintf("\n[cut: the rest of %s is not shown]", uriPath(uri))
	}
	fence := fenceFor(text)
	return fmt.Sprintf("Contents of %s:\n%s\n%s\n%s%s", uriPath(uri), fence, strings.TrimRight(text, "\n"), fence, note)
}

// v1State is what a session's updates remember: tool calls already
// announced (later changes are tool_call_update) and assistant slices
// whose text already arrived in deltas.
type v1State struct {
	ws        string
	announced map[string]bool
	streamed  map[string]bool
}

func newV1State(ws string) v1State {
	return v1State{ws: ws, announced: map[string]bool{}, streamed: map[string]bool{}}
}

// updates maps one live event to session updates.
func (st *v1State) updates(ev channels.LiveEvent) []sdk.SessionUpdate {
	switch ev.Kind {
	case channels.LiveText:
		if ev.Text == "" {
			return nil
		}
		st.streamed[ev.OTID] = true
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(ev.Text)}
	case channels.LiveReasoning:
		if ev.Text == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentThoughtText(ev.Text)}
	case channels.LiveMessage:
		streamed := st.streamed[ev.OTID]
		delete(st.streamed, ev.OTID)
		if streamed || ev.Text == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText(ev.Text)}
	case channels.LiveTool:
		if ev.Tool == nil {
			return nil
		}
		return st.tool(*ev.Tool, rawInput(ev.Wire))
	case channels.LivePlan:
		if ev.Plan == nil {
			return nil
		}
		return []sdk.SessionUpdate{planV1(*ev.Plan)}
	case channels.LiveApproval:
		if ev.Approval == nil {
			return nil
		}
		return st.pending(*ev.Approval)
	case channels.LiveTask:
		if ev.Task == nil {
			return nil
		}
		return st.task(*ev.Task)
	case channels.LiveTurnEnd:
		st.streamed = map[string]bool{}
	case kindNotice:
		if strings.TrimSpace(ev.Text) == "" {
			return nil
		}
		return []sdk.SessionUpdate{sdk.UpdateAgentMessageText("\n\n" + ev.Text + "\n\n")}
	}
	return nil
}

// rawInput is the arguments of a tool_call event's wire form.
func rawInput(wire []byte) any {
	var w struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(wire, &w) != nil || len(w.Arguments) == 0 || !json.Valid(w.Arguments) {
		return nil
	}
	return w.Arguments
}

func kindV1(k string) sdk.ToolKind {
	switch sdk.ToolKind(k) {
	case sdk.ToolKindRead, sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove, sdk.ToolKindSearch,
		sdk.ToolKindExecute, sdk.ToolKindThink, sdk.ToolKindFetch, sdk.ToolKindSwitchMode:
		return sdk.ToolKind(k)
	}
	return sdk.ToolKindOther
}

func statusV1(t channels.ToolActivity) sdk.ToolCallStatus {
	if t.Outcome != "" {
		if t.Outcome == channels.OutcomeOK {
			return sdk.ToolCallStatusCompleted
		}
		return sdk.ToolCallStatusFailed
	}
	switch t.Status {
	case channels.StatusPending:
		return sdk.ToolCallStatusPending
	case channels.StatusDone:
		return sdk.ToolCallStatusCompleted
	case channels.StatusError, channels.StatusDenied, channels.StatusUnknown:
		return sdk.ToolCallStatusFailed
	}
	return sdk.ToolCallStatusInProgress
}

// tool is a tool call's start or change.
func (st *v1State) tool(t channels.ToolActivity, raw any) []sdk.SessionUpdate {
	status := statusV1(t)
	var content []sdk.ToolCallContent
	if t.Diff != "" {
		content = append(content, diffV1(t.Diff, st.ws)...)
	}
	if status == sdk.ToolCallStatusCompleted || status == sdk.ToolCallStatusFailed {
		if out := strings.TrimRight(t.Output, "\n"); out != "" {
			f := fenceFor(out)
			content = append(content, sdk.ToolContent(sdk.TextBlock(f+"\n"+out+"\n"+f)))
		}
	}
	var locs []sdk.ToolCallLocation
	for _, p := range t.Paths {
		if !filepath.IsAbs(p) && st.ws != "" {
			p = filepath.Join(st.ws, p)
		}
		locs = append(locs, sdk.ToolCallLocation{Path: p})
	}
	if !st.announced[t.ID] {
		st.announced[t.ID] = true
		return []sdk.SessionUpdate{{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(t.ID), Title: titleOr(t.Title, "tool call"),
			Kind: kindV1(t.Kind), Status: status, Content: content, Locations: locs, RawInput: raw}}}
	}
	return []sdk.SessionUpdate{{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(t.ID), Status: sdk.Ptr(status),
		Content: content, Locations: locs}}}
}

// pending marks the call an ask is about as waiting, with the diff it
// would make and why the policy asks.
func (st *v1State) pending(c channels.ApprovalCard) []sdk.SessionUpdate {
	if c.ToolCallID == "" {
		return nil
	}
	content := pendingContent(c, st.ws)
	if !st.announced[c.ToolCallID] {
		st.announced[c.ToolCallID] = true
		return []sdk.SessionUpdate{{ToolCall: &sdk.SessionUpdateToolCall{ToolCallId: sdk.ToolCallId(c.ToolCallID),
			Title: titleOr(c.Summary, c.Tool), Kind: sdk.ToolKindOther, Status: sdk.ToolCallStatusPending, Content: content}}}
	}
	return []sdk.SessionUpdate{{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(c.ToolCallID),
		Status: sdk.Ptr(sdk.ToolCallStatusPending), Content: content}}}
}

func pendingContent(c channels.ApprovalCard, ws string) []sdk.ToolCallContent {
	var content []sdk.ToolCallContent
	if c.Diff != "" {
		content = append(content, diffV1(c.Diff, ws)...)
	}
	if c.Reason != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock("Why it asks: "+c.Reason)))
	}
	return content
}

// diffV1 is a unified diff as diff content, one per file.
func diffV1(diff, ws string) []sdk.ToolCallContent {
	var out []sdk.ToolCallContent
	for _, f := range parseUnified(diff, ws) {
		if f.NewFile {
			out = append(out, sdk.ToolDiffContent(f.Path, f.New))
		} else {
			out = append(out, sdk.ToolDiffContent(f.Path, f.New, f.Old))
		}
	}
	return out
}

// task is a sub-agent task as a tool call of kind think.
func (st *v1State) task(t channels.TaskActivity) []sdk.SessionUpdate {
	return st.tool(channels.ToolActivity{ID: "task-" + t.ID, Title: "Task: " + titleOr(t.Description, t.Type), Kind: "think",
		Status: taskStatus(t.Status), Output: t.Progress}, nil)
}

func planV1(p channels.Plan) sdk.SessionUpdate {
	entries := []sdk.PlanEntry{}
	for _, it := range p.Items {
		pr := sdk.PlanEntryPriority(it.Priority)
		switch pr {
		case sdk.PlanEntryPriorityHigh, sdk.PlanEntryPriorityLow:
		default:
			pr = sdk.PlanEntryPriorityMedium
		}
		status := sdk.PlanEntryStatus(it.Status)
		switch status {
		case sdk.PlanEntryStatusInProgress, sdk.PlanEntryStatusCompleted:
		default:
			status = sdk.PlanEntryStatusPending
		}
		entries = append(entries, sdk.PlanEntry{Content: it.Content, Priority: pr, Status: status})
	}
	return sdk.UpdatePlan(entries...)
}

// permission option ids.
const (
	optAllow  = "allow_once"
	optAlways = "allow_always"
	optReject = "reject_once"
)

// permissionOptionsV1: allow once, allow always (showing the rule it
// stores; admins only, when the call has one), reject.
func permissionOptionsV1(c channels.ApprovalCard, always bool) []sdk.PermissionOption {
	opts := []sdk.PermissionOption{{OptionId: optAllow, Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	if always && c.Rule != "" {
		opts = append(opts, sdk.PermissionOption{OptionId: optAlways, Name: "Always allow " + c.Rule, Kind: sdk.PermissionOptionKindAllowAlways})
	}
	return append(opts, sdk.PermissionOption{OptionId: optReject, Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
}

// decisionV1 maps the client's answer; "" when it was cancelled.
func decisionV1(o sdk.RequestPermissionOutcome) (string, error) {
	if o.Selected == nil {
		return "", nil
	}
	switch o.Selected.OptionId {
	case optAllow:
		return channels.DecideAllow, nil
	case optAlways:
		return channels.DecideAlways, nil
	case optReject:
		return channels.DecideDeny, nil
	}
	return "", fmt.Errorf("unknown permission option %q", o.Selected.OptionId)
}

// peerV1 is one session on a version 1 connection.
type peerV1 struct {
	v  *agentV1
	id sdk.SessionId

	mu sync.Mutex
	st v1State
}

func (p *peerV1) send(ctx context.Context, us []sdk.SessionUpdate) {
	conn := p.v.conn.Load()
	if conn == nil {
		return
	}
	for _, u := range us {
		if err := conn.SessionUpdate(context.WithoutCancel(ctx), sdk.SessionNotification{SessionId: p.id, Update: u}); err != nil {
			p.v.a.log.Debug("session update not sent", "session", p.id, "err", err)
		}
	}
}

func (p *peerV1) live(ctx context.Context, ev channels.LiveEvent) {
	p.mu.Lock()
	us := p.st.updates(ev)
	p.mu.Unlock()
	p.send(ctx, us)
}

func (p *peerV1) ask(ctx context.Context, c channels.ApprovalCard, always bool) (string, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return "", errors.New("not connected")
	}
	id := c.ToolCallID
	if id == "" {
		id = "approval-" + c.ID
	}
	p.mu.Lock()
	ws := p.st.ws
	p.mu.Unlock()
	resp, err := conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: p.id,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(id), Title: sdk.Ptr(titleOr(c.Summary, c.Tool)),
			Status: sdk.Ptr(sdk.ToolCallStatusPending), Content: pendingContent(c, ws)},
		Options: permissionOptionsV1(c, always),
		Meta:    map[string]any{"approvalId": c.ID, "rule": c.Rule, "approvers": c.Approvers}})
	if err != nil {
		return "", err
	}
	return decisionV1(resp.Outcome)
}

// replay shows one past message: the person's text, the agent's tool
// calls with their outcome and its text, notices and pending asks.
func (p *peerV1) replay(ctx context.Context, it channels.HistoryItem) {
	var us []sdk.SessionUpdate
	p.mu.Lock()
	switch it.Role {
	case channels.RoleUser:
		if t := it.Message.Markdown(); t != "" {
			us = append(us, sdk.UpdateUserMessageText(t))
		}
	default:
		for _, part := range it.Message.Parts {
			switch x := part.(type) {
			case channels.ToolActivity:
				us = append(us, p.st.tool(x, nil)...)
			case channels.Text:
				if x.Markdown != "" {
					us = append(us, sdk.UpdateAgentMessageText(x.Markdown+"\n\n"))
				}
			case channels.Reasoning:
				us = append(us, sdk.UpdateAgentThoughtText(x.Text))
			case channels.Plan:
				us = append(us, planV1(x))
			case channels.Notice:
				us = append(us, sdk.UpdateAgentMessageText(x.Text+"\n\n"))
			}
		}
	}
	p.mu.Unlock()
	p.send(ctx, us)
}

func (p *peerV1) commands(ctx context.Context, cmds []channels.Command) {
	var list []sdk.AvailableCommand
	for _, c := range cmds {
		ac := sdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Args != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.Args}}
		}
		list = append(list, ac)
	}
	p.send(ctx, []sdk.SessionUpdate{{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: list}}})
}

func (p *peerV1) readFile(ctx context.Context, path string) (string, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return "", errors.New("not connected")
	}
	res, err := conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: p.id, Path: path})
	if err != nil {
		return "", clientErrV1(err)
	}
	return res.Content, nil
}

func (p *peerV1) writeFile(ctx context.Context, path, content string) error {
	conn := p.v.conn.Load()
	if conn == nil {
		return errors.New("not connected")
	}
	_, err := conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: p.id, Path: path, Content: content})
	return clientErrV1(err)
}

// runCommand runs a shell command line in a client terminal: create, wait
// for the exit (kill when ctx ends), read the output, release.
func (p *peerV1) runCommand(ctx context.Context, c channels.ClientCommand) (channels.ClientCommandResult, error) {
	conn := p.v.conn.Load()
	if conn == nil {
		return channels.ClientCommandResult{}, errors.New("not connected")
	}
	req := sdk.CreateTerminalRequest{SessionId: p.id, Command: "/bin/sh", Args: []string{"-c", c.Command}}
	if c.Cwd != "" {
		req.Cwd = sdk.Ptr(c.Cwd)
	}
	if c.OutputLimit > 0 {
		req.OutputByteLimit = sdk.Ptr(c.OutputLimit)
	}
	term, err := conn.CreateTerminal(ctx, req)
	if err != nil {
		return channels.ClientCommandResult{}, clientErrV1(err)
	}
	bg := context.WithoutCancel(ctx)
	defer func() {
		_, _ = conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: p.id, TerminalId: term.TerminalId})
	}()
	var res channels.ClientCommandResult
	exit, werr := conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: p.id, TerminalId: term.TerminalId})
	if werr != nil {
		_, _ = conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: p.id, TerminalId: term.TerminalId})
		res.ExitCode = -1
	} else {
		if exit.ExitCode != nil {
			res.ExitCode = *exit.ExitCode
		}
		if exit.Signal != nil {
			res.Signal, res.ExitCode = *exit.Signal, -1
		}
	}
	out, err := conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: p.id, TerminalId: term.TerminalId})
	if err == nil {
		res.Output, res.Truncated = out.Output, out.Truncated
	}
	if werr != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, clientErrV1(werr)
	}
	return res, nil
}

// clientErrV1 is a client's JSON-RPC error as plain text.
func clientErrV1(err error) error {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := re.Message
		if d, ok := re.Data.(map[string]any); ok {
			if e, ok := d["error"].(string); ok && e != "" {
				msg += ": " + e
			}
		}
		return errors.New(msg)
	}
	return err
}
