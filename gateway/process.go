package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// processor runs one queue item: a turn (message, resume, notification) or
// a queued command, and completes the item together with its reply.
type processor struct {
	env       *env
	outbox    *outbox
	approvals *approvals
	workers   *workers
	tasks     *tasks
	notice    func() string
}

// process runs one item. busy reports that another process holds the
// conversation's lease.
func (p *processor) process(ctx context.Context, w *worker, it Item) (busy bool, err error) {
	e := p.env
	drop := func(why string, err error) (bool, error) {
		e.log.Error("dropping a queue item: "+why, "item", it.ID, "conversation", it.ConversationID, "err", err)
		return false, e.opts.Store.Complete(ctx, it.ID)
	}
	ag, ok := e.agentOf(it.ConversationID, it.AgentID)
	if !ok {
		return drop("its agent is not configured", fmt.Errorf("unknown agent %q", it.AgentID))
	}
	loc, err := channels.ParseLocation(it.Location)
	if err != nil {
		return drop("bad location", err)
	}
	switch it.Kind {
	case ItemCommand:
		pl, err := decodePayload(it.Payload)
		if err != nil {
			return drop("bad payload", err)
		}
		return false, p.runQueuedCommand(ctx, it, loc, pl)
	case ItemMessage, ItemNotification, ItemResume, ItemTask:
		task, isTask, err := p.tasks.of(ctx, it.ConversationID)
		if err != nil {
			return false, err
		}
		if isTask {
			return p.tasks.work(ctx, w, p, it, ag, loc, task)
		}
		if it.Kind == ItemTask {
			return drop("a task item of a conversation that is no task's", fmt.Errorf("conversation %s", it.ConversationID))
		}
		return p.turn(ctx, w, it, ag, loc)
	}
	return drop("unknown kind", fmt.Errorf("kind %q", it.Kind))
}

// inputID is the deterministic message id of a queue item's input, so a
// retried item continues its turn instead of appending its input twice.
func inputID(it Item) string { return fmt.Sprintf("in-%s-%d", it.ConversationID, it.ID) }

func parkedScope(conv string) string { return "conversation:" + conv }

const settingParked = "parked"

// turn runs one item's turn; the turn completes the item, with the final
// reply in the outbox, in its last write (turnHost).
func (p *processor) turn(ctx context.Context, w *worker, it Item, ag *agentcore.Agent, loc channels.Location) (bool, error) {
	e := p.env
	st := e.opts.Store
	in := agentcore.Input{Kind: agentcore.InputResume}
	items := []Item{it}
	replyTo, dropped := "", ""
	if it.Kind != ItemResume {
		pl, err := decodePayload(it.Payload)
		if err != nil {
			e.log.Error("queue item with a bad payload; dropping it", "item", it.ID, "err", err)
			return false, st.Complete(ctx, it.ID)
		}
		replyTo = pl.MessageID
		mode := queueModeAt(ctx, e, loc)
		if mode == QueueCollect {
			pl, items = p.collect(ctx, it, pl)
		}
		in, dropped = inputFor(e.opts.AgentOptions[it.AgentID].Vision, pl)
		if it.Kind == ItemNotification {
			in.Kind = agentcore.InputNotification
			in.TaskID = pl.Task
		}
		if mode == QueueSteer && it.Kind == ItemMessage {
			in.Steer, in.Steered = p.steerer(it)
		}
	}
	// A resume too: a retried one whose turn already ended (the process
	// died before the item completed) then returns that turn's answer.
	in.MessageID = inputID(it)
	in.Location = it.Location
	in.DenyAsks = e.channel(loc.Channel).DenyAsks
	in.TurnID = "turn-" + rand.Text()[:12]
	in.Tasks = p.tasks.host(loc)

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.workers.setCancel(w, cancel)

	var parked *parkedView
	if it.Kind == ItemResume {
		// Continue the message of the turn that parked, so its pending
		// activity turns into the outcome instead of staying stale.
		if vals, err := st.Settings(ctx, parkedScope(it.ConversationID)); err == nil && vals[settingParked] != "" {
			var pv parkedView
			if json.Unmarshal([]byte(vals[settingParked]), &pv) == nil {
				parked = &pv
			}
		}
	}
	start := time.Now()
	s := newStream(ctx, e, loc, it.ConversationID, in.TurnID, inputID(it), replyTo, parked)
	if s.ad != nil {
		in.Client = clientAt(s.ad, loc)
	}
	h := &turnHost{p: p, items: items, loc: loc, stream: s, cause: turnCtx, stopTyping: keepTyping(turnCtx, s.ad, loc),
		wasParked: parked != nil, dropped: dropped}
	in.Host = h
	// process read that the conversation is no task's child.
	in.TaskLookedUp = true
	_, err := ag.Turn(turnCtx, it.ConversationID, in, s)
	h.stop()
	switch {
	case errors.Is(err, agentcore.ErrBusy):
		return true, nil
	case errors.Is(err, errItemGone):
		return false, nil // done or moved meanwhile: the worker looks again
	case err != nil:
		return false, err
	}
	res := h.res // as Finish completed it (why it was cancelled)
	p.observe(res, time.Since(start), loc)
	if h.shutdown {
		// The item stays queued: the next start continues the turn.
		return false, nil
	}
	p.approvals.posted(h.asks, loc)
	s.liveEnd(ctx, res)
	p.outbox.offer(h.out)
	return false, nil
}

