package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// The read methods in this file serve operators (switchboard conversations
// and approvals): listings across agents that no turn needs.

// ConversationSummary is one conversation as a listing shows it.
type ConversationSummary struct {
	agentcore.Conversation
	// Messages counts the whole transcript (not just the in-context view).
	Messages int `json:"messages"`
	// FirstText is the text of the first user message that has any, whole;
	// callers clip it for display.
	FirstText string `json:"firstText"`
	// Locations are the chat locations bound to the conversation.
	Locations []string `json:"locations,omitempty"`
}

// locationSep joins bound locations in one column; it cannot occur in a
// location key.
const locationSep = "\x1f"

// ConversationSummaries lists conversations, most recently updated first:
// the agent's, or every agent's when agentID is empty. limit <= 0 means
// all.
func (db *DB) ConversationSummaries(ctx context.Context, agentID string, limit int) ([]ConversationSummary, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT c.id, c.agent_id, c.created, c.updated, c.prompt_revision,
		(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id),
		COALESCE((SELECT json_extract(p.value, '$.text')
			FROM messages m, json_each(m.parts) p
			WHERE m.conversation_id = c.id AND m.role = 'user'
			  AND json_extract(p.value, '$.type') = 'text'
			  AND COALESCE(json_extract(p.value, '$.text'), '') <> ''
			ORDER BY m.seq, p.key LIMIT 1), ''),
		COALESCE((SELECT group_concat(b.location, ?) FROM bindings b WHERE b.conversation_id = c.id), '')
		FROM conversations c
		WHERE ? = '' OR c.agent_id = ?
		ORDER BY c.updated DESC, c.rowid DESC LIMIT ?`,
		locationSep, agentID, agentID, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	var out []ConversationSummary
	for rows.Next() {
		var s ConversationSummary
		var created, updated int64
		var locs string
		if err := rows.Scan(&s.ID, &s.AgentID, &created, &updated, &s.PromptRevision, &s.Messages, &s.FirstText, &locs); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		s.Created, s.Updated = fromNanos(created), fromNanos(updated)
		if locs != "" {
			s.Locations = strings.Split(locs, locationSep)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// ResolveConversation finds a conversation by its full id or by a prefix
// of it that matches exactly one conversation. An unknown id is
// ErrNotFound; a prefix matching several is an error naming them.
func (db *DB) ResolveConversation(ctx context.Context, idOrPrefix string) (agentcore.Conversation, error) {
	c, err := db.Conversation(ctx, idOrPrefix)
	if err == nil || !errors.Is(err, ErrNotFound) || idOrPrefix == "" {
		return c, err
	}
	// LIKE treats % and _ as wildcards: escape them so the prefix is literal.
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(idOrPrefix)
	rows, err := db.r.QueryContext(ctx,
		`SELECT `+conversationColumns+` FROM conversations c WHERE c.id LIKE ? ESCAPE '\' ORDER BY c.id LIMIT 3`, esc+"%")
	if err != nil {
		return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", idOrPrefix, err)
	}
	defer rows.Close()
	var found []agentcore.Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", idOrPrefix, err)
		}
		found = append(found, c)
	}
	if err := rows.Err(); err != nil {
		return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", idOrPrefix, err)
	}
	switch len(found) {
	case 0:
		return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", idOrPrefix, ErrNotFound)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, c := range found {
		ids[i] = c.ID
	}
	return agentcore.Conversation{}, fmt.Errorf("conversation id prefix %q matches several (%s…): give more of the id", idOrPrefix, strings.Join(ids, ", "))
}

// AllPendingApprovals returns the undecided approvals of every
// conversation, oldest first; limit <= 0 means all.
func (db *DB) AllPendingApprovals(ctx context.Context, limit int) ([]agentcore.Approval, error) {
	as, err := db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE state = ? ORDER BY created, rowid LIMIT ?`,
		string(agentcore.ApprovalPending), limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	return as, nil
}
