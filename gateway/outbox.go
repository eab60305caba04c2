package gateway

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// outboxParallel bounds how many locations are delivered to at once.
const outboxParallel = 16

// outbox is the part that delivers every outbound platform call durably:
// items are stored first (by whoever produces them, often in the
// transaction that completes a queue item) and delivered by run, one
// goroutine per location so a slow or rate-limited chat never holds up the
// others, each location's items in order. It delivers only the items of the
// channels this process runs.
type outbox struct {
	env  *env
	wake chan struct{}
}

func newOutbox(e *env) *outbox { return &outbox{env: e, wake: make(chan struct{}, 1)} }

// kick wakes the delivery loop.
func (o *outbox) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// item builds an outbox item for m (OutboundSend unless kind says more).
func (o *outbox) item(kind OutboundKind, loc channels.Location, m channels.Message) (Outbound, bool) {
	body, err := channels.EncodeMessage(m)
	if err != nil {
		o.env.log.Error("encode outbound message", "location", loc.String(), "err", err)
		return Outbound{}, false
	}
	now := o.env.now().UTC()
	return Outbound{Kind: kind, Location: loc.String(), Body: body, Created: now, NextAt: now}, true
}

// post sends a message durably through the outbox, outside any turn, and
// returns the item's id (0 when it could not be stored).
func (o *outbox) post(ctx context.Context, loc channels.Location, m channels.Message) int64 {
	it, ok := o.item(OutboundSend, loc, m)
	if !ok {
		return 0
	}
	return o.enqueue(ctx, it)
}

// postTo sends a message only userID sees where the surface can (a
// refusal), else an ordinary message.
func (o *outbox) postTo(ctx context.Context, loc channels.Location, userID string, m channels.Message) {
	it, ok := o.item(OutboundEphemeral, loc, m)
	if !ok {
		return
	}
	it.UserID = userID
	o.enqueue(ctx, it)
}

func (o *outbox) enqueue(ctx context.Context, it Outbound) int64 {
	ids, err := o.env.opts.Store.EnqueueOutbound(context.WithoutCancel(ctx), it)
	if err != nil {
		o.env.log.Error("queue outbound message", "location", it.Location, "err", err)
		return 0
	}
	o.kick()
	return ids[0]
}

// run delivers due outbox items until ctx ends.
func (o *outbox) run(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	d := &delivery{inflight: map[string]bool{}, sem: make(chan struct{}, outboxParallel)}
	for {
		o.deliverDue(ctx, &wg, d)
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-tick.C:
		}
	}
}

// delivery is the state of the delivery loop: which locations have a
// goroutine, and the slots.
type delivery struct {
	mu       sync.Mutex
	inflight map[string]bool
	sem      chan struct{}
}

