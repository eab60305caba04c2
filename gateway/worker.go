package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
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
	switch it.Kind {
	case ItemMessage, ItemNotification:
		var p messagePayload
		if err := json.Unmarshal(it.Payload, &p); err != nil {
			g.log.Error("queue item with a bad payload; dropping it", "item", it.ID, "err", err)
			return false, g.opts.Store.Complete(ctx, it.ID)
		}
		if mode := g.queueMode(loc); mode == QueueCollect || mode == QueueSteer {
			p, items = g.collect(ctx, it, p)
		}
		in = g.inputFor(it.AgentID, p)
		if it.Kind == ItemNotification {
			in.Kind = agentcore.InputNotification
		}
		in.MessageID = fmt.Sprintf("in-%s-%d", it.ConversationID, it.ID)
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
	if a, ok := g.adapterFor(loc); ok {
		if t, ok := a.(channels.Typer); ok {
			_ = t.Typing(ctx, loc)
		}
	}
	res, err := ag.Turn(turnCtx, it.ConversationID, in, r)
	r.stop()
	if errors.Is(err, agentcore.ErrBusy) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	g.opts.Metrics.Turns.WithLabelValues(string(res.StopReason)).Inc()
	g.opts.Metrics.TurnSeconds.Observe(time.Since(start).Seconds())
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
	if _, err := g.opts.Store.CompleteWithOutbound(context.WithoutCancel(ctx), it.ID, r.final(res)...); err != nil {
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
	pending, err := g.opts.Store.Pending(ctx, first.ConversationID)
	if err != nil {
		return p, []Item{first}
	}
	items := []Item{first}
	texts := []string{p.Text}
	for _, it := range pending {
		if it.ID == first.ID || it.Kind != ItemMessage {
			continue
		}
		var q messagePayload
		if json.Unmarshal(it.Payload, &q) != nil {
			continue
		}
		items = append(items, it)
		texts = append(texts, q.Text)
		p.Attachments = append(p.Attachments, q.Attachments...)
	}
	p.Text = strings.Join(texts, "\n\n")
	return p, items
}
