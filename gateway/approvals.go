package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// DecideRequest is one decision on an approval, from any host: a button
// press, a typed /approve, a stream-json approval line, an ACP permission
// answer, `switchboard approvals approve`.
type DecideRequest struct {
	ApprovalID string
	// Action is ButtonApprove, ButtonAlways or ButtonDeny; "" expires the
	// approval (the sweeper).
	Action ButtonAction
	By     string // qualified id of who decides
	Reason string
	// Operator: the person at the host's shell (`switchboard approvals`),
	// who can read the data directory anyway, may decide every approval
	// (Always included).
	Operator bool
	// Admin: the surface vouches that By is an admin by a platform role
	// (channels.Action.RoleAdmin, Inbound.RoleAdmin), which the store's
	// configuration cannot know.
	Admin bool
}

// DecideResult is what a decision did.
type DecideResult struct {
	Approval agentcore.Approval
	Decided  bool // this decision took effect
	Resumed  bool // it was the turn's last ask: the resume is queued
	// Reply is for the person who decided (plain text: toasts show no
	// Markdown); Refused marks a refusal (alerts where the surface has
	// them).
	Reply   string
	Refused bool
}

// approvals is the part that posts asks (with buttons, to the turn's
// location and the agent's approval routes), decides them through the one
// decide path, and expires them.
type approvals struct {
	env    *env
	outbox *outbox
}

func newApprovals(e *env, o *outbox) *approvals { return &approvals{env: e, outbox: o} }

// DeciderOptions configure a Decider outside a running gateway (the
// `switchboard approvals` command).
type DeciderOptions struct {
	Store        Store
	AgentStore   AgentStore
	AgentOptions map[string]AgentOptions
	Channels     map[string]ChannelOptions
	Logger       *slog.Logger
	Now          func() time.Time
}

// Decider runs the one decide path without a running gateway: the resume
// it queues is worked by the process that runs the approval's channel.
type Decider struct{ a *approvals }

// NewDecider returns a Decider.
func NewDecider(o DeciderOptions) *Decider {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	e := &env{opts: Options{Store: o.Store, AgentStore: o.AgentStore, AgentOptions: o.AgentOptions, Channels: o.Channels},
		log: o.Logger, metrics: NewMetrics(nil), adapters: map[string]channels.Adapter{}, now: o.Now}
	return &Decider{a: newApprovals(e, newOutbox(e))}
}

// Decide applies one decision; see DecideRequest.
func (d *Decider) Decide(ctx context.Context, req DecideRequest) (DecideResult, error) {
	return d.a.decide(ctx, req)
}

// systemActor decides approvals nobody decided in time.
const systemActor = "switchboard"

