package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// Conversations implements channels.HistoryHandler: the conversations of
// the channel's agent, most recent first, each with the location of this
// channel it is bound to, so the surface reopens it there.
func (h *handler) Conversations(ctx context.Context, who string) ([]channels.ConversationInfo, error) {
	e := h.in.env
	agentID := e.channel(h.channel).Agent
	convs, err := e.opts.AgentStore.ListConversations(ctx, agentID, 50)
	if err != nil {
		return nil, err
	}
	var out []channels.ConversationInfo
	for _, c := range convs {
		info := channels.ConversationInfo{ID: c.ID, Agent: c.AgentID, UpdatedAt: c.Updated}
		if msgs, err := e.opts.AgentStore.Messages(ctx, c.ID, 0, 1); err == nil && len(msgs) > 0 {
			info.Title = clipString(strings.TrimSpace(msgs[0].Text()), 60)
		}
		if bs, err := e.opts.Store.BindingsOf(ctx, c.ID); err == nil {
			for _, b := range bs {
				loc, err := channels.ParseLocation(b.Location)
				if err != nil {
					continue
				}
				if loc.Channel == h.channel {
					info.Location = loc // the newest binding of this channel wins
				} else if !slices.Contains(info.Elsewhere, loc.Channel) {
					info.Elsewhere = append(info.Elsewhere, loc.Channel)
				}
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// History implements channels.HistoryHandler: the visible messages of a
// conversation — user texts, assistant texts with each tool call and its
// true outcome — and its pending approvals as working approval cards.
func (h *handler) History(ctx context.Context, loc channels.Location) ([]channels.HistoryItem, error) {
	e := h.in.env
	loc.Channel = h.channel
	conversationID := ""
	if b, ok, err := lookupBinding(ctx, e, loc); err != nil {
		return nil, err
	} else if ok {
		conversationID = b.ConversationID
	} else if e.channel(h.channel).BrowseByConversation {
		c, err := e.opts.AgentStore.Conversation(ctx, loc.ChatID)
		if err != nil {
			return nil, fmt.Errorf("no conversation at %s: %w", loc, err)
		}
		conversationID = c.ID
	} else {
		return nil, fmt.Errorf("no conversation at %s", loc)
	}
	var msgs []agentcore.Message
	var after int64
	for {
		page, err := e.opts.AgentStore.Messages(ctx, conversationID, after, 500)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, page...)
		if len(page) < 500 {
			break
		}
		after = page[len(page)-1].Seq
	}
	pending, err := pendingHere(ctx, e, conversationID)
	if err != nil {
		return nil, err
	}
	waiting := map[string]agentcore.Approval{}
	for _, ap := range pending {
		waiting[ap.ToolCallID] = ap
	}
	results := map[string]agentcore.Message{}
	for _, m := range msgs {
		if m.Role == agentcore.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	ag := e.opts.Agents[e.channel(h.channel).Agent]
	var out []channels.HistoryItem
	for _, m := range msgs {
		switch m.Role {
		case agentcore.RoleUser:
			if t := m.Text(); strings.HasPrefix(t, "<task-notification>") {
				// A task's report reached the agent: the harness speaks.
				out = append(out, channels.HistoryItem{ID: m.ID, Role: channels.RoleSystem, Message: channels.Message{Parts: []channels.Part{channels.Notice{Text: t}}}, At: m.CreatedAt})
			} else if t != "" {
				out = append(out, channels.HistoryItem{ID: m.ID, Role: channels.RoleUser, Message: channels.TextMessage(t), At: m.CreatedAt})
			}
		case agentcore.RoleAssistant:
			var parts []channels.Part
			for _, c := range m.ToolCalls {
				parts = append(parts, historyActivity(ag, c, results, waiting))
			}
			if t := m.Text(); t != "" {
				parts = append(parts, channels.Text{Markdown: t})
			}
			if len(parts) > 0 {
				out = append(out, channels.HistoryItem{ID: m.ID, Role: channels.RoleAssistant, Message: channels.Message{Parts: parts}, At: m.CreatedAt})
			}
		}
	}
	for _, ap := range pending {
		bs, err := e.opts.Store.ApprovalButtons(ctx, ap.ID)
		if err != nil {
			return nil, err
		}
		withButtons := len(bs) > 0
		if ad, ok := e.adapters[h.channel]; ok && !ad.Capabilities().Buttons {
			withButtons = false
		}
		out = append(out, channels.HistoryItem{ID: ap.ID, Role: channels.RoleSystem, Message: approvalMessage(ap, bs, withButtons), At: ap.Created})
	}
	return out, nil
}

// historyActivity is one past tool call with the outcome its result
// recorded (or pending, when it waits for a decision).
func historyActivity(ag *agentcore.Agent, c agentcore.ToolCall, results map[string]agentcore.Message, waiting map[string]agentcore.Approval) channels.ToolActivity {
	title, kind := c.Name, "other"
	if ag != nil {
		title, kind = ag.Tools().Describe(c.Name, json.RawMessage(c.Arguments))
	}
	a := channels.ToolActivity{ID: c.ID, Title: title, Kind: kind}
	r, done := results[c.ID]
	switch {
	case done:
		a.Outcome = r.Outcome
		if a.Outcome == "" { // results stored before outcomes were
			a.Outcome = map[bool]string{true: channels.OutcomeError, false: channels.OutcomeOK}[r.IsError]
		}
		a.Status = channels.StatusOf(a.Outcome)
	case waiting[c.ID].ID != "":
		a.Status = channels.StatusPending
	default:
		a.Status = channels.StatusRunning
	}
	return a
}

// pendingHere are the asks waiting where a conversation is: its own and
// those of its unfinished tasks (and theirs), which are posted at its
// location too.
func pendingHere(ctx context.Context, e *env, conv string) ([]agentcore.Approval, error) {
	pending, err := e.opts.AgentStore.PendingApprovals(ctx, conv)
	if err != nil {
		return nil, err
	}
	convs := []string{conv}
	for depth := 0; depth < agentcore.MaxTaskDepth && len(convs) > 0; depth++ {
		var next []string
		for _, c := range convs {
			tasks, err := e.opts.AgentStore.ConversationTasks(ctx, c, 50)
			if err != nil {
				return nil, err
			}
			for _, t := range tasks {
				if t.Status.Final() || t.Status == agentcore.TaskQueued {
					continue
				}
				next = append(next, t.ConversationID)
				if t.Status == agentcore.TaskWaiting {
					aps, err := e.opts.AgentStore.PendingApprovals(ctx, t.ConversationID)
					if err != nil {
						return nil, err
					}
					pending = append(pending, aps...)
				}
			}
		}
		convs = next
	}
	return pending, nil
}
