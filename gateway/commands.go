package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// helpText lists the commands.
const helpText = `**Commands**
/new — start a new conversation here
/stop — stop the running turn
/status — agent, model, mode, queue, pending approvals, context use
/approve [id] — approve a pending tool call (the id may be left out when one is pending)
/deny [id] [reason] — deny it
/queue [followup|collect|steer|interrupt] — what happens to messages sent while the agent works
/compact — summarize older context now
/memory [log|show REV|diff REV] — the agent's memory history
/help — this list
Admins: /mode <standard|acceptEdits|unrestricted|strict>, /memory revert REV, /pair approve CODE`

// command handles a slash command. handled=false lets the text go to the
// agent as an ordinary message (e.g. a path like /etc/hosts).
func (g *Gateway) command(ctx context.Context, channel string, in channels.Inbound, who string, admin bool) (bool, error) {
	fields := strings.Fields(strings.TrimSpace(in.Text))
	name := strings.ToLower(fields[0])
	if i := strings.IndexByte(name, '@'); i > 0 { // Telegram: /status@my_bot
		name = name[:i]
	}
	args := fields[1:]
	reply := func(md string) (bool, error) {
		g.post(ctx, in.Location, outMessage{Markdown: md})
		return true, nil
	}
	adminOnly := func() (bool, error) {
		return reply("Only an admin can use " + name + ".")
	}
	switch name {
	case "/help", "/start":
		if name == "/start" {
			return reply("Hi! Send me a message to talk with the agent.\n\n" + helpText)
		}
		return reply(helpText)
	case "/new", "/reset":
		co := g.opts.Channels[channel]
		agentID := co.Agent
		if b, ok, _ := g.binding(ctx, in.Location); ok {
			agentID = b.AgentID
			g.cancelTurn(b.ConversationID, errStopped)
		}
		b, err := g.bind(ctx, in.Location, agentID)
		if err != nil {
			return true, err
		}
		return reply(fmt.Sprintf("Started a new conversation with %s (`%s`).", agentID, b.ConversationID))
	case "/stop":
		b, ok, err := g.binding(ctx, in.Location)
		if err != nil || !ok {
			return reply("Nothing is running here.")
		}
		if g.cancelTurn(b.ConversationID, errStopped) {
			return reply("Stopping.")
		}
		return reply("Nothing is running here.")
	case "/status":
		return reply(g.status(ctx, channel, in.Location))
	case "/approve", "/deny":
		return reply(g.textDecision(ctx, in.Location, who, name, args))
	case "/queue":
		if len(args) == 0 {
			return reply("Queue mode here: **" + g.queueMode(in.Location) + "**. Choose followup, collect, steer or interrupt.")
		}
		switch args[0] {
		case QueueFollowup, QueueCollect, QueueSteer, QueueInterrupt:
			g.mu.Lock()
			g.queueMod[in.Location.String()] = args[0]
			g.mu.Unlock()
			return reply("Queue mode here is now **" + args[0] + "**.")
		}
		return reply("Unknown queue mode " + channels.EscapeMarkdown(args[0]) + ": choose followup, collect, steer or interrupt.")
	case "/compact":
		b, ok, err := g.binding(ctx, in.Location)
		if err != nil || !ok {
			return reply("There is no conversation here yet.")
		}
		ag, ok := g.opts.Agents[b.AgentID]
		if !ok {
			return reply("The agent of this conversation is not running.")
		}
		res, err := ag.Compact(ctx, b.ConversationID)
		if errors.Is(err, agentcore.ErrBusy) {
			return reply("The agent is working; try /compact when it has finished.")
		}
		if err != nil {
			return reply("Compaction failed: " + channels.EscapeMarkdown(err.Error()))
		}
		if !res.Compacted {
			return reply("Nothing to compact yet.")
		}
		return reply(res.Note)
	case "/memory":
		return reply(g.memoryCommand(ctx, in.Location, args, admin))
	case "/mode", "/model":
		if !admin {
			return adminOnly()
		}
		return reply(g.reconfigure(ctx, in.Location, name, args))
	case "/pair":
		if !admin {
			return adminOnly()
		}
		if len(args) != 2 || args[0] != "approve" {
			return reply("Usage: /pair approve CODE")
		}
		p, err := g.opts.Store.ApprovePairing(ctx, strings.ToUpper(args[1]), g.opts.Now().UTC())
		if errors.Is(err, ErrNotFound) {
			return reply("No pending pairing code " + channels.EscapeMarkdown(args[1]) + " (codes expire after an hour).")
		}
		if err != nil {
			return true, err
		}
		if loc, err := channels.ParseLocation(p.Location); err == nil {
			g.post(ctx, loc, outMessage{Markdown: "You are paired. Send me a message to start."})
		}
		return reply(fmt.Sprintf("Paired %s (%s).", channels.EscapeMarkdown(p.UserName), channels.QualifiedID(p.Channel, p.UserID)))
	}
	if looksLikeCommand(name) {
		return reply("Unknown command " + channels.EscapeMarkdown(name) + ".\n\n" + helpText)
	}
	return false, nil
}

