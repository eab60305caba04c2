package gateway

import (
	"context"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// Conversations implements channels.HistoryHandler: the conversations of
// the channel's agent, most recent first.
func (h *handler) Conversations(ctx context.Context, who string) ([]channels.ConversationInfo, error) {
	agentID := h.g.opts.Channels[h.channel].Agent
	convs, err := h.g.opts.AgentStore.ListConversations(ctx, agentID, 50)
	if err != nil {
		return nil, err
	}
	var out []channels.ConversationInfo
	for _, c := range convs {
		title := ""
		if msgs, err := h.g.opts.AgentStore.Messages(ctx, c.ID, 0, 1); err == nil && len(msgs) > 0 {
			title = clipString(strings.TrimSpace(msgs[0].Text()), 60)
		}
		out = append(out, channels.ConversationInfo{ID: c.ID, Agent: c.AgentID, Title: title, UpdatedAt: c.Updated})
	}
	return out, nil
}

// History implements channels.HistoryHandler: the visible messages of a
// conversation (user texts and assistant texts with their tool activity).
func (h *handler) History(ctx context.Context, conversationID string) ([]channels.HistoryItem, error) {
	var out []channels.HistoryItem
	var after int64
	for {
		msgs, err := h.g.opts.AgentStore.Messages(ctx, conversationID, after, 500)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			after = m.Seq
			switch m.Role {
			case agentcore.RoleUser:
				if t := m.Text(); t != "" {
					out = append(out, channels.HistoryItem{ID: m.ID, Role: channels.RoleUser, Message: channels.TextMessage(t), At: m.CreatedAt})
				}
			case agentcore.RoleAssistant:
				var parts []channels.Part
				for _, c := range m.ToolCalls {
					parts = append(parts, channels.ToolActivity{ID: c.ID, Title: toolTitle(c.Name, []byte(c.Arguments)), Kind: toolKind(c.Name), Status: channels.StatusDone})
				}
				if t := m.Text(); t != "" {
					parts = append(parts, channels.Text{Markdown: t})
				}
				if len(parts) > 0 {
					out = append(out, channels.HistoryItem{ID: m.ID, Role: channels.RoleAssistant, Message: channels.Message{Parts: parts}, At: m.CreatedAt})
				}
			}
		}
		if len(msgs) < 500 {
			return out, nil
		}
	}
}
