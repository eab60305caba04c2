package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// intake is the part of the gateway that accepts what adapters read: it
// authenticates people, runs pairing, drops platform retries, resolves the
// binding and writes a queue item durably before the adapter may
// acknowledge. Only /stop, /approve, /deny and the other immediate commands
// act at once; nothing slow runs on an adapter's delivery path.
type intake struct {
	env       *env
	workers   *workers
	approvals *approvals
	outbox    *outbox
	tasks     *tasks
	notice    func() string
}

// handler is the channels.Handler the gateway gives one adapter.
type handler struct {
	in      *intake
	channel string
}

func (h *handler) OnInbound(ctx context.Context, in channels.Inbound) error {
	return h.in.inbound(ctx, h.channel, in)
}

func (h *handler) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	return h.in.action(ctx, h.channel, a)
}

// sender is who wrote an inbound, as the gateway judges them.
type sender struct {
	channel string
	who     string // qualified id
	user    channels.User
	admin   bool
}

func (in *intake) inbound(ctx context.Context, channel string, msg channels.Inbound) error {
	_, err := in.queue(ctx, channel, msg)
	return err
}

// queue accepts an inbound (see inbound) and says which input it became.
func (in *intake) queue(ctx context.Context, channel string, msg channels.Inbound) (channels.Queued, error) {
	var none channels.Queued
	ignored := channels.Queued{Ignored: true}
	e := in.env
	e.metrics.Inbound.WithLabelValues(channel).Inc()
	co := e.channel(channel)
	msg.Location.Channel = channel
	s := sender{channel: channel, who: channels.QualifiedID(channel, msg.User.ID), user: msg.User}
	allowed, admin, err := in.authorize(ctx, channel, msg)
	if err != nil {
		return none, err
	}
	s.admin = admin
	if !allowed {
		if msg.DirectMessage {
			return none, in.startPairing(ctx, channel, msg)
		}
		e.log.Debug("ignored message from unknown user in a group", "channel", channel, "user", s.who)
		return ignored, nil
	}
	b, bound, err := in.binding(ctx, msg.Location)
	if err != nil {
		return none, err
	}
	if !msg.DirectMessage && co.RequireMention && !msg.Mentioned && !msg.ReplyToBot && !(bound && msg.Location.ThreadID != "") {
		e.log.Debug("ignored group message without a mention", "channel", channel, "location", msg.Location.String(), "event", msg.EventID)
		return ignored, nil
	}
	text := strings.TrimSpace(msg.Text)
	if cmd, args, ok := parseCommand(text); ok {
		return none, in.command(ctx, s, msg, cmd, args)
	}
	if text == "" && len(msg.Attachments) == 0 {
		return ignored, nil
	}
	if e.opts.ModelProblem != "" {
		in.outbox.post(ctx, msg.Location, channels.Message{Parts: []channels.Part{channels.Notice{Text: e.opts.ModelProblem}}})
		return none, nil
	}
	// An unbound location gets its conversation with its first message, in
	// the same write (EnqueueNew), unless the surface reopens a listed one.
	var fresh *agentcore.Conversation
	if !bound {
		if b, fresh, err = in.bindFor(ctx, msg.Location, co); err != nil {
			return none, err
		}
	}
	p := messagePayload{EventID: msg.EventID, MessageID: msg.MessageID, Text: msg.Text, Who: s.who, UserID: msg.User.ID,
		Name: displayName(msg.User), Origin: origin(channel, msg)}
	for _, a := range msg.Attachments {
		if len(a.Data) > 0 {
			p.Attachments = append(p.Attachments, attachmentData{Name: a.Name, MIME: a.MIME, Data: a.Data})
		}
	}
	b, id, enqueued, err := in.enqueueTo(ctx, b, fresh, ItemMessage, msg, p)
	if err != nil {
		return none, err
	}
	q := channels.Queued{ConversationID: b.ConversationID, Duplicate: !enqueued}
	if id != 0 {
		q.InputID = inputID(Item{ConversationID: b.ConversationID, ID: id})
	}
	if !enqueued {
		return q, nil
	}
	if in.workers.queueMode(ctx, msg.Location) == QueueInterrupt {
		in.workers.cancel(b.ConversationID, errInterrupted)
	}
	in.workers.kick(b.ConversationID)
	return q, nil
}

// enqueue writes an item (deduped on the platform's event id) and reports
// its id and whether it is new (a duplicate's id is the first item's, when
// the store knows it).
func (in *intake) enqueue(ctx context.Context, b Binding, kind ItemKind, msg channels.Inbound, p messagePayload) (int64, bool, error) {
	_, id, enqueued, err := in.enqueueTo(ctx, b, nil, kind, msg, p)
	return id, enqueued, err
}

