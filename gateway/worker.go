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

// worker works one conversation's queue, one item at a time.
type worker struct {
	conv     string
	cancel   context.CancelCauseFunc // cancels the running turn
	again    bool                    // work arrived while the worker was finishing
	stopping bool                    // shutdown: take no new items
}

var errInterrupted = errors.New("interrupted by a new message")
var errStopped = errors.New("stopped with /stop")

// kick makes sure a worker runs for the conversation.
func (g *Gateway) kick(conv string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx == nil || g.ctx.Err() != nil {
		return
	}
	if w, ok := g.running[conv]; ok {
		w.again = true
		return
	}
	w := &worker{conv: conv, cancel: func(error) {}}
	g.running[conv] = w
	g.opts.Metrics.Busy.Inc()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.opts.Metrics.Busy.Dec()
		g.work(g.ctx, w)
	}()
}

// interrupt cancels the conversation's running turn, if any.
func (g *Gateway) interrupt(conv string) bool {
	return g.cancelTurn(conv, errInterrupted)
}

func (g *Gateway) cancelTurn(conv string, cause error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.running[conv]; ok {
		w.cancel(cause)
		return true
	}
	return false
}

// work processes queue items until the queue is empty.
func (g *Gateway) work(ctx context.Context, w *worker) {
	retry := time.Duration(0)
loop:
	for {
		g.mu.Lock()
		w.again = false
		stopping := w.stopping
		g.mu.Unlock()
		if stopping || ctx.Err() != nil {
			break loop
		}
		it, err := g.opts.Store.Peek(ctx, w.conv)
		if errors.Is(err, ErrNotFound) {
			g.mu.Lock()
			if w.again {
				g.mu.Unlock()
				continue
			}
			delete(g.running, w.conv)
			g.mu.Unlock()
			return
		}
		if err != nil {
			g.log.Error("read queue", "conversation", w.conv, "err", err)
			retry = backoff(retry)
			if !sleepCtx(ctx, retry) {
				break loop
			}
			continue
		}
		busy, err := g.process(ctx, w, it)
		switch {
		case busy:
			// Another process holds the lease; look again later.
			retry = backoff(retry)
			if !sleepCtx(ctx, retry) {
				break loop
			}
			continue
		case err != nil:
			g.log.Error("work queue item", "conversation", w.conv, "item", it.ID, "err", err)
			retry = backoff(retry)
			if !sleepCtx(ctx, retry) {
				break loop
			}
			continue
		}
		retry = 0
	}
	g.mu.Lock()
	delete(g.running, w.conv)
	g.mu.Unlock()
}

func backoff(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 100 * time.Millisecond
	case d >= 10*time.Second:
		return 10 * time.Second
	}
	return d * 2
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// process runs one item's turn and completes it with the final reply.
func (g *Gateway) process(ctx context.Context, w *worker, it Item) (busy bool, err error) {
	ag, ok := g.opts.Agents[it.AgentID]
	if !ok {
		g.log.Error("queue item for an unknown agent; dropping it", "agent", it.AgentID, "item", it.ID)
		return false, g.opts.Store.Complete(ctx, it.ID)
	}
	loc, err := channels.ParseLocation(it.Location)
	if err != nil {
		g.log.Error("queue item with a bad location; dropping it", "item", it.ID, "err", err)
		return false, g.opts.Store.Complete(ctx, it.ID)
	}
	in := agentcore.Input{Kind: agentcore.InputResume}
	items := []Item{it}
	replyTo := ""
	switch it.Kind {
	case ItemMessage, ItemNotification:
		var p messagePayload
		if err := json.Unmarshal(it.Payload, &p); err != nil {
			g.log.Error("queue item with a bad payload; dropping it", "item", it.ID, "err", err)
			return false, g.opts.Store.Complete(ctx, it.ID)
		}
		replyTo = p.MessageID
		mode := g.queueMode(loc)
		if mode == QueueCollect {
			p, items = g.collect(ctx, it, p)
		}
		var dropped string
		in, dropped = g.inputFor(it.AgentID, p)
		if dropped != "" && it.Attempts <= 1 {
			g.post(ctx, loc, outMessage{Notice: dropped})
		}
		if it.Kind == ItemNotification {
			in.Kind = agentcore.InputNotification
		}
		in.MessageID = inputID(it)
		if mode == QueueSteer && it.Kind == ItemMessage {
			in.Steer, in.Steered = g.steerer(it)
		}
	}

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g.mu.Lock()
	w.cancel = cancel
	g.mu.Unlock()

	g.slots <- struct{}{}
	defer func() { <-g.slots }()

	start := time.Now()
	r := g.newRenderer(ctx, loc, ag.ID(), it.ConversationID)
	r.replyTo = replyTo
	if it.Kind == ItemResume {
		// Continue the message of the turn that parked, so its pending
		// activity turns into the outcome instead of staying stale.
		g.mu.Lock()
		if p, ok := g.parked[it.ConversationID]; ok && p.loc == it.Location {
			r.adopt(p)
		}
		delete(g.parked, it.ConversationID)
		g.mu.Unlock()
	}
	stopTyping := g.keepTyping(turnCtx, loc)
	res, err := ag.Turn(turnCtx, it.ConversationID, in, r)
	stopTyping()
	r.stop()
	if errors.Is(err, agentcore.ErrBusy) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	g.opts.Metrics.Turns.WithLabelValues(string(res.StopReason)).Inc()
	g.opts.Metrics.TurnSeconds.Observe(time.Since(start).Seconds())
	g.opts.Metrics.Tokens.WithLabelValues("input").Add(float64(res.Usage.InputTokens))
	g.opts.Metrics.Tokens.WithLabelValues("output").Add(float64(res.Usage.OutputTokens))
	g.opts.Metrics.Tokens.WithLabelValues("cached").Add(float64(res.Usage.CachedTokens))
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
	// The final reply is enqueued in the same transaction that completes
	// the item: a crash before it re-runs the item (the turn continues
	// from its transcript), a crash after it delivers the reply.
	final := r.final(res)
	if res.StopReason == agentcore.StopRequiresApproval {
		if p, ok := r.parkedState(); ok {
			g.mu.Lock()
			g.parked[it.ConversationID] = p
			g.mu.Unlock()
		}
	}
	if _, err := g.opts.Store.CompleteWithOutbound(context.WithoutCancel(ctx), it.ID, final...); err != nil {
		return false, fmt.Errorf("complete item %d: %w", it.ID, err)
	}
	for _, extra := range items[1:] {
		if err := g.opts.Store.Complete(context.WithoutCancel(ctx), extra.ID); err != nil {
			return false, fmt.Errorf("complete collected item %d: %w", extra.ID, err)
		}
	}
	g.kickOut()
	return false, nil
}

