package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels/acp"
	"github.com/switchboard-gw/switchboard/gateway"
)

func newACPCmd(s *streams) *cobra.Command {
	var agentName string
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Speak the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Emacs agent-shell)",
		Long: `Speak the Agent Client Protocol (version 1) on stdin and stdout, so an editor
drives the agent: streamed answers and thoughts, tool calls with diffs,
permission requests for asks, plans, cancel, and the agent's conversations
to list and continue — those started in a chat thread too.

Configure the editor to run "switchboard acp" (see the README). Only protocol
bytes go to stdout; logs go to stderr. The person in the editor is
local:<OS user>, an admin; each session works in the directory the editor
opened. A session may name another agent in _meta.agent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runACP(cmd.Context(), s, agentName)
		},
	}
	cmd.Flags().StringVar(&agentName, "agent", "main", "the agent of new sessions and of session lists")
	return cmd
}

// runACP serves ACP until the editor closes the connection or a signal
// comes.
func runACP(ctx context.Context, s *streams, agentName string) error {
	sig := ctx
	ctx = context.WithoutCancel(ctx)
	a, err := openApp(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	def, err := a.agent(ctx, agentName, agentOptions{})
	if err != nil {
		return err
	}
	h := &acpHost{a: a, def: def.ID(), sessions: newLocalSessions(), agents: map[string]*agentcore.Agent{}}
	defer h.closeAll()
	ad, err := acp.New(acp.Options{In: s.in, Out: s.out, User: localUser(), Admin: true, Host: h,
		Vision: a.cfg.Providers[a.cfg.Agents[def.ID()].Provider].Vision, Version: version, Logger: a.log})
	if err != nil {
		return err
	}
	opts := a.localGatewayOptions(def, h.sessions, "")
	opts.AgentFor = h.agentFor
	// Sessions may talk to any configured agent (_meta.agent): the
	// approval rules and vision of each apply.
	for name, ac := range a.cfg.Agents {
		opts.AgentOptions[name] = gateway.AgentOptions{Approvers: ac.Approvers, Vision: a.cfg.Providers[ac.Provider].Vision, MaxTasks: ac.MaxTasks}
	}
	g, err := gateway.New(opts, ad)
	if err != nil {
		return err
	}
	gctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(gctx, 5*time.Second) }()
	select {
	case <-ad.Done():
	case <-sig.Done():
	}
	stop()
	return <-done
}

// acpHost makes the sessions of `switchboard acp`: each is a conversation
// at its own location local:acp:<conversation>:<random> with a presence
// lease, worked by an agent built for the editor's directory.
type acpHost struct {
	a        *app
	def      string
	sessions *localSessions

	mu     sync.Mutex
	agents map[string]*agentcore.Agent // by conversation
}

// settingWorkspace records, per conversation, the directory an editor
// opened it in (scope "conversation:<id>").
const settingWorkspace = "acp_workspace"

func conversationScope(conv string) string { return "conversation:" + conv }

// agentFor is the gateway's AgentFor: a session's own agent.
func (h *acpHost) agentFor(conv string) *agentcore.Agent {
	h.mu.Lock()
	ag := h.agents[conv]
	h.mu.Unlock()
	if ag != nil {
		return ag
	}
	// A sub-agent task's child works with the agent (and workspace) of
	// the session whose turn started it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range agentcore.MaxTaskDepth {
		t, err := h.a.store.TaskOfConversation(ctx, conv)
		if err != nil {
			return nil
		}
		conv = t.ParentConversationID
		h.mu.Lock()
		ag = h.agents[conv]
		h.mu.Unlock()
		if ag != nil {
			return ag
		}
	}
	return nil
}

// sessionWorkspace checks the editor's directory.
func sessionWorkspace(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("the session's cwd %q is not an absolute path; the editor must send the project's directory", cwd)
	}
	cwd = filepath.Clean(cwd)
	fi, err := os.Stat(cwd)
	if err != nil {
		return "", fmt.Errorf("the session's directory %s: %w", cwd, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the session's cwd %s is not a directory", cwd)
	}
	return cwd, nil
}

// NewSession implements acp.Host.
func (h *acpHost) NewSession(ctx context.Context, req acp.SessionRequest) (acp.SessionSpec, error) {
	name := req.Agent
	if name == "" {
		name = h.def
	}
	ws, err := sessionWorkspace(req.Cwd)
	if err != nil {
		return acp.SessionSpec{}, err
	}
	ag, err := h.a.agent(ctx, name, agentOptions{workspace: ws})
	if err != nil {
		return acp.SessionSpec{}, err
	}
	conv, err := ag.NewConversation(ctx)
	if err != nil {
		return acp.SessionSpec{}, err
	}
	return h.open(ctx, ag, conv.ID, ws)
}

// OpenSession implements acp.Host.
func (h *acpHost) OpenSession(ctx context.Context, req acp.SessionRequest) (acp.SessionSpec, error) {
	c, err := h.a.store.Conversation(ctx, req.ConversationID)
	if errors.Is(err, agentcore.ErrNotFound) {
		return acp.SessionSpec{}, fmt.Errorf("no conversation %s: session/list shows those you can load", req.ConversationID)
	}
	if err != nil {
		return acp.SessionSpec{}, err
	}
	if _, ok := h.a.cfg.Agents[c.AgentID]; !ok {
		return acp.SessionSpec{}, fmt.Errorf("conversation %s belongs to agent %s, which is not in the configuration", c.ID, c.AgentID)
	}
	ws, err := sessionWorkspace(req.Cwd)
	if err != nil {
		return acp.SessionSpec{}, err
	}
	ag, err := h.a.agent(ctx, c.AgentID, agentOptions{workspace: ws})
	if err != nil {
		return acp.SessionSpec{}, err
	}
	return h.open(ctx, ag, c.ID, ws)
}

// open binds a fresh location of this process to the conversation and
// starts working it.
func (h *acpHost) open(ctx context.Context, ag *agentcore.Agent, conv, ws string) (acp.SessionSpec, error) {
	ls, err := h.a.newLocalSession(ctx, "acp", ag.ID(), conv)
	if err != nil {
		return acp.SessionSpec{}, err
	}
	if err := h.a.store.SetSetting(ctx, conversationScope(conv), settingWorkspace, ws); err != nil {
		h.a.log.Warn("record the session's directory", "conversation", conv, "err", err)
	}
	h.mu.Lock()
	h.agents[conv] = ag
	h.mu.Unlock()
	if old := h.sessions.add(ls); old != nil {
		old.Close()
	}
	st, err := h.Settings(ctx, conv)
	if err != nil {
		h.CloseSession(ctx, conv)
		return acp.SessionSpec{}, err
	}
	h.a.log.Info("acp session", "conversation", conv, "agent", ag.ID(), "location", ls.loc.String(), "workspace", ws)
	return acp.SessionSpec{ConversationID: conv, Agent: ag.ID(), Location: ls.loc, Workspace: ws, Settings: st}, nil
}

// CloseSession implements acp.Host.
func (h *acpHost) CloseSession(ctx context.Context, conv string) {
	if ls := h.sessions.remove(conv); ls != nil {
		ls.Close()
	}
	h.mu.Lock()
	delete(h.agents, conv)
	h.mu.Unlock()
}

func (h *acpHost) closeAll() {
	for _, ls := range h.sessions.all() {
		h.CloseSession(context.Background(), ls.conv)
	}
}

// Settings implements acp.Host: the agent's durable mode and model, and
// the models configured for its provider.
func (h *acpHost) Settings(ctx context.Context, conv string) (acp.Settings, error) {
	ag := h.agentFor(conv)
	if ag == nil {
		return acp.Settings{}, fmt.Errorf("no session for conversation %s", conv)
	}
	if err := ag.LoadSettings(ctx); err != nil {
		return acp.Settings{}, err
	}
	cfg := ag.Config()
	return acp.Settings{Mode: string(cfg.Policy.Mode), Model: cfg.Model, Models: h.models(ag.ID())}, nil
}

// models are the models configured for an agent's provider (its own, the
// provider's, and other agents' on the same provider).
func (h *acpHost) models(agentID string) []string {
	cfg := h.a.cfg
	prov := cfg.Agents[agentID].Provider
	seen := map[string]bool{}
	var out []string
	add := func(m string) {
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	add(cfg.Providers[prov].Model)
	for _, ac := range cfg.Agents {
		if ac.Provider == prov {
			add(ac.Model)
		}
	}
	sort.Strings(out)
	return out
}

// Workspace implements acp.Host.
func (h *acpHost) Workspace(ctx context.Context, conv string) (string, bool) {
	if vals, err := h.a.store.Settings(ctx, conversationScope(conv)); err == nil && vals[settingWorkspace] != "" {
		return vals[settingWorkspace], true
	}
	if c, err := h.a.store.Conversation(ctx, conv); err == nil {
		return h.a.cfg.Agents[c.AgentID].Workspace, false
	}
	return "", false
}