// enqueueTo is enqueue; with fresh, b binds a new conversation that is
// stored with the item (EnqueueNew), and the binding the item went to is
// returned.
func (in *intake) enqueueTo(ctx context.Context, b Binding, fresh *agentcore.Conversation, kind ItemKind, msg channels.Inbound, p messagePayload) (Binding, int64, bool, error) {
	e := in.env
	body, err := encodePayload(p)
	if err != nil {
		return b, 0, false, err
	}
	key := ""
	if msg.EventID != "" {
		key = msg.Location.Channel + ":" + msg.EventID
	}
	it := Item{
		ConversationID: b.ConversationID,
		AgentID:        b.AgentID,
		Kind:           kind,
		Location:       msg.Location.String(),
		Payload:        body,
		Created:        e.now().UTC(),
	}
	var (
		id       int64
		enqueued bool
	)
	if fresh != nil {
		b, id, enqueued, err = e.opts.Store.EnqueueNew(ctx, *fresh, b, it, key, e.opts.DedupeTTL)
	} else {
		id, enqueued, err = e.opts.Store.Enqueue(ctx, it, key, e.opts.DedupeTTL)
	}
	if err != nil {
		return b, 0, false, fmt.Errorf("queue %s: %w", kind, err)
	}
	if !enqueued {
		e.metrics.Duplicates.WithLabelValues(msg.Location.Channel).Inc()
	}
	return b, id, enqueued, nil
}

// bindFor binds an unbound location to the conversation its chat id names
// (surfaces that reopen listed conversations), or else plans its binding to
// a new conversation of the channel's agent: fresh is that conversation,
// not stored yet (enqueueTo stores it with the message).
func (in *intake) bindFor(ctx context.Context, loc channels.Location, co ChannelOptions) (b Binding, fresh *agentcore.Conversation, err error) {
	e := in.env
	if co.BrowseByConversation {
		if c, err := e.opts.AgentStore.Conversation(ctx, loc.ChatID); err == nil {
			if _, ok := e.opts.Agents[c.AgentID]; ok {
				b := Binding{Location: loc.String(), AgentID: c.AgentID, ConversationID: c.ID, Created: e.now().UTC()}
				if err := e.opts.Store.Bind(ctx, b); err != nil {
					return Binding{}, nil, fmt.Errorf("bind %s: %w", loc, err)
				}
				return b, nil, nil
			}
		}
	}
	ag, ok := e.opts.Agents[co.Agent]
	if !ok {
		return Binding{}, nil, fmt.Errorf("unknown agent %q", co.Agent)
	}
	conv := ag.ConversationRecord()
	return Binding{Location: loc.String(), AgentID: co.Agent, ConversationID: conv.ID, Created: e.now().UTC()}, &conv, nil
}

// bindNew creates a new conversation for a location.
func (in *intake) bindNew(ctx context.Context, loc channels.Location, agentID string) (Binding, error) {
	b, err := newBinding(ctx, in.env, loc, agentID)
	if err != nil {
		return Binding{}, err
	}
	if err := in.env.opts.Store.Bind(ctx, b); err != nil {
		return Binding{}, fmt.Errorf("bind %s: %w", loc, err)
	}
	return b, nil
}

// newBinding creates a conversation of agentID for loc (not yet bound).
func newBinding(ctx context.Context, e *env, loc channels.Location, agentID string) (Binding, error) {
	ag, ok := e.opts.Agents[agentID]
	if !ok {
		return Binding{}, fmt.Errorf("unknown agent %q", agentID)
	}
	conv, err := ag.NewConversation(ctx)
	if err != nil {
		return Binding{}, err
	}
	return Binding{Location: loc.String(), AgentID: agentID, ConversationID: conv.ID, Created: e.now().UTC()}, nil
}

// binding returns the binding of a location.
func (in *intake) binding(ctx context.Context, loc channels.Location) (Binding, bool, error) {
	return lookupBinding(ctx, in.env, loc)
}

func lookupBinding(ctx context.Context, e *env, loc channels.Location) (Binding, bool, error) {
	b, err := e.opts.Store.Binding(ctx, loc.String())
	if errors.Is(err, ErrNotFound) {
		return Binding{}, false, nil
	}
	if err != nil {
		return Binding{}, false, fmt.Errorf("look up binding: %w", err)
	}
	return b, true, nil
}

// action handles a button press: the one decide path, for the approval the
// token names.
func (in *intake) action(ctx context.Context, channel string, a channels.Action) (channels.ActionReply, error) {
	e := in.env
	e.metrics.Actions.WithLabelValues(channel).Inc()
	b, err := e.opts.Store.Button(ctx, a.Token)
	if errors.Is(err, ErrNotFound) {
		return channels.ActionReply{Text: "This button is no longer valid.", Alert: true}, nil
	}
	if err != nil {
		return channels.ActionReply{}, err
	}
	if b.Action == ButtonStop {
		return in.stopPressed(ctx, channel, a, b.ApprovalID)
	}
	res, err := in.approvals.decide(ctx, DecideRequest{ApprovalID: b.ApprovalID, Action: b.Action, By: channels.QualifiedID(channel, a.User.ID), Admin: a.RoleAdmin})
	if err != nil {
		return channels.ActionReply{Text: "Could not record the decision; try again.", Alert: true}, nil
	}
	return channels.ActionReply{Text: res.Reply, Alert: res.Refused}, nil
}

