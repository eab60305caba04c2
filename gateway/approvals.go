package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// newToken returns an opaque random button token (22 characters, well
// under Telegram's 64-byte callback_data limit).
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// approvalPlaces are where an approval is posted: the turn's own location
// and the agent's approval routes.
func (g *Gateway) approvalPlaces(ap agentcore.Approval, origin channels.Location) []channels.Location {
	places := []channels.Location{origin}
	for _, route := range g.opts.AgentOptions[ap.AgentID].ApprovalRoutes {
		ch, id, err := channels.ParseIdentity(route)
		if err != nil {
			continue
		}
		if _, ok := g.adapters[ch]; !ok {
			g.log.Warn("approval route names a channel that is not running", "route", route)
			continue
		}
		loc := channels.Location{Channel: ch, ChatID: id}
		if loc.String() != origin.String() {
			places = append(places, loc)
		}
	}
	return places
}

// ensureApprovalPosted posts an approval's message with buttons to every
// place, unless it was posted before (a retried turn).
func (g *Gateway) ensureApprovalPosted(ctx context.Context, ap agentcore.Approval, origin channels.Location) {
	ctx = context.WithoutCancel(ctx)
	posts, err := g.opts.Store.ApprovalPosts(ctx, ap.ID)
	if err != nil {
		g.log.Error("read approval posts", "approval", ap.ID, "err", err)
		return
	}
	if len(posts) > 0 {
		return
	}
	now := g.opts.Now().UTC()
	buttons := []Button{
		{Token: newToken(), ApprovalID: ap.ID, Action: ButtonApprove, Created: now},
		{Token: newToken(), ApprovalID: ap.ID, Action: ButtonDeny, Created: now},
	}
	row := []buttonSpec{
		{Label: "Approve", Style: channels.StylePrimary, Token: buttons[0].Token},
		{Label: "Deny", Style: channels.StyleDanger, Token: buttons[1].Token},
	}
	rows := [][]buttonSpec{row}
	if ap.Rule != "" {
		b := Button{Token: newToken(), ApprovalID: ap.ID, Action: ButtonAlways, Created: now}
		buttons = append(buttons, b)
		rows = append(rows, []buttonSpec{{Label: "Always: " + ap.Rule, Token: b.Token}})
	}
	if err := g.opts.Store.CreateButtons(ctx, buttons); err != nil {
		g.log.Error("store approval buttons", "approval", ap.ID, "err", err)
		return
	}
	msg := outMessage{Markdown: approvalText(ap), Buttons: rows}
	for _, loc := range g.approvalPlaces(ap, origin) {
		id := g.post(ctx, loc, msg)
		if id == 0 {
			continue
		}
		if err := g.opts.Store.AddApprovalPost(ctx, ApprovalPost{ApprovalID: ap.ID, Location: loc.String(), OutboxID: id}); err != nil {
			g.log.Error("record approval post", "approval", ap.ID, "err", err)
		}
	}
	g.opts.Metrics.ApprovalsAsked.Inc()
}

func approvalText(ap agentcore.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🔐 **Approval needed** — agent **%s** wants to run:\n", channels.EscapeMarkdown(ap.AgentID))
	fmt.Fprintf(&b, "```\n%s\n```\n", strings.ReplaceAll(clipString(ap.Summary, 1500), "```", "'''"))
	if ap.Diff != "" {
		fmt.Fprintf(&b, "```diff\n%s\n```\n", strings.ReplaceAll(clipString(ap.Diff, 1500), "```", "'''"))
	}
	if ap.Reason != "" {
		fmt.Fprintf(&b, "Why it asks: %s\n", channels.EscapeMarkdown(ap.Reason))
	}
	if ap.Workdir != "" {
		fmt.Fprintf(&b, "In: `%s`\n", ap.Workdir)
	}
	if ap.Requester != "" {
		fmt.Fprintf(&b, "Requested by %s · ", channels.EscapeMarkdown(ap.Requester))
	}
	fmt.Fprintf(&b, "expires %s · id `%s`", ap.Expires.UTC().Format("2006-01-02 15:04 MST"), ap.ID)
	return b.String()
}