// decide is the one decide path: it checks who decides and whether the
// approval is still open, then records the first valid decision, the edits
// of every posted copy and (for the turn's last ask) the resume for the
// location the turn came from, in one transaction.
func (a *approvals) decide(ctx context.Context, req DecideRequest) (DecideResult, error) {
	e := a.env
	ap, err := e.opts.AgentStore.Approval(ctx, req.ApprovalID)
	if errors.Is(err, agentcore.ErrNotFound) {
		return DecideResult{Reply: "This approval no longer exists.", Refused: true}, nil
	}
	if err != nil {
		return DecideResult{}, fmt.Errorf("read approval %s: %w", req.ApprovalID, err)
	}
	system := req.By == systemActor || req.Operator
	if !system && !a.mayDecide(ap, req.By, req.Admin) {
		return DecideResult{Approval: ap, Reply: "Only " + a.approverNames(ap) + " can decide this.", Refused: true}, nil
	}
	if ap.State != agentcore.ApprovalPending {
		return DecideResult{Approval: ap, Reply: alreadyText(ap), Refused: true}, nil
	}
	action := req.Action
	if action == ButtonAlways && !system && !req.Admin && !isAdmin(e, req.By) {
		return DecideResult{Approval: ap, Reply: "Only an admin can choose Always; use Approve for this once.", Refused: true}, nil
	}
	if action == ButtonAlways && ap.Rule == "" {
		return DecideResult{Approval: ap, Reply: "This call has no rule to store; use Approve for this once.", Refused: true}, nil
	}
	now := e.now().UTC()
	if now.After(ap.Expires) {
		action = ""
	}
	d := agentcore.Decision{By: req.By, At: now, Reason: req.Reason}
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
	ap, decided, resumed, err := e.opts.Store.DecideAndResume(ctx, ap.ID, d, decisionBody, Item{Kind: ItemResume, Created: now})
	if err != nil {
		return DecideResult{}, err
	}
	if !decided {
		return DecideResult{Approval: ap, Reply: alreadyText(ap), Refused: true}, nil
	}
	e.log.Info("approval decided", "approval", ap.ID, "agent", ap.AgentID, "conversation", ap.ConversationID,
		"decision", string(ap.State), "by", ap.DecidedBy, "resumed", resumed)
	if !ap.Created.IsZero() {
		e.metrics.ApprovalSeconds.Observe(ap.Decided.Sub(ap.Created).Seconds())
	}
	a.outbox.kick()
	res := DecideResult{Approval: ap, Decided: true, Resumed: resumed, Reply: decisionReply(ap)}
	if d.State == agentcore.ApprovalExpired {
		res.Reply, res.Refused = "This approval expired before anyone decided.", true
	}
	return res, nil
}

// mayDecide says whether who may decide ap; roleAdmin: the surface says who
// is an admin by a platform role.
func (a *approvals) mayDecide(ap agentcore.Approval, who string, roleAdmin bool) bool {
	approvers := ap.Approvers
	if len(approvers) == 0 {
		approvers = a.env.opts.AgentOptions[ap.AgentID].Approvers
	}
	if len(approvers) > 0 {
		return slices.Contains(approvers, who)
	}
	// Asks routed to someone's DM come with working buttons: the route's
	// person may decide, besides the requester and the admins.
	return who == ap.Requester || roleAdmin || isAdmin(a.env, who) || slices.Contains(a.env.opts.AgentOptions[ap.AgentID].ApprovalRoutes, who)
}

func (a *approvals) approverNames(ap agentcore.Approval) string {
	approvers := ap.Approvers
	if len(approvers) == 0 {
		approvers = a.env.opts.AgentOptions[ap.AgentID].Approvers
	}
	if len(approvers) == 0 {
		if ap.Requester != "" {
			return ap.Requester + " or an admin"
		}
		return "an admin"
	}
	return strings.Join(approvers, ", ")
}

// places are where an approval is posted: the turn's own location and the
// agent's approval routes (a route's DM through the adapter's DM ability).
func (a *approvals) places(ctx context.Context, ap agentcore.Approval, origin channels.Location) []channels.Location {
	e := a.env
	places := []channels.Location{origin}
	for _, route := range e.opts.AgentOptions[ap.AgentID].ApprovalRoutes {
		ch, id, err := channels.ParseIdentity(route)
		if err != nil {
			continue
		}
		ad, ok := e.adapters[ch]
		if !ok {
			e.log.Warn("approval route names a channel that is not running here", "route", route)
			continue
		}
		loc := channels.Location{Channel: ch, ChatID: id}
		if dm, ok := ad.(channels.DirectMessenger); ok {
			l, err := dm.DirectLocation(ctx, id)
			if err != nil {
				e.log.Warn("open the DM of an approval route", "route", route, "err", err)
				continue
			}
			loc = l
		}
		if loc.String() != origin.String() {
			places = append(places, loc)
		}
	}
	return places
}

// newToken returns an opaque button token: the creation time in
// milliseconds (12 hex digits, so tokens sort by age), then 16 random
// bytes (22 characters of base64url): 34 characters, well under Telegram's
// 64-byte callback_data limit. The random part is what makes it
// unguessable, as before; the time in front makes the buttons table (keyed
// by token) grow at its end: with purely random tokens, each ask's three
// buttons went to three random leaves of a B-tree that grows with every
// ask ever made (bench/gatewayload -phases park).
func newToken(now time.Time) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%012x", max(now.UnixMilli(), 0)) + base64.RawURLEncoding.EncodeToString(b)
}

