package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// command is one entry of the command table: it feeds /help, dispatch and
// each adapter's native registration (channels.CommandRegistrar).
type command struct {
	name    string
	aliases []string
	args    string
	desc    string
	admin   bool // admins only
	// now: acts at once on the delivery path (fast, and must reach a running
	// or parked turn); otherwise the command is a queue item of the
	// location's conversation, worked in order with its messages.
	now bool
	run func(ctx context.Context, c *cmdCtx) string
}

// cmdCtx is one invocation.
type cmdCtx struct {
	env       *env
	workers   *workers
	approvals *approvals
	outbox    *outbox
	tasks     *tasks
	notice    func() string
	loc       channels.Location
	who       string // qualified id
	userID    string
	admin     bool
	args      []string
	binding   Binding
	bound     bool
	itemID    int64 // the queue item of a queued command
}

// commandTable lists every command, in /help order.
func commandTable() []command {
	return []command{
		{name: "new", aliases: []string{"reset"}, desc: "start a new conversation here", run: cmdNew},
		{name: "stop", args: "[task id]", desc: "stop the running turn and its sub-agent tasks (or one task)", now: true, run: cmdStop},
		{name: "tasks", desc: "this conversation's sub-agent tasks, running and recent", now: true, run: cmdTasks},
		{name: "status", desc: "agent, model, mode, queue, pending approvals, context use", now: true, run: cmdStatus},
		{name: "approve", args: "[id]", desc: "approve a pending tool call (the id may be left out when one is pending)", now: true, run: cmdDecide(ButtonApprove)},
		{name: "deny", args: "[id] [reason]", desc: "deny a pending tool call", now: true, run: cmdDecide(ButtonDeny)},
		{name: "queue", args: "[followup|collect|steer|interrupt]", desc: "what happens to messages sent while the agent works", now: true, run: cmdQueue},
		{name: "compact", desc: "summarize older context now", run: cmdCompact},
		{name: "memory", args: "[log|show REV|diff REV]", desc: "the agent's memory history", run: cmdMemory},
		{name: "help", aliases: []string{"start"}, desc: "this list", now: true, run: cmdHelp},
		{name: "mode", args: "<standard|acceptEdits|unrestricted|strict>", desc: "the agent's permission mode", admin: true, run: cmdMode},
		{name: "model", args: "<name>", desc: "the agent's model", admin: true, run: cmdModel},
		{name: "pair", args: "approve CODE", desc: "let the person who got this pairing code talk to the agent", admin: true, run: cmdPair},
	}
}

// lookupCommand finds a command by name or alias.
func lookupCommand(name string) (command, bool) {
	for _, c := range commandTable() {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
	}
	return command{}, false
}

// nativeCommands is the table as adapters register it.
func nativeCommands() []channels.Command {
	var out []channels.Command
	for _, c := range commandTable() {
		out = append(out, channels.Command{Name: c.name, Args: c.args, Description: c.desc, AdminOnly: c.admin})
	}
	return out
}

// helpText is /help, from the table.
func helpText() string {
	var b, admin strings.Builder
	b.WriteString("**Commands**\n")
	for _, c := range commandTable() {
		line := "/" + c.name
		if c.args != "" {
			line += " " + c.args
		}
		if c.admin {
			fmt.Fprintf(&admin, "%s — %s\n", line, c.desc)
			continue
		}
		fmt.Fprintf(&b, "%s — %s\n", line, c.desc)
	}
	if admin.Len() > 0 {
		b.WriteString("Admins:\n" + admin.String())
	}
	return strings.TrimSpace(b.String())
}

// parseCommand splits "/name args" into the command name and its
// arguments; ok is false for text that is no command (channels.CommandName).
func parseCommand(text string) (name string, args []string, ok bool) {
	name = channels.CommandName(text)
	if name == "" {
		return "", nil, false
	}
	return name, strings.Fields(text)[1:], true
}

// command handles a /command from an inbound: immediate commands run now,
// unknown and refused ones are answered now (each once: a platform retry,
// or an adapter's catch-up handing the message over again, is dropped by
// the dedupe key), the others are queued in the location's conversation.
func (in *intake) command(ctx context.Context, s sender, msg channels.Inbound, name string, args []string) error {
	e := in.env
	c, known := lookupCommand(name)
	if !known || (c.admin && !s.admin) {
		if fresh, err := in.claim(ctx, msg); err != nil || !fresh {
			return err
		}
		if !known {
			in.reply(ctx, msg, s, "Unknown command /"+channels.EscapeMarkdown(name)+".\n\n"+helpText(), false)
		} else {
			in.reply(ctx, msg, s, "Only an admin can use /"+c.name+".", true)
		}
		return nil
	}
	b, bound, err := in.binding(ctx, msg.Location)
	if err != nil {
		return err
	}
	if c.now {
		if fresh, err := in.claim(ctx, msg); err != nil || !fresh {
			return err
		}
		cc := &cmdCtx{env: e, workers: in.workers, approvals: in.approvals, outbox: in.outbox, tasks: in.tasks, notice: in.notice,
			loc: msg.Location, who: s.who, userID: msg.User.ID, admin: s.admin, args: args, binding: b, bound: bound}
		in.outbox.post(ctx, msg.Location, replyMessage(c.run(ctx, cc), msg.MessageID))
		return nil
	}
	if !bound {
		if b, err = in.bindNew(ctx, msg.Location, e.channel(msg.Location.Channel).Agent); err != nil {
			return err
		}
	}
	p := messagePayload{EventID: msg.EventID, MessageID: msg.MessageID, Text: strings.TrimSpace(msg.Text), Who: s.who,
		UserID: msg.User.ID, Name: displayName(msg.User), Admin: s.admin}
	_, enqueued, err := in.enqueue(ctx, b, ItemCommand, msg, p)
	if err != nil || !enqueued {
		return err
	}
	in.workers.kick(b.ConversationID)
	return nil
}