func decisionText(ap agentcore.Approval) string {
	var verb string
	switch ap.State {
	case agentcore.ApprovalAllowed:
		verb = "✅ Approved"
	case agentcore.ApprovalAlways:
		verb = "✅ Approved always (" + ap.Rule + ")"
	case agentcore.ApprovalExpired:
		verb = "⌛ Expired"
	default:
		verb = "⛔ Denied"
	}
	s := fmt.Sprintf("%s: `%s`", verb, strings.ReplaceAll(clipString(ap.Summary, 300), "`", "'"))
	if ap.DecidedBy != "" && ap.State != agentcore.ApprovalExpired {
		s += " — by " + channels.EscapeMarkdown(ap.DecidedBy)
	}
	if !ap.Decided.IsZero() {
		s += " at " + ap.Decided.UTC().Format("15:04 MST")
	}
	if ap.DecisionReason != "" {
		s += "\nReason: " + channels.EscapeMarkdown(ap.DecisionReason)
	}
	return s
}

func clipString(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// approvalDecided edits every posted copy of an approval to show the
// decision.
func (g *Gateway) approvalDecided(ctx context.Context, ap agentcore.Approval) {
	ctx = context.WithoutCancel(ctx)
	posts, err := g.opts.Store.ApprovalPosts(ctx, ap.ID)
	if err != nil {
		g.log.Error("read approval posts", "approval", ap.ID, "err", err)
		return
	}
	body, _ := json.Marshal(outMessage{Markdown: decisionText(ap)})
	now := g.opts.Now().UTC()
	var items []Outbound
	for _, p := range posts {
		items = append(items, Outbound{Kind: OutboundEdit, Location: p.Location, EditOf: p.OutboxID, Body: body, Created: now, NextAt: now})
	}
	if len(items) == 0 {
		return
	}
	if _, err := g.opts.Store.EnqueueOutbound(ctx, items...); err != nil {
		g.log.Error("queue approval edits", "approval", ap.ID, "err", err)
	}
	if !ap.Created.IsZero() && !ap.Decided.IsZero() {
		g.opts.Metrics.ApprovalSeconds.Observe(ap.Decided.Sub(ap.Created).Seconds())
	}
	g.kickOut()
}

// mayDecide says whether who may decide ap.
func (g *Gateway) mayDecide(ap agentcore.Approval, who string) bool {
	approvers := ap.Approvers
	if len(approvers) == 0 {
		approvers = g.opts.AgentOptions[ap.AgentID].Approvers
	}
	if len(approvers) > 0 {
		return slices.Contains(approvers, who)
	}
	// Asks routed to someone's DM come with working buttons: the route's
	// person may decide, besides the requester and the admins.
	return who == ap.Requester || g.isAdmin(who) || slices.Contains(g.opts.AgentOptions[ap.AgentID].ApprovalRoutes, who)
}

func (g *Gateway) approverNames(ap agentcore.Approval) string {
	approvers := ap.Approvers
	if len(approvers) == 0 {
		approvers = g.opts.AgentOptions[ap.AgentID].Approvers
	}
	if len(approvers) == 0 {
		if ap.Requester != "" {
			return ap.Requester + " or an admin"
		}
		return "an admin"
	}
	return strings.Join(approvers, ", ")
}

// decide applies a person's decision: checks who they are and whether the
// approval is still open, records the first valid decision, edits every
// copy and queues the resume. The returned text is for the presser.
func (g *Gateway) decide(ctx context.Context, approvalID string, action ButtonAction, who, reason string) (string, bool) {
	ap, err := g.opts.AgentStore.Approval(ctx, approvalID)
	if err != nil {
		return "This approval no longer exists.", true
	}
	system := who == systemActor
	if !system && !g.mayDecide(ap, who) {
		return "Only " + g.approverNames(ap) + " can decide this.", true
	}
	if ap.State != agentcore.ApprovalPending {
		return alreadyText(ap), true
	}
	if action == ButtonAlways && !system && !g.isAdmin(who) {
		return "Only an admin can choose Always; use Approve for this once.", true
	}
	now := g.opts.Now().UTC()
	if now.After(ap.Expires) {
		action = ""
	}
	d := agentcore.Decision{By: who, At: now, Reason: reason}
	switch action {
	case ButtonApprove:
		d.State = agentcore.ApprovalAllowed
	case ButtonAlways:
		d.State = agentcore.ApprovalAlways
	case ButtonDeny:
		d.State = agentcore.ApprovalDenied
	default:
		d.State, d.Reason, d.By = agentcore.ApprovalExpired, "the approval expired before anyone decided", systemActor
	}
	ag, ok := g.opts.Agents[ap.AgentID]
	if !ok {
		return "This approval belongs to an agent that is not running.", true
	}
	ap, decided, err := ag.Decide(ctx, ap.ID, d)
	if err != nil {
		g.log.Error("record decision", "approval", approvalID, "err", err)
		return "Could not record the decision; try again.", true
	}
	if !decided {
		return alreadyText(ap), true
	}
	g.approvalDecided(ctx, ap)
	g.resumeIfReady(ctx, ap.ConversationID, ap.AgentID)
	if d.State == agentcore.ApprovalExpired {
		return "This approval expired before anyone decided.", true
	}
	return decisionReply(ap), false
}

// decisionReply is the plain-text answer to the person who decided
// (toasts and alerts show no Markdown).
func decisionReply(ap agentcore.Approval) string {
	switch ap.State {
	case agentcore.ApprovalAllowed:
		return "Approved: " + clipString(ap.Summary, 150)
	case agentcore.ApprovalAlways:
		return "Approved always (" + ap.Rule + "): " + clipString(ap.Summary, 120)
	default:
		return "Denied: " + clipString(ap.Summary, 150)
	}
}

func alreadyText(ap agentcore.Approval) string {
	if ap.State == agentcore.ApprovalExpired {
		return "This approval already expired."
	}
	who := ap.DecidedBy
	if who == "" {
		who = "someone"
	}
	return fmt.Sprintf("Already decided: %s by %s.", strings.TrimPrefix(string(ap.State), "approval_"), who)
}

// resumeIfReady queues a resume item when no approval of the conversation
// is pending any more.
func (g *Gateway) resumeIfReady(ctx context.Context, conv, agentID string) {
	pending, err := g.opts.AgentStore.PendingApprovals(ctx, conv)
	if err != nil || len(pending) > 0 {
		return
	}
	loc := ""
	if bs, err := g.opts.Store.BindingsOf(ctx, conv); err == nil && len(bs) > 0 {
		loc = bs[len(bs)-1].Location
	}
	if loc == "" {
		g.log.Warn("resume without a bound location", "conversation", conv)
		return
	}
	if _, _, err := g.opts.Store.Enqueue(context.WithoutCancel(ctx), Item{
		ConversationID: conv, AgentID: agentID, Kind: ItemResume, Location: loc, Created: g.opts.Now().UTC(),
	}, "", 0); err != nil {
		g.log.Error("queue resume", "conversation", conv, "err", err)
		return
	}
	g.kick(conv)
}

// systemActor decides approvals nobody decided in time.
const systemActor = "switchboard"

// OnAction handles a button press.
func (h *handler) OnAction(ctx context.Context, a channels.Action) (channels.ActionReply, error) {
	g := h.g
	g.opts.Metrics.Actions.WithLabelValues(h.channel).Inc()
	b, err := g.opts.Store.Button(ctx, a.Token)
	if errors.Is(err, ErrNotFound) {
		return channels.ActionReply{Text: "This button is no longer valid.", Alert: true}, nil
	}
	if err != nil {
		return channels.ActionReply{}, err
	}
	who := channels.QualifiedID(h.channel, a.User.ID)
	text, alert := g.decide(ctx, b.ApprovalID, b.Action, who, "")
	return channels.ActionReply{Text: text, Alert: alert}, nil
}

// expiryLoop denies approvals nobody decided in time.
func (g *Gateway) expiryLoop(ctx context.Context) {
	ex, ok := g.opts.AgentStore.(ExpiredApprovals)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		g.expireNow(ctx, ex)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (g *Gateway) expireNow(ctx context.Context, ex ExpiredApprovals) {
	aps, err := ex.ExpiredApprovals(ctx, g.opts.Now().UTC(), 100)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("list expired approvals", "err", err)
		}
		return
	}
	for _, ap := range aps {
		g.decide(ctx, ap.ID, "", systemActor, "")
	}
}
