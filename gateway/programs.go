package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// The handler's abilities for surfaces that serve programs (the HTTP API):
// channels.Queuer, channels.ConversationStarter, channels.TranscriptReader
// and channels.ApprovalLister.
var (
	_ channels.Queuer              = (*handler)(nil)
	_ channels.ConversationStarter = (*handler)(nil)
	_ channels.TranscriptReader    = (*handler)(nil)
	_ channels.ApprovalLister      = (*handler)(nil)
	_ channels.Decider             = (*handler)(nil)
)

// MessageSeqs is implemented by agent stores that find a message's position
// by its id; without it the transcript is scanned.
type MessageSeqs interface {
	MessageSeq(ctx context.Context, conversationID, messageID string) (int64, error)
}

// AllPendingApprovals is implemented by agent stores that list the pending
// approvals of every conversation, oldest first (limit <= 0: all).
type AllPendingApprovals interface {
	AllPendingApprovals(ctx context.Context, limit int) ([]agentcore.Approval, error)
}

// Queue implements channels.Queuer: OnInbound that names the queued input.
func (h *handler) Queue(ctx context.Context, in channels.Inbound) (channels.Queued, error) {
	return h.in.queue(ctx, h.channel, in)
}

// Agents implements channels.ConversationStarter.
func (h *handler) Agents(ctx context.Context) ([]channels.AgentInfo, error) {
	e := h.in.env
	def := e.channel(h.channel).Agent
	var out []channels.AgentInfo
	for name, ag := range e.opts.Agents {
		out = append(out, channels.AgentInfo{Name: name, Model: ag.Config().Model, Default: name == def})
	}
	slices.SortFunc(out, func(a, b channels.AgentInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// StartConversation implements channels.ConversationStarter: a new
// conversation of agent, bound at loc (whose chat id, when empty, becomes
// the conversation's id).
func (h *handler) StartConversation(ctx context.Context, loc channels.Location, agent, title string) (channels.ConversationInfo, error) {
	e := h.in.env
	loc.Channel = h.channel
	if agent == "" {
		agent = e.channel(h.channel).Agent
	}
	ag, ok := e.opts.Agents[agent]
	if !ok {
		return channels.ConversationInfo{}, fmt.Errorf("unknown agent %q", agent)
	}
	conv, err := ag.NewConversation(ctx)
	if err != nil {
		return channels.ConversationInfo{}, fmt.Errorf("create a conversation of %s: %w", agent, err)
	}
	if loc.ChatID == "" {
		loc.ChatID = conv.ID
	}
	b := Binding{Location: loc.String(), AgentID: agent, ConversationID: conv.ID, Created: e.now().UTC()}
	if err := e.opts.Store.Bind(ctx, b); err != nil {
		return channels.ConversationInfo{}, fmt.Errorf("bind %s: %w", loc, err)
	}
	return channels.ConversationInfo{ID: conv.ID, Agent: agent, Title: title, UpdatedAt: conv.Created, Location: loc}, nil
}

// conversationAt is the conversation a location of this channel shows: its
// binding's, or (surfaces that browse by conversation) the one its chat id
// names.
func (h *handler) conversationAt(ctx context.Context, loc channels.Location) (string, error) {
	e := h.in.env
	loc.Channel = h.channel
	if b, ok, err := lookupBinding(ctx, e, loc); err != nil {
		return "", err
	} else if ok {
		return b.ConversationID, nil
	}
	if e.channel(h.channel).BrowseByConversation {
		c, err := e.opts.AgentStore.Conversation(ctx, loc.ChatID)
		if err != nil {
			return "", fmt.Errorf("no conversation at %s: %w", loc, err)
		}
		return c.ID, nil
	}
	return "", fmt.Errorf("no conversation at %s", loc)
}

// transcriptPage is how many messages one store read returns.
const transcriptPage = 200

// Transcript implements channels.TranscriptReader.
func (h *handler) Transcript(ctx context.Context, loc channels.Location, q channels.TranscriptQuery) (channels.TranscriptPage, error) {
	e := h.in.env
	conv, err := h.conversationAt(ctx, loc)
	if err != nil {
		return channels.TranscriptPage{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	afterSeq, beforeSeq := int64(0), int64(math.MaxInt64)
	if q.After != "" {
		if afterSeq, err = h.messageSeq(ctx, conv, q.After); err != nil {
			return channels.TranscriptPage{}, err
		}
	}
	if q.Before != "" {
		if beforeSeq, err = h.messageSeq(ctx, conv, q.Before); err != nil {
			return channels.TranscriptPage{}, err
		}
	}
	ag := e.opts.Agents[e.channel(h.channel).Agent]
	if c, err := e.opts.AgentStore.Conversation(ctx, conv); err == nil && e.opts.Agents[c.AgentID] != nil {
		ag = e.opts.Agents[c.AgentID]
	}
	var out []channels.TranscriptMessage
	if q.Before != "" && q.After == "" {
		// The last limit before Before: read windows backwards (a
		// conversation's seqs are 1, 2, 3…, so (lo, hi) holds at most
		// hi-lo-1 messages).
		hi := beforeSeq
		for len(out) <= limit && hi > 1 {
			lo := max(0, hi-1-transcriptPage)
			page, err := e.opts.AgentStore.Messages(ctx, conv, lo, int(hi-1-lo))
			if err != nil {
				return channels.TranscriptPage{}, err
			}
			var vis []channels.TranscriptMessage
			for _, m := range page {
				if m.Seq < hi {
					if tm, ok := transcriptMessage(ag, m); ok {
						vis = append(vis, tm)
					}
				}
			}
			out = append(vis, out...)
			hi = lo + 1
		}
		more := len(out) > limit
		if more {
			out = out[len(out)-limit:]
		}
		return channels.TranscriptPage{Messages: out, More: more}, nil
	}
	cur := afterSeq
	for len(out) <= limit {
		page, err := e.opts.AgentStore.Messages(ctx, conv, cur, transcriptPage)
		if err != nil {
			return channels.TranscriptPage{}, err
		}
		for _, m := range page {
			if m.Seq >= beforeSeq {
				page = nil
				break
			}
			if tm, ok := transcriptMessage(ag, m); ok {
				out = append(out, tm)
			}
		}
		if len(page) < transcriptPage {
			break
		}
		cur = page[len(page)-1].Seq
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return channels.TranscriptPage{Messages: out, More: more}, nil
}

// messageSeq finds a message's position in a conversation.
func (h *handler) messageSeq(ctx context.Context, conv, id string) (int64, error) {
	st := h.in.env.opts.AgentStore
	if ms, ok := st.(MessageSeqs); ok {
		seq, err := ms.MessageSeq(ctx, conv, id)
		if errors.Is(err, agentcore.ErrNotFound) {
			return 0, fmt.Errorf("message %s: %w", id, channels.ErrUnknownMessage)
		}
		return seq, err
	}
	var after int64
	for {
		page, err := st.Messages(ctx, conv, after, 500)
		if err != nil {
			return 0, err
		}
		for _, m := range page {
			if m.ID == id {
				return m.Seq, nil
			}
		}
		if len(page) < 500 {
			return 0, fmt.Errorf("message %s: %w", id, channels.ErrUnknownMessage)
		}
		after = page[len(page)-1].Seq
	}
}

// transcriptMessage is a stored message as programs see it; ok is false
// for messages nobody sees (a user message of reminders only, a summary).
func transcriptMessage(ag *agentcore.Agent, m agentcore.Message) (channels.TranscriptMessage, bool) {
	tm := channels.TranscriptMessage{ID: m.ID, Seq: m.Seq, Text: m.Text(), RunID: m.RunID, At: m.CreatedAt}
	switch m.Role {
	case agentcore.RoleUser:
		tm.Role = channels.TranscriptUser
		for _, p := range m.Parts {
			if p.Type == agentcore.PartImage {
				tm.Images++
			}
		}
		return tm, tm.Text != "" || tm.Images > 0
	case agentcore.RoleAssistant:
		tm.Role, tm.Reasoning = channels.TranscriptAssistant, m.Reasoning
		for _, c := range m.ToolCalls {
			args := json.RawMessage(c.Arguments)
			if !json.Valid(args) {
				args, _ = json.Marshal(c.Arguments)
			}
			title, kind := c.Name, "other"
			if ag != nil {
				title, kind = ag.Tools().Describe(c.Name, json.RawMessage(c.Arguments))
			}
			tm.ToolCalls = append(tm.ToolCalls, channels.TranscriptCall{ID: c.ID, Name: c.Name, Arguments: args, Title: title, Kind: kind})
		}
		return tm, tm.Text != "" || tm.Reasoning != "" || len(tm.ToolCalls) > 0
	case agentcore.RoleTool:
		tm.Role = channels.TranscriptTool
		tm.ToolCallID, tm.ToolName, tm.Outcome, tm.IsError = m.ToolCallID, m.ToolName, m.Outcome, m.IsError
		return tm, true
	}
	return tm, false
}

// PendingApprovals implements channels.ApprovalLister: the undecided,
// unexpired approvals of every conversation who may decide.
func (h *handler) PendingApprovals(ctx context.Context, who string, limit int) ([]channels.PendingApproval, error) {
	e := h.in.env
	all, ok := e.opts.AgentStore.(AllPendingApprovals)
	if !ok {
		return nil, errors.New("this store cannot list approvals across conversations")
	}
	if limit <= 0 {
		limit = 100
	}
	aps, err := all.AllPendingApprovals(ctx, 0)
	if err != nil {
		return nil, err
	}
	now := e.now()
	var out []channels.PendingApproval
	for _, ap := range aps {
		if len(out) == limit {
			break
		}
		if now.After(ap.Expires) || !h.in.approvals.mayDecide(ap, who, false) {
			continue
		}
		card := approvalCard(ap, nil, h.in.approvals.approverNames(ap))
		pa := channels.PendingApproval{ApprovalCard: *card, ConversationID: ap.ConversationID, Agent: ap.AgentID,
			Created: ap.Created, Always: ap.Rule != "" && isAdmin(e, who)}
		pa.Location, _ = channels.ParseLocation(ap.Location)
		out = append(out, pa)
	}
	return out, nil
}