// stopPressed stops a running turn from its live message's Stop button:
// anyone who may talk in the chat may stop it.
func (in *intake) stopPressed(ctx context.Context, channel string, a channels.Action, conv string) (channels.ActionReply, error) {
	allowed, _, err := in.authorize(ctx, channel, channels.Inbound{User: a.User, RoleAllowed: a.RoleAllowed, RoleAdmin: a.RoleAdmin})
	if err != nil {
		return channels.ActionReply{}, err
	}
	if !allowed {
		return channels.ActionReply{Text: "Only people allowed in this chat can stop the agent.", Alert: true}, nil
	}
	if task, ok, err := in.tasks.of(ctx, conv); err == nil && ok {
		if in.tasks.stop(ctx, task, "stopped by "+channels.QualifiedID(channel, a.User.ID)) {
			in.env.log.Info("task stopped by button", "task", task.ID, "by", channels.QualifiedID(channel, a.User.ID))
			return channels.ActionReply{Text: "Stopping task " + task.ID + "."}, nil
		}
		return channels.ActionReply{Text: "Task " + task.ID + " has ended already."}, nil
	}
	if in.workers.cancel(conv, errStopped) {
		in.env.log.Info("turn stopped by button", "conversation", conv, "by", channels.QualifiedID(channel, a.User.ID))
		return channels.ActionReply{Text: "Stopping."}, nil
	}
	return channels.ActionReply{Text: "Nothing is running any more."}, nil
}

func displayName(u channels.User) string {
	switch {
	case u.Name != "" && u.Username != "":
		return u.Name + " (@" + u.Username + ")"
	case u.Name != "":
		return u.Name
	case u.Username != "":
		return "@" + u.Username
	}
	return u.ID
}

func origin(channel string, in channels.Inbound) string {
	kind := "group chat " + in.Location.ChatID
	if in.DirectMessage {
		kind = "direct message"
	}
	if in.Location.ThreadID != "" {
		kind += ", thread " + in.Location.ThreadID
	}
	return channel + " " + kind
}

// inputFor turns a message payload into agent input. dropped, when not
// empty, tells the person what did not reach the model.
func inputFor(vision bool, p messagePayload) (in agentcore.Input, dropped string) {
	parts := []agentcore.Part{}
	if strings.TrimSpace(p.Text) != "" {
		parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: p.Text})
	}
	for _, a := range p.Attachments {
		switch {
		case !strings.HasPrefix(a.MIME, "image/"):
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: fmt.Sprintf("[The user attached %s (%s), which is not passed to the model.]", a.Name, a.MIME)})
			dropped = "The file " + a.Name + " was not passed to the model: only images are."
		case !vision:
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: "[The user sent an image, but this model does not accept images (vision = false).]"})
			dropped = "The model does not accept images (vision = false in [providers]), so it only hears that you sent one."
		case len(a.Data) > maxImageBytes:
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: fmt.Sprintf("[The user sent an image of %d bytes, over the %d byte limit.]", len(a.Data), maxImageBytes)})
			dropped = fmt.Sprintf("The image is over the %d MiB limit, so the model only hears that you sent one.", maxImageBytes>>20)
		default:
			parts = append(parts, agentcore.Part{Type: agentcore.PartImage, MIME: a.MIME, Data: a.Data})
		}
	}
	speaker := p.Name
	if speaker == "" {
		speaker = p.Who
	} else {
		speaker += " (" + p.Who + ")"
	}
	return agentcore.Input{Kind: agentcore.InputUser, Parts: parts, Requester: p.Who, Speaker: speaker, Origin: p.Origin}, dropped
}

// maxImageBytes bounds an image sent to the model.
const maxImageBytes = 5 << 20

// Decide implements channels.Decider: a decision by approval id, through
// the one decide path.
func (h *handler) Decide(ctx context.Context, d channels.Decision) (channels.DecisionReply, error) {
	var action ButtonAction
	switch d.Action {
	case channels.DecideAllow:
		action = ButtonApprove
	case channels.DecideAlways:
		action = ButtonAlways
	case channels.DecideDeny:
		action = ButtonDeny
	default:
		return channels.DecisionReply{Text: "Unknown decision " + d.Action + ": use allow, always or deny.", Refused: true}, nil
	}
	res, err := h.in.approvals.decide(ctx, DecideRequest{ApprovalID: d.ApprovalID, Action: action, By: channels.QualifiedID(h.channel, d.User.ID), Reason: d.Reason})
	if err != nil {
		return channels.DecisionReply{}, err
	}
	out := channels.DecisionReply{Text: res.Reply, Refused: res.Refused, Decided: res.Decided, Resumed: res.Resumed}
	if res.Decided {
		ap := res.Approval
		out.Wire, _ = json.Marshal(agentcore.Event{Type: agentcore.EventApprovalDecision, ConversationID: ap.ConversationID,
			AgentID: ap.AgentID, ToolCallID: ap.ToolCallID, Approval: &ap})
	}
	return out, nil
}