// postings are the records that post a turn's asks: buttons, one outbox
// item per place and the posts that tie them to their approval. They are
// stored with the turn's last write (TurnEnd), so an ask is posted exactly
// when its turn parks.
type postings struct {
	buttons []Button
	out     []Outbound
	posts   []TurnPost // Outbound indexes into out
	asked   []agentcore.Approval
}

// plan adds the postings of an approval for every place, unless it was
// posted before (a turn that resumed and parked again on it).
func (a *approvals) plan(ctx context.Context, ps *postings, ap agentcore.Approval, origin channels.Location) {
	e := a.env
	posts, err := e.opts.Store.ApprovalPosts(ctx, ap.ID)
	if err != nil {
		e.log.Error("read approval posts", "approval", ap.ID, "err", err)
		return
	}
	if len(posts) > 0 {
		return
	}
	now := e.now().UTC()
	buttons := []Button{
		{Token: newToken(now), ApprovalID: ap.ID, Action: ButtonApprove, Created: now},
		{Token: newToken(now), ApprovalID: ap.ID, Action: ButtonDeny, Created: now},
	}
	if ap.Rule != "" {
		buttons = append(buttons, Button{Token: newToken(now), ApprovalID: ap.ID, Action: ButtonAlways, Created: now})
	}
	ps.buttons = append(ps.buttons, buttons...)
	for _, loc := range a.places(ctx, ap, origin) {
		caps := channels.Capabilities{}
		if ad, ok := e.adapter(loc); ok {
			caps = ad.Capabilities()
		}
		it, ok := a.outbox.item(OutboundSend, loc, approvalMessage(ap, buttons, caps.Buttons))
		if !ok {
			continue
		}
		ps.posts = append(ps.posts, TurnPost{ApprovalID: ap.ID, Location: loc.String(), Outbound: len(ps.out)})
		ps.out = append(ps.out, it)
	}
	ps.asked = append(ps.asked, ap)
}

// posted logs and counts the asks of postings once they are stored.
func (a *approvals) posted(ps postings, origin channels.Location) {
	for _, ap := range ps.asked {
		a.env.log.Info("approval requested", "approval", ap.ID, "agent", ap.AgentID, "conversation", ap.ConversationID,
			"tool", ap.ToolName, "requester", ap.Requester, "location", origin.String())
		a.env.metrics.ApprovalsAsked.Inc()
	}
}

// post stores the postings of one approval outside a turn's last write
// (a task's child turn): buttons, posts and their records commit together,
// so a crash in between can never make the ask appear twice with two sets
// of buttons.
func (a *approvals) post(ctx context.Context, ap agentcore.Approval, origin channels.Location) {
	var ps postings
	a.plan(ctx, &ps, ap, origin)
	if len(ps.buttons) == 0 {
		return // posted before
	}
	ids, err := a.env.opts.Store.PostApproval(ctx, ps.buttons, ps.out)
	if err != nil {
		a.env.log.Error("post the approval", "approval", ap.ID, "err", err)
		return
	}
	for i := range ps.out {
		ps.out[i].ID = ids[i]
	}
	a.outbox.offer(ps.out)
	a.posted(ps, origin)
}

// approvalMessage is the chat message of an ask: what would run, why, and
// the buttons (Always shows the exact rule it stores); on surfaces without
// buttons it says how to answer by typing.
func approvalMessage(ap agentcore.Approval, bs []Button, withButtons bool) channels.Message {
	text := approvalText(ap)
	if !withButtons {
		text += fmt.Sprintf("\n\nReply `/approve %s` or `/deny %s [reason]`.", ap.ID, ap.ID)
		return channels.TextMessage(text)
	}
	return channels.Message{Parts: []channels.Part{channels.Text{Markdown: text}, approvalButtons(ap, bs)}}
}

