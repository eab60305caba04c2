package gateway

import (
	"context"
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

// turn runs one item's turn and completes it with the final reply.
func (p *processor) turn(ctx context.Context, w *worker, it Item, ag *agentcore.Agent, loc channels.Location) (bool, error) {
	e := p.env
	st := e.opts.Store
	in := agentcore.Input{Kind: agentcore.InputResume}
	items := []Item{it}
	replyTo := ""
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
		var dropped string
		in, dropped = inputFor(e.opts.AgentOptions[it.AgentID].Vision, pl)
		if dropped != "" && it.Attempts <= 1 {
			p.outbox.post(ctx, loc, notice(dropped))
		}
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
	in.TurnID = "turn-" + newToken()[:12]
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
	stopTyping := keepTyping(turnCtx, s.ad, loc)
	res, err := ag.Turn(turnCtx, it.ConversationID, in, s)
	stopTyping()
	s.stop()
	if errors.Is(err, agentcore.ErrBusy) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	p.observe(res, time.Since(start), loc)
	if cause := context.Cause(turnCtx); res.StopReason == agentcore.StopCancelled {
		switch {
		case errors.Is(cause, errShutdown):
			// Leave the item queued: the next start continues the turn.
			return false, nil
		case errors.Is(cause, errInterrupted):
			res.Error = "interrupted by a newer message"
		case errors.Is(cause, errStopped):
			res.Error = "stopped"
		}
	}
	if res.Deferred || res.Idle {
		// Nothing new to show: a notification kept for the parked turn, or
		// a resume another turn already settled.
		if _, err := st.CompleteWithOutbound(context.WithoutCancel(ctx), it.ID); err != nil {
			return false, fmt.Errorf("complete item %d: %w", it.ID, err)
		}
		if res.Idle && parked != nil {
			p.rememberParked(ctx, it.ConversationID, "")
		}
		s.liveEnd(ctx, res)
		return false, nil
	}
	// Asks are posted before the item completes: a crash in between reruns
	// the item, whose turn parks again and finds them posted.
	if res.StopReason == agentcore.StopRequiresApproval {
		for _, ap := range res.Pending {
			p.approvals.post(ctx, ap, loc)
		}
	}
	out := p.finalItems(ctx, s, loc, res)
	// A parking turn's message is remembered before the item completes (a
	// crash in between reruns the item, which parks again); a resumed
	// turn's is forgotten only after: a crash in between reruns the
	// resume, which must still find the message to finish.
	parks := res.StopReason == agentcore.StopRequiresApproval || res.StopReason == agentcore.StopWaitingForTask
	if parks {
		b, _ := json.Marshal(s.view.parked(loc.String(), s.pageRefs(), nil))
		p.rememberParked(ctx, it.ConversationID, string(b))
	}
	// The final reply is enqueued in the same transaction that completes the
	// item: a crash before it re-runs the item (the turn continues from its
	// transcript), a crash after it delivers the reply.
	if _, err := st.CompleteWithOutbound(context.WithoutCancel(ctx), it.ID, out...); err != nil {
		return false, fmt.Errorf("complete item %d: %w", it.ID, err)
	}
	if parked != nil && !parks {
		p.rememberParked(ctx, it.ConversationID, "")
	}
	for _, extra := range items[1:] {
		if err := st.Complete(context.WithoutCancel(ctx), extra.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return false, fmt.Errorf("complete collected item %d: %w", extra.ID, err)
		}
	}
	s.liveEnd(ctx, res)
	p.outbox.kick()
	return false, nil
}

// rememberParked stores the message of the conversation's parked turn
// (view: a parkedView in JSON), or forgets it ("").
func (p *processor) rememberParked(ctx context.Context, conv, view string) {
	if err := p.env.opts.Store.SetSetting(context.WithoutCancel(ctx), parkedScope(conv), settingParked, view); err != nil {
		p.env.log.Warn("remember the parked turn's message", "conversation", conv, "err", err)
	}
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
