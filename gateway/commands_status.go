package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// cmdDecide is /approve and /deny: the text fallback of the buttons,
// through the one decide path.
func cmdDecide(action ButtonAction) func(context.Context, *cmdCtx) string {
	return func(ctx context.Context, c *cmdCtx) string {
		if !c.bound {
			return "There is no conversation here."
		}
		pending, err := pendingHere(ctx, c.env, c.binding.ConversationID)
		if err != nil {
			return "Could not read the pending approvals; try again."
		}
		var id string
		rest := c.args
		if len(c.args) > 0 {
			for _, p := range pending {
				if p.ID == c.args[0] {
					id, rest = p.ID, c.args[1:]
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
				return severalPending(pending)
			}
		}
		res, err := c.approvals.decide(ctx, DecideRequest{ApprovalID: id, Action: action, By: c.who, Reason: strings.Join(rest, " "), Admin: c.admin})
		if err != nil {
			return "Could not record the decision; try again."
		}
		return res.Reply
	}
}

func cmdStatus(ctx context.Context, c *cmdCtx) string {
	ag, ok := c.agentAt()
	if !ok {
		return "No agent is configured here."
	}
	cfg := ag.Config()
	var sb strings.Builder
	fmt.Fprintf(&sb, "**Agent** %s · **model** %s · **mode** %s\n", ag.ID(), channels.EscapeMarkdown(orUnset(cfg.Model)), cfg.Policy.Mode)
	if p := c.env.opts.ModelProblem; p != "" {
		fmt.Fprintf(&sb, "⚠ %s\n", p)
	}
	if n := c.notice(); n != "" {
		fmt.Fprintf(&sb, "⚠ %s\n", n)
	}
	if !c.bound {
		sb.WriteString("No conversation here yet.")
		return sb.String()
	}
	conv := c.binding.ConversationID
	items, _ := c.env.opts.Store.Pending(ctx, conv)
	pending, _ := c.env.opts.AgentStore.PendingApprovals(ctx, conv)
	state := "idle"
	if c.workers.isRunning(conv) {
		state = "working"
	}
	fmt.Fprintf(&sb, "**Conversation** `%s` · %s · queue %d · pending approvals %d · queue mode %s\n",
		conv, state, len(items), len(pending), queueModeAt(ctx, c.env, c.loc))
	if runs, err := c.env.opts.AgentStore.RecentRuns(ctx, conv, 1); err == nil && len(runs) > 0 && cfg.ContextWindow > 0 {
		last := runs[0]
		if last.Usage.InputTokens > 0 {
			fmt.Fprintf(&sb, "**Context** %d of %d tokens (%d%%), %d cached\n", last.Usage.InputTokens, cfg.ContextWindow,
				last.Usage.InputTokens*100/int64(cfg.ContextWindow), last.Usage.CachedTokens)
		}
	}
	for _, p := range pending {
		fmt.Fprintf(&sb, "• `%s` %s\n", p.ID, channels.EscapeMarkdown(clipString(p.Summary, 80)))
	}
	return strings.TrimSpace(sb.String())
}

func orUnset(s string) string {
	if s == "" {
		return "(not set)"
	}
	return s
}

// severalPending asks which of the pending approvals a typed /approve or
// /deny means. Each summary is the model's command: escaped, it cannot
// become a link or markup.
func severalPending(pending []agentcore.Approval) string {
	var ids []string
	for _, p := range pending {
		ids = append(ids, "`"+p.ID+"` "+channels.EscapeMarkdown(clipString(p.Summary, 60)))
	}
	return "Several approvals are pending; name one:\n" + strings.Join(ids, "\n")
}