func approvalButtons(ap agentcore.Approval, bs []Button) channels.Buttons {
	var row, always []channels.Button
	for _, b := range bs {
		switch b.Action {
		case ButtonApprove:
			row = append([]channels.Button{{Label: "Approve", Style: channels.StylePrimary, Token: b.Token}}, row...)
		case ButtonDeny:
			row = append(row, channels.Button{Label: "Deny", Style: channels.StyleDanger, Token: b.Token})
		case ButtonAlways:
			always = append(always, channels.Button{Label: "Always: " + ap.Rule, Token: b.Token})
		}
	}
	rows := [][]channels.Button{row}
	if len(always) > 0 {
		rows = append(rows, always)
	}
	return channels.Buttons{Rows: rows}
}

func approvalText(ap agentcore.Approval) string {
	var b strings.Builder
	if ap.TaskID != "" {
		fmt.Fprintf(&b, "🔐 **Approval needed** — sub-agent **%s** · task `%s` (of agent **%s**) wants to run:\n",
			channels.EscapeMarkdown(ap.TaskType), ap.TaskID, channels.EscapeMarkdown(ap.AgentID))
	} else {
		fmt.Fprintf(&b, "🔐 **Approval needed** — agent **%s** wants to run:\n", channels.EscapeMarkdown(ap.AgentID))
	}
	// What will run is shown verbatim: the model chose it, so nothing in it
	// may close its code or become markup.
	fmt.Fprintf(&b, "%s\n", channels.CodeBlock(clipString(ap.Summary, 1500), ""))
	if ap.Diff != "" {
		fmt.Fprintf(&b, "%s\n", channels.CodeBlock(clipString(ap.Diff, 1500), "diff"))
	}
	if ap.Reason != "" {
		fmt.Fprintf(&b, "Why it asks: %s\n", channels.QuotedMarkdown(ap.Reason))
	}
	if ap.Workdir != "" {
		fmt.Fprintf(&b, "In: %s\n", channels.CodeSpan(ap.Workdir))
	}
	if ap.Requester != "" {
		fmt.Fprintf(&b, "Requested by %s · ", channels.EscapeMarkdown(ap.Requester))
	}
	fmt.Fprintf(&b, "expires %s · id `%s`", ap.Expires.UTC().Format("2006-01-02 15:04 MST"), ap.ID)
	return b.String()
}

// decisionBody is the encoded edit of an approval's posted copies once it
// is decided.
func decisionBody(ap agentcore.Approval) []byte {
	body, _ := channels.EncodeMessage(channels.TextMessage(decisionText(ap)))
	return body
}

func decisionText(ap agentcore.Approval) string {
	var verb string
	switch ap.State {
	case agentcore.ApprovalAllowed:
		verb = "✅ Approved"
	case agentcore.ApprovalAlways:
		verb = "✅ Approved always (" + channels.CodeSpan(ap.Rule) + ")"
	case agentcore.ApprovalExpired:
		verb = "⌛ Expired"
	default:
		verb = "⛔ Denied"
	}
	s := verb + ": " + channels.CodeSpan(clipString(ap.Summary, 300))
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

// decisionReply is the plain-text answer to the person who decided.
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

// expiryLoop denies approvals nobody decided in time.
func (a *approvals) expiryLoop(ctx context.Context) {
	ex, ok := a.env.opts.AgentStore.(ExpiredApprovals)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		a.expireNow(ctx, ex)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (a *approvals) expireNow(ctx context.Context, ex ExpiredApprovals) {
	aps, err := ex.ExpiredApprovals(ctx, a.env.now().UTC(), 100)
	if err != nil {
		if ctx.Err() == nil {
			a.env.log.Error("list expired approvals", "err", err)
		}
		return
	}
	for _, ap := range aps {
		if _, err := a.decide(ctx, DecideRequest{ApprovalID: ap.ID, By: systemActor}); err != nil && ctx.Err() == nil {
			a.env.log.Error("expire approval", "approval", ap.ID, "err", err)
		}
	}
}
