package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// outboxParallel bounds how many locations are delivered to at once.
const outboxParallel = 16

// kickOut wakes the outbox loop.
func (g *Gateway) kickOut() {
	select {
	case g.kickOutbox <- struct{}{}:
	default:
	}
}

// outboxLoop delivers due outbox items until ctx ends. Each location is
// delivered by its own goroutine (at most outboxParallel at once), its items
// in order, so a slow or rate-limited chat never holds up the others; after
// a failure, that location's later items wait for the next round.
func (g *Gateway) outboxLoop(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	inflight := map[string]bool{}
	var mu sync.Mutex
	sem := make(chan struct{}, outboxParallel)
	for {
		g.deliverDue(ctx, &wg, &mu, inflight, sem)
		select {
		case <-ctx.Done():
			return
		case <-g.kickOutbox:
		case <-tick.C:
		}
	}
}

// deliverDue starts delivery of the due items of every location that is
// not being delivered already.
func (g *Gateway) deliverDue(ctx context.Context, wg *sync.WaitGroup, mu *sync.Mutex, inflight map[string]bool, sem chan struct{}) {
	items, err := g.opts.Store.DueOutbound(ctx, g.opts.Now().UTC(), 500)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("read outbox", "err", err)
		}
		return
	}
	var order []string
	byLoc := map[string][]Outbound{}
	for _, it := range items {
		if _, ok := byLoc[it.Location]; !ok {
			order = append(order, it.Location)
		}
		byLoc[it.Location] = append(byLoc[it.Location], it)
	}
	for _, loc := range order {
		mu.Lock()
		busy := inflight[loc]
		mu.Unlock()
		if busy {
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			return // all delivery slots busy: the next round picks the rest up
		}
		mu.Lock()
		inflight[loc] = true
		mu.Unlock()
		wg.Add(1)
		go func(loc string, its []Outbound) {
			defer wg.Done()
			for _, it := range its {
				if ctx.Err() != nil || !g.deliver(ctx, it) {
					break
				}
			}
			mu.Lock()
			delete(inflight, loc)
			mu.Unlock()
			<-sem
			g.kickOut()
		}(loc, byLoc[loc])
	}
}

// deliver makes one platform call for an outbox item and records the
// outcome. It reports success.
func (g *Gateway) deliver(ctx context.Context, it Outbound) bool {
	// The item may have been delivered since the round read it (by the
	// location's previous goroutine): never send twice.
	if cur, err := g.opts.Store.OutboundItem(ctx, it.ID); err != nil || cur.Sent {
		return err == nil
	}
	loc, err := channels.ParseLocation(it.Location)
	if err != nil {
		_ = g.opts.Store.Retry(ctx, it.ID, time.Time{}, "bad location: "+err.Error(), true)
		return true
	}
	a, ok := g.adapterFor(loc)
	if !ok {
		// The channel is not running in this process (config changed);
		// keep the item for when it is.
		_ = g.opts.Store.Retry(ctx, it.ID, g.opts.Now().Add(time.Minute), "channel "+loc.Channel+" is not running", false)
		return false
	}
	var m outMessage
	if err := json.Unmarshal(it.Body, &m); err != nil {
		_ = g.opts.Store.Retry(ctx, it.ID, time.Time{}, "bad body: "+err.Error(), true)
		return true
	}
	msg := m.channels()
	var msgID string
	switch it.Kind {
	case OutboundEdit:
		target := it.MessageID
		if target == "" && it.EditOf != 0 {
			orig, err := g.opts.Store.OutboundItem(ctx, it.EditOf)
			if err != nil {
				_ = g.opts.Store.Retry(ctx, it.ID, time.Time{}, "edit of unknown item", true)
				return true
			}
			if !orig.Sent {
				_ = g.opts.Store.Retry(ctx, it.ID, g.opts.Now().Add(time.Second), "waiting for the message to be sent", false)
				return false
			}
			target = orig.MessageID
		}
		if target == "" || !a.Capabilities().Edit {
			// Nothing to edit (the send failed for good, or the platform
			// cannot edit): send the new content instead.
			ref, err := a.Send(ctx, loc, msg)
			if err != nil {
				return g.failed(ctx, it, err)
			}
			msgID = ref.ID
		} else if err := a.Edit(ctx, channels.MessageRef{Location: loc, ID: target}, msg); err != nil {
			return g.failed(ctx, it, err)
		}
		if msgID == "" {
			msgID = target
		}
	default:
		ref, err := a.Send(ctx, loc, msg)
		if err != nil {
			return g.failed(ctx, it, err)
		}
		msgID = ref.ID
	}
	if err := g.opts.Store.MarkSent(context.WithoutCancel(ctx), it.ID, msgID); err != nil {
		g.log.Error("mark outbound sent", "item", it.ID, "err", err)
	}
	g.opts.Metrics.Outbound.WithLabelValues(loc.Channel, string(it.Kind)).Inc()
	return true
}

// failed schedules a retry: after the platform's retry_after on 429, with
// exponential backoff otherwise, never for permanent errors.
func (g *Gateway) failed(ctx context.Context, it Outbound, err error) bool {
	g.opts.Metrics.OutboxRetries.Inc()
	if channels.IsPermanent(err) {
		g.log.Warn("outbound message failed for good", "item", it.ID, "location", it.Location, "err", err)
		_ = g.opts.Store.Retry(context.WithoutCancel(ctx), it.ID, time.Time{}, err.Error(), true)
		return true
	}
	wait := time.Second << min(it.Attempts, 8)
	if d, ok := channels.RetryAfter(err); ok {
		wait = d
	}
	if it.Attempts >= 20 {
		g.log.Warn("giving up on an outbound message after 20 attempts", "item", it.ID, "err", err)
		_ = g.opts.Store.Retry(context.WithoutCancel(ctx), it.ID, time.Time{}, err.Error(), true)
		return true
	}
	_ = g.opts.Store.Retry(context.WithoutCancel(ctx), it.ID, g.opts.Now().Add(wait), err.Error(), false)
	return false
}