// finalItems builds the outbox items of a turn's final message: edits of
// the live message's pages, sends for further pages, and edits of the
// approvals the turn settled itself.
func (p *processor) finalItems(ctx context.Context, s *stream, loc channels.Location, res agentcore.TurnResult) []Outbound {
	s.mu.Lock()
	final := s.view.final(res)
	settled := append([]agentcore.Approval(nil), s.view.settled...)
	s.mu.Unlock()
	final.Turn = res.TurnID
	refs := s.pageRefs()
	// The stream's last 429 holds for the final pages too: they go to the
	// same chat, so sending them before retry_after is refused again.
	limited := s.limitedUntil()
	var out []Outbound
	if len(final.Parts) > 0 {
		for i, page := range channels.Paginate(final, s.caps) {
			kind, msgID := OutboundSend, ""
			if i < len(refs) && refs[i] != "" {
				kind, msgID = OutboundEdit, refs[i]
			} else {
				if i == 0 {
					page.ReplyTo = s.replyTo
				}
				page.Key = s.pageKey(i)
			}
			it, ok := p.outbox.item(kind, loc, page)
			if !ok {
				continue
			}
			it.MessageID = msgID
			if limited.After(it.NextAt) {
				it.NextAt = limited
			}
			out = append(out, it)
		}
	}
	if p.env.editsOnDecide {
		settled = nil // the store edited their copies when it recorded them
	}
	for _, ap := range settled {
		posts, err := p.env.opts.Store.ApprovalPosts(ctx, ap.ID)
		if err != nil {
			continue
		}
		for _, post := range posts {
			it, ok := p.outbox.item(OutboundEdit, loc, channels.TextMessage(decisionText(ap)))
			if !ok {
				continue
			}
			it.Location, it.EditOf, it.MessageID = post.Location, post.OutboxID, post.MessageID
			out = append(out, it)
		}
	}
	return out
}

// observe records a finished turn's metrics and its log line.
func (p *processor) observe(res agentcore.TurnResult, d time.Duration, loc channels.Location) {
	m := p.env.metrics
	m.Turns.WithLabelValues(string(res.StopReason)).Inc()
	m.TurnSeconds.Observe(d.Seconds())
	m.Tokens.WithLabelValues("input").Add(float64(res.Usage.InputTokens))
	m.Tokens.WithLabelValues("output").Add(float64(res.Usage.OutputTokens))
	m.Tokens.WithLabelValues("cached").Add(float64(res.Usage.CachedTokens))
	attrs := []any{"conversation", res.ConversationID, "agent", res.AgentID, "location", loc.String(),
		"stop", string(res.StopReason), "steps", res.Steps, "duration", d.Round(time.Millisecond),
		"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens, "cached_tokens", res.Usage.CachedTokens}
	if res.StopReason == agentcore.StopError {
		p.env.log.Warn("turn failed", append(attrs, "error", res.Error)...)
		return
	}
	p.env.log.Info("turn", attrs...)
}

// keepTyping shows "typing…" while a turn runs, where the surface has it,
// renewing it as often as the surface says its indicator lasts.
func keepTyping(ctx context.Context, a channels.Adapter, loc channels.Location) (stop func()) {
	if a == nil {
		return func() {}
	}
	t, ok := a.(channels.Typer)
	caps := a.Capabilities()
	if !ok || !caps.Typing {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = t.Typing(ctx, loc)
		if caps.TypingEvery <= 0 {
			return
		}
		tick := time.NewTicker(caps.TypingEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = t.Typing(ctx, loc)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// collect merges the messages waiting behind it into one input (queue
// mode collect).
func (p *processor) collect(ctx context.Context, first Item, pl messagePayload) (messagePayload, []Item) {
	items := []Item{first}
	texts := []string{pl.Text}
	for _, m := range p.laterMessages(ctx, first) {
		items = append(items, m.item)
		texts = append(texts, m.payload.Text)
		pl.Attachments = append(pl.Attachments, m.payload.Attachments...)
	}
	pl.Text = strings.Join(texts, "\n\n")
	return pl, items
}

type queuedMessage struct {
	item    Item
	payload messagePayload
}

// laterMessages returns the message items queued behind first, in order.
func (p *processor) laterMessages(ctx context.Context, first Item) []queuedMessage {
	pending, err := p.env.opts.Store.Pending(ctx, first.ConversationID)
	if err != nil {
		return nil
	}
	var out []queuedMessage
	for _, it := range pending {
		if it.ID <= first.ID || it.Kind != ItemMessage {
			continue
		}
		pl, err := decodePayload(it.Payload)
		if err != nil {
			continue
		}
		out = append(out, queuedMessage{it, pl})
	}
	return out
}

// steerer hands a running turn the messages queued behind it (queue mode
// steer) and completes their items once the turn has appended them.
func (p *processor) steerer(first Item) (func(context.Context) []agentcore.Input, func(context.Context, []string)) {
	var mu sync.Mutex
	taken := map[string]int64{} // message id → item id
	vision := p.env.opts.AgentOptions[first.AgentID].Vision
	steer := func(ctx context.Context) []agentcore.Input {
		later := p.laterMessages(ctx, first)
		mu.Lock()
		defer mu.Unlock()
		var ins []agentcore.Input
		for _, m := range later {
			in, _ := inputFor(vision, m.payload)
			in.MessageID = inputID(m.item)
			taken[in.MessageID] = m.item.ID
			ins = append(ins, in)
		}
		return ins
	}
	steered := func(ctx context.Context, ids []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if itemID, ok := taken[id]; ok {
				if err := p.env.opts.Store.Complete(ctx, itemID); err != nil && !errors.Is(err, ErrNotFound) {
					p.env.log.Error("complete steered item", "item", itemID, "err", err)
				}
			}
		}
	}
	return steer, steered
}