// claim records the dedupe key of an inbound answered without a queue
// item; fresh is false when it was seen before (and counted as a
// duplicate). An inbound without an event id is always fresh.
func (in *intake) claim(ctx context.Context, msg channels.Inbound) (fresh bool, err error) {
	if msg.EventID == "" {
		return true, nil
	}
	e := in.env
	fresh, err = e.opts.Store.ClaimDedupe(ctx, msg.Location.Channel+":"+msg.EventID, e.opts.DedupeTTL)
	if err != nil {
		return false, err
	}
	if !fresh {
		e.metrics.Duplicates.WithLabelValues(msg.Location.Channel).Inc()
	}
	return fresh, nil
}

// reply answers a person's message outside a turn; refusals go only to
// them where the surface can.
func (in *intake) reply(ctx context.Context, msg channels.Inbound, s sender, md string, refusal bool) {
	m := replyMessage(md, msg.MessageID)
	if refusal {
		in.outbox.postTo(ctx, msg.Location, s.user.ID, m)
		return
	}
	in.outbox.post(ctx, msg.Location, m)
}

func replyMessage(md, replyTo string) channels.Message {
	m := channels.TextMessage(md)
	m.ReplyTo = replyTo
	return m
}

// runQueuedCommand works a command queue item: the reply is queued in the
// transaction that completes the item, so a command runs to one answer.
func (p *processor) runQueuedCommand(ctx context.Context, it Item, loc channels.Location, pl messagePayload) error {
	e := p.env
	name, args, _ := parseCommand(pl.Text)
	c, ok := lookupCommand(name)
	reply := "Unknown command /" + channels.EscapeMarkdown(name) + "."
	if ok {
		b, bound, err := lookupBinding(ctx, e, loc)
		if err != nil {
			return err
		}
		cc := &cmdCtx{env: e, workers: p.workers, approvals: p.approvals, outbox: p.outbox, tasks: p.tasks, notice: p.notice,
			loc: loc, who: pl.Who, userID: pl.UserID, admin: pl.Admin, args: args, binding: b, bound: bound, itemID: it.ID}
		reply = c.run(ctx, cc)
	}
	out, ok := p.outbox.item(OutboundSend, loc, replyMessage(reply, pl.MessageID))
	var items []Outbound
	if ok {
		items = append(items, out)
	}
	if _, err := e.opts.Store.CompleteWithOutbound(context.WithoutCancel(ctx), it.ID, items...); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("complete command item %d: %w", it.ID, err)
	}
	e.log.Info("command", "command", name, "by", pl.Who, "location", it.Location)
	p.outbox.kick()
	return nil
}

func cmdHelp(_ context.Context, c *cmdCtx) string { return helpText() }

func cmdNew(ctx context.Context, c *cmdCtx) string {
	agentID := c.env.channel(c.loc.Channel).Agent
	if c.bound {
		agentID = c.binding.AgentID
		if c.binding.ConversationID != "" {
			c.workers.cancel(c.binding.ConversationID, errStopped)
		}
	}
	b, err := newBinding(ctx, c.env, c.loc, agentID)
	if err != nil {
		return "Could not start a new conversation: " + channels.EscapeMarkdown(err.Error())
	}
	// Messages sent after /new go to the new conversation.
	if err := c.env.opts.Store.Rebind(ctx, b, c.itemID); err != nil {
		return "Could not start a new conversation: " + channels.EscapeMarkdown(err.Error())
	}
	c.workers.kick(b.ConversationID)
	return fmt.Sprintf("Started a new conversation with %s (`%s`).", agentID, b.ConversationID)
}

func cmdStop(ctx context.Context, c *cmdCtx) string {
	if !c.bound {
		return "Nothing is running here."
	}
	if len(c.args) > 0 {
		return stopOneTask(ctx, c, c.args[0])
	}
	turn := c.workers.cancel(c.binding.ConversationID, errStopped)
	n := c.tasks.stopAll(ctx, c.binding.ConversationID, "stopped with /stop by "+c.who)
	switch {
	case turn && n > 0:
		return fmt.Sprintf("Stopping the turn and %d sub-agent task(s).", n)
	case turn:
		return "Stopping."
	case n > 0:
		return fmt.Sprintf("Stopping %d sub-agent task(s).", n)
	}
	return "Nothing is running here."
}