// deliverDue starts delivery of the due items of every location that is
// not being delivered already.
func (o *outbox) deliverDue(ctx context.Context, wg *sync.WaitGroup, d *delivery) {
	items, err := o.env.opts.Store.DueOutbound(ctx, o.env.channels, o.env.now().UTC(), 500)
	if err != nil {
		if ctx.Err() == nil {
			o.env.log.Error("read outbox", "err", err)
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
		d.mu.Lock()
		busy := d.inflight[loc]
		d.mu.Unlock()
		if busy {
			continue
		}
		select {
		case d.sem <- struct{}{}:
		default:
			return // all delivery slots busy: the next round picks the rest up
		}
		d.mu.Lock()
		d.inflight[loc] = true
		d.mu.Unlock()
		wg.Add(1)
		go func(loc string, its []Outbound) {
			defer wg.Done()
			for _, it := range its {
				if ctx.Err() != nil || !o.deliver(ctx, it) {
					break
				}
			}
			d.mu.Lock()
			delete(d.inflight, loc)
			d.mu.Unlock()
			<-d.sem
			o.kick()
		}(loc, byLoc[loc])
	}
}

// deliver makes one platform call for an outbox item and records the
// outcome. It reports success.
func (o *outbox) deliver(ctx context.Context, it Outbound) bool {
	st := o.env.opts.Store
	// The item may have been delivered since the round read it (by the
	// location's previous goroutine): never send twice.
	if cur, err := st.OutboundItem(ctx, it.ID); err != nil || cur.Sent {
		return err == nil
	}
	loc, err := channels.ParseLocation(it.Location)
	if err != nil {
		_ = st.Retry(ctx, it.ID, time.Time{}, "bad location: "+err.Error(), true)
		return true
	}
	a, ok := o.env.adapter(loc)
	if !ok {
		// Not a channel of this process (DueOutbound filters them out; a
		// store without the filter lands here): leave it untouched.
		return false
	}
	msg, err := channels.DecodeMessage(it.Body)
	if err != nil {
		_ = st.Retry(ctx, it.ID, time.Time{}, "bad body: "+err.Error(), true)
		return true
	}
	if msg.Key == "" {
		// Stable across retries of this item; a turn's pages carry their
		// own (stream.pageKey), shared with the streamed sends.
		msg.Key = "ob-" + strconv.FormatInt(it.ID, 10)
	}
	var msgID string
	switch it.Kind {
	case OutboundEdit:
		target := it.MessageID
		if target == "" && it.EditOf != 0 {
			orig, err := st.OutboundItem(ctx, it.EditOf)
			if err != nil {
				_ = st.Retry(ctx, it.ID, time.Time{}, "edit of unknown item", true)
				return true
			}
			if !orig.Sent {
				_ = st.Retry(ctx, it.ID, o.env.now().Add(time.Second), "waiting for the message to be sent", false)
				return false
			}
			target = orig.MessageID
		}
		if target == "" || !a.Capabilities().Edit {
			// Nothing to edit (the send failed for good, or the platform
			// cannot edit): send the new content instead.
			ref, err := a.Send(ctx, loc, msg)
			if err != nil {
				return o.failed(ctx, it, err)
			}
			msgID = ref.ID
		} else if err := a.Edit(ctx, channels.MessageRef{Location: loc, ID: target}, msg); err != nil {
			if !channels.IsPermanent(err) {
				return o.failed(ctx, it, err)
			}
			// The message cannot be edited any more (deleted, or a surface
			// that forgot it across a restart): post the content anew
			// rather than lose it.
			o.env.log.Debug("edit refused for good; sending instead", "item", it.ID, "location", it.Location, "err", err)
			ref, err := a.Send(ctx, loc, msg)
			if err != nil {
				return o.failed(ctx, it, err)
			}
			msgID = ref.ID
		}
		if msgID == "" {
			msgID = target
		}
	case OutboundEphemeral:
		if es, ok := a.(channels.EphemeralSender); ok && a.Capabilities().Ephemeral && it.UserID != "" {
			if err := es.SendEphemeral(ctx, loc, it.UserID, msg); err != nil {
				return o.failed(ctx, it, err)
			}
			break
		}
		ref, err := a.Send(ctx, loc, msg)
		if err != nil {
			return o.failed(ctx, it, err)
		}
		msgID = ref.ID
	default:
		ref, err := a.Send(ctx, loc, msg)
		if err != nil {
			return o.failed(ctx, it, err)
		}
		msgID = ref.ID
	}
	if err := st.MarkSent(context.WithoutCancel(ctx), it.ID, msgID); err != nil {
		o.env.log.Error("mark outbound sent", "item", it.ID, "err", err)
	}
	o.env.metrics.Outbound.WithLabelValues(loc.Channel, string(it.Kind)).Inc()
	return true
}

// failed schedules a retry: after the platform's retry_after on 429, with
// exponential backoff otherwise, never for permanent errors.
func (o *outbox) failed(ctx context.Context, it Outbound, err error) bool {
	st := o.env.opts.Store
	o.env.metrics.OutboxRetries.Inc()
	if channels.IsPermanent(err) {
		o.env.log.Warn("outbound message failed for good", "item", it.ID, "location", it.Location, "err", err)
		_ = st.Retry(context.WithoutCancel(ctx), it.ID, time.Time{}, err.Error(), true)
		return true
	}
	wait := time.Second << min(it.Attempts, 8)
	if d, ok := channels.RetryAfter(err); ok {
		wait = d
	}
	if it.Attempts >= 20 {
		o.env.log.Warn("giving up on an outbound message after 20 attempts", "item", it.ID, "err", err)
		_ = st.Retry(context.WithoutCancel(ctx), it.ID, time.Time{}, err.Error(), true)
		return true
	}
	_ = st.Retry(context.WithoutCancel(ctx), it.ID, o.env.now().Add(wait), err.Error(), false)
	return false
}
