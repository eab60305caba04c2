package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// errItemGone: the item a worker peeked was completed (or moved to another
// conversation by /new) before its turn could take it.
var errItemGone = errors.New("the queue item is no longer queued")

// turnHost is the agentcore.TurnHost of one queue item's turn: the turn's
// first write takes the item with the conversation's lease (TakeItem), its
// last write completes the item with the final reply, the turn's asks and
// the parked message (FinishTurn). A plain text turn is so four write
// transactions end to end: Enqueue, TakeItem, FinishTurn, MarkSent.
type turnHost struct {
	p          *processor
	items      []Item // the turn's item, then collected ones
	loc        channels.Location
	stream     *stream
	cause      context.Context // the turn's context, for why it was cancelled
	stopTyping func()
	wasParked  bool   // a resume that continues a parked message
	dropped    string // what of the input did not reach the model

	stopOnce sync.Once
	attempts int // the item's attempts, this one included (Begin)
	res      agentcore.TurnResult
	shutdown bool // cancelled by shutdown: the item stays queued
	asks     postings
	out      []Outbound // stored with their ids, for the outbox to deliver now
}

var _ agentcore.TurnHost = (*turnHost)(nil)

// Begin takes the item and the lease in one write.
func (h *turnHost) Begin(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error) {
	attempts, ok, err := h.p.env.opts.Store.TakeItem(ctx, h.items[0].ID, conversationID, owner, ttl)
	if errors.Is(err, ErrNotFound) {
		return false, errItemGone
	}
	h.attempts = attempts
	return ok, err
}

// stop ends typing and streaming (once): the turn has emitted its last
// event.
func (h *turnHost) stop() {
	h.stopOnce.Do(func() {
		h.stopTyping()
		h.stream.stop()
	})
}

// Finish stores the turn's last records with the item's completion, the
// reply, the asks' messages and the parked message, in one write.
func (h *turnHost) Finish(ctx context.Context, w agentcore.TurnWrite, res agentcore.TurnResult) ([]agentcore.Message, error) {
	p, s, loc := h.p, h.stream, h.loc
	h.stop()
	if res.StopReason == agentcore.StopCancelled {
		switch cause := context.Cause(h.cause); {
		case errors.Is(cause, errShutdown):
			h.shutdown = true
		case errors.Is(cause, errInterrupted):
			res.Error = "interrupted by a newer message"
		case errors.Is(cause, errStopped):
			res.Error = "stopped"
		}
	}
	h.res = res
	end := TurnEnd{Turn: w}
	if h.shutdown {
		return h.store(ctx, end)
	}
	for _, it := range h.items {
		end.Complete = append(end.Complete, it.ID)
	}
	if res.Deferred || res.Idle {
		// Nothing new to show: a notification kept for the parked turn, or
		// a resume another turn already settled.
		if res.Idle && h.wasParked {
			end.Settings = append(end.Settings, Setting{Scope: parkedScope(h.items[0].ConversationID), Key: settingParked})
		}
		return h.store(ctx, end)
	}
	if h.dropped != "" && h.attempts <= 1 {
		if it, ok := p.outbox.item(OutboundSend, loc, notice(h.dropped)); ok {
			end.Outbound = append(end.Outbound, it)
		}
	}
	if res.StopReason == agentcore.StopRequiresApproval {
		for _, ap := range res.Pending {
			p.approvals.plan(ctx, &h.asks, ap, loc)
		}
		for _, post := range h.asks.posts {
			post.Outbound += len(end.Outbound)
			end.Posts = append(end.Posts, post)
		}
		end.Buttons = h.asks.buttons
		end.Outbound = append(end.Outbound, h.asks.out...)
	}
	end.Outbound = append(end.Outbound, p.finalItems(ctx, s, loc, res)...)
	parks := res.StopReason == agentcore.StopRequiresApproval || res.StopReason == agentcore.StopWaitingForTask
	if h.wasParked || parks {
		val := ""
		if parks {
			b, _ := json.Marshal(s.view.parked(loc.String(), s.pageRefs(), nil))
			val = string(b)
		}
		end.Settings = append(end.Settings, Setting{Scope: parkedScope(h.items[0].ConversationID), Key: settingParked, Value: val})
	}
	return h.store(ctx, end)
}

// store commits end and keeps its outbox items, with their ids.
func (h *turnHost) store(ctx context.Context, end TurnEnd) ([]agentcore.Message, error) {
	f, err := h.p.env.opts.Store.FinishTurn(ctx, end)
	if err != nil {
		return nil, err
	}
	for i := range end.Outbound {
		end.Outbound[i].ID = f.Outbound[i]
	}
	h.out = end.Outbound
	return f.Messages, nil
}