// looksLikeCommand tells "/foo" from a path such as "/etc/hosts".
func looksLikeCommand(name string) bool {
	if len(name) < 2 || strings.Count(name, "/") > 1 {
		return false
	}
	for _, r := range name[1:] {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// textDecision is the /approve and /deny fallback for platforms without
// buttons (or people who prefer typing).
func (g *Gateway) textDecision(ctx context.Context, loc channels.Location, who, name string, args []string) string {
	b, ok, err := g.binding(ctx, loc)
	if err != nil || !ok {
		return "There is no conversation here."
	}
	pending, err := g.opts.AgentStore.PendingApprovals(ctx, b.ConversationID)
	if err != nil {
		return "Could not read the pending approvals; try again."
	}
	var id string
	rest := args
	if len(args) > 0 {
		for _, p := range pending {
			if p.ID == args[0] {
				id, rest = p.ID, args[1:]
			}
		}
	}
	if id == "" {
		switch len(pending) {
		case 0:
			return "Nothing is waiting for approval here."
		case 1:
			id = pending[0].ID
		default:
			var ids []string
			for _, p := range pending {
				ids = append(ids, "`"+p.ID+"` "+clipString(p.Summary, 60))
			}
			return "Several approvals are pending; name one:\n" + strings.Join(ids, "\n")
		}
	}
	action := ButtonApprove
	if name == "/deny" {
		action = ButtonDeny
	}
	text, _ := g.decide(ctx, id, action, who, strings.Join(rest, " "))
	return text
}

func (g *Gateway) status(ctx context.Context, channel string, loc channels.Location) string {
	b, ok, err := g.binding(ctx, loc)
	agentID := g.opts.Channels[channel].Agent
	if ok {
		agentID = b.AgentID
	}
	ag := g.opts.Agents[agentID]
	if ag == nil {
		return "No agent is configured here."
	}
	cfg := ag.Config()
	var sb strings.Builder
	fmt.Fprintf(&sb, "**Agent** %s · **model** %s · **mode** %s\n", agentID, orUnset(cfg.Model), cfg.Policy.Mode)
	if g.opts.ModelProblem != "" {
		fmt.Fprintf(&sb, "⚠ %s\n", g.opts.ModelProblem)
	}
	g.mu.Lock()
	notice := g.modelNotice
	g.mu.Unlock()
	if notice != "" {
		fmt.Fprintf(&sb, "⚠ %s\n", notice)
	}
	if err != nil || !ok {
		sb.WriteString("No conversation here yet.")
		return sb.String()
	}
	items, _ := g.opts.Store.Pending(ctx, b.ConversationID)
	pending, _ := g.opts.AgentStore.PendingApprovals(ctx, b.ConversationID)
	g.mu.Lock()
	_, running := g.running[b.ConversationID]
	g.mu.Unlock()
	fmt.Fprintf(&sb, "**Conversation** `%s` · %s · queue %d · pending approvals %d · queue mode %s\n",
		b.ConversationID, map[bool]string{true: "working", false: "idle"}[running], len(items), len(pending), g.queueMode(loc))
	if runs, err := g.opts.AgentStore.RecentRuns(ctx, b.ConversationID, 1); err == nil && len(runs) > 0 && cfg.ContextWindow > 0 {
		last := runs[0]
		if last.Usage.InputTokens > 0 {
			fmt.Fprintf(&sb, "**Context** %d of %d tokens (%d%%), %d cached\n", last.Usage.InputTokens, cfg.ContextWindow,
				last.Usage.InputTokens*100/int64(cfg.ContextWindow), last.Usage.CachedTokens)
		}
	}
	for _, p := range pending {
		fmt.Fprintf(&sb, "• `%s` %s\n", p.ID, clipString(p.Summary, 80))
	}
	return strings.TrimSpace(sb.String())
}

func orUnset(s string) string {
	if s == "" {
		return "(not set)"
	}
	return s
}