// collect merges the messages waiting behind it into one input (queue
// modes collect and steer).
func (g *Gateway) collect(ctx context.Context, first Item, p messagePayload) (messagePayload, []Item) {
	items := []Item{first}
	texts := []string{p.Text}
	for _, m := range g.laterMessages(ctx, first) {
		items = append(items, m.item)
		texts = append(texts, m.payload.Text)
		p.Attachments = append(p.Attachments, m.payload.Attachments...)
	}
	p.Text = strings.Join(texts, "\n\n")
	return p, items
}

type queuedMessage struct {
	item    Item
	payload messagePayload
}

// laterMessages returns the message items queued behind first, in order.
func (g *Gateway) laterMessages(ctx context.Context, first Item) []queuedMessage {
	pending, err := g.opts.Store.Pending(ctx, first.ConversationID)
	if err != nil {
		return nil
	}
	var out []queuedMessage
	for _, it := range pending {
		if it.ID <= first.ID || it.Kind != ItemMessage {
			continue
		}
		var p messagePayload
		if json.Unmarshal(it.Payload, &p) != nil {
			continue
		}
		out = append(out, queuedMessage{it, p})
	}
	return out
}

// keepTyping shows "typing…" while a turn runs, where the platform has it
// (Telegram's indicator lasts five seconds, so it is renewed every four).
func (g *Gateway) keepTyping(ctx context.Context, loc channels.Location) (stop func()) {
	a, ok := g.adapterFor(loc)
	if !ok {
		return func() {}
	}
	t, ok := a.(channels.Typer)
	if !ok || !a.Capabilities().Typing {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(4 * time.Second)
		defer tick.Stop()
		for {
			_ = t.Typing(ctx, loc)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// inputID is the deterministic message id of a queue item's input, so a
// retried item continues its turn instead of appending its input twice.
func inputID(it Item) string { return fmt.Sprintf("in-%s-%d", it.ConversationID, it.ID) }

// steerer hands a running turn the messages queued behind it (queue mode
// steer) and completes their items once the turn has appended them.
func (g *Gateway) steerer(first Item) (func(context.Context) []agentcore.Input, func(context.Context, []string)) {
	var mu sync.Mutex
	taken := map[string]int64{} // message id → item id
	steer := func(ctx context.Context) []agentcore.Input {
		later := g.laterMessages(ctx, first)
		mu.Lock()
		defer mu.Unlock()
		var ins []agentcore.Input
		for _, m := range later {
			in, _ := g.inputFor(m.item.AgentID, m.payload)
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
				if err := g.opts.Store.Complete(ctx, itemID); err != nil && !errors.Is(err, ErrNotFound) {
					g.log.Error("complete steered item", "item", itemID, "err", err)
				}
			}
		}
	}
	return steer, steered
}