func cmdQueue(ctx context.Context, c *cmdCtx) string {
	if len(c.args) == 0 {
		return "Queue mode here: **" + queueModeAt(ctx, c.env, c.loc) + "**. Choose followup, collect, steer or interrupt."
	}
	switch c.args[0] {
	case QueueFollowup, QueueCollect, QueueSteer, QueueInterrupt:
		if err := c.env.opts.Store.SetSetting(ctx, locationScope(c.loc), settingQueueMode, c.args[0]); err != nil {
			return "Could not store the queue mode; try again."
		}
		return "Queue mode here is now **" + c.args[0] + "**."
	}
	return "Unknown queue mode " + channels.EscapeMarkdown(c.args[0]) + ": choose followup, collect, steer or interrupt."
}

func cmdCompact(ctx context.Context, c *cmdCtx) string {
	if !c.bound {
		return "There is no conversation here yet."
	}
	ag, ok := c.env.agentOf(c.binding.ConversationID, c.binding.AgentID)
	if !ok {
		return "The agent of this conversation is not running."
	}
	res, err := ag.Compact(ctx, c.binding.ConversationID)
	if errors.Is(err, agentcore.ErrBusy) {
		return "The agent is working; try /compact when it has finished."
	}
	if err != nil {
		return "Compaction failed: " + channels.EscapeMarkdown(err.Error())
	}
	if !res.Compacted {
		return "Nothing to compact yet."
	}
	return res.Note
}

func cmdPair(ctx context.Context, c *cmdCtx) string {
	if len(c.args) != 2 || c.args[0] != "approve" {
		return "Usage: /pair approve CODE"
	}
	p, err := c.env.opts.Store.ApprovePairing(ctx, strings.ToUpper(c.args[1]), c.env.now().UTC())
	if errors.Is(err, ErrNotFound) {
		return "No pending pairing code " + channels.EscapeMarkdown(c.args[1]) + " (codes expire after an hour)."
	}
	if err != nil {
		return "Could not approve the code; try again."
	}
	if loc, err := channels.ParseLocation(p.Location); err == nil {
		c.outbox.post(ctx, loc, channels.TextMessage("You are paired. Send me a message to start."))
	}
	c.env.log.Info("paired", "user", channels.QualifiedID(p.Channel, p.UserID), "by", c.who)
	return fmt.Sprintf("Paired %s (%s).", channels.EscapeMarkdown(p.UserName), channels.QualifiedID(p.Channel, p.UserID))
}

// agentAt is the agent of a location: its binding's, else the channel's.
func (c *cmdCtx) agentAt() (*agentcore.Agent, bool) {
	if c.bound {
		return c.env.agentOf(c.binding.ConversationID, c.binding.AgentID)
	}
	ag, ok := c.env.opts.Agents[c.env.channel(c.loc.Channel).Agent]
	return ag, ok
}

func cmdMemory(ctx context.Context, c *cmdCtx) string {
	m, ok := c.agentAt()
	if !ok {
		return "No agent here."
	}
	sub := "log"
	if len(c.args) > 0 {
		sub = strings.ToLower(c.args[0])
	}
	var text string
	var err error
	switch {
	case sub == "log":
		text, err = m.MemoryLogText(ctx, 10)
	case (sub == "show" || sub == "diff") && len(c.args) == 2:
		text, err = m.MemoryShowText(ctx, c.args[1])
	case sub == "revert" && len(c.args) == 2:
		if !c.admin {
			return "Only an admin can revert memory."
		}
		text, err = m.MemoryRevertText(ctx, c.args[1])
	default:
		return "Usage: /memory [log | show REV | diff REV | revert REV]"
	}
	if err != nil {
		return "Memory: " + channels.EscapeMarkdown(err.Error())
	}
	return text
}

func cmdMode(ctx context.Context, c *cmdCtx) string  { return reconfigure(ctx, c, true) }
func cmdModel(ctx context.Context, c *cmdCtx) string { return reconfigure(ctx, c, false) }

// reconfigure is /mode and /model: durable, for every conversation of the
// agent from its next turn.
func reconfigure(ctx context.Context, c *cmdCtx, isMode bool) string {
	ag, ok := c.agentAt()
	if !ok {
		return "No agent here."
	}
	if len(c.args) != 1 {
		if isMode {
			return "Usage: /mode <standard|acceptEdits|unrestricted|strict>"
		}
		return "Usage: /model <name>"
	}
	var err error
	what := "model"
	if isMode {
		what = "permission mode"
		err = ag.SetMode(ctx, c.args[0])
	} else {
		err = ag.SetModel(ctx, c.args[0])
	}
	if err != nil {
		return channels.EscapeMarkdown(err.Error())
	}
	c.env.log.Info("agent reconfigured", "agent", ag.ID(), "setting", what, "value", c.args[0], "by", c.who)
	return "The " + what + " of " + ag.ID() + " is now **" + channels.EscapeMarkdown(c.args[0]) + "**."
}
