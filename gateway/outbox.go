package gateway

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// outboxParallel bounds how many locations are delivered to at once (a
// delivery holds its slot while the platform answers and its MarkSent
// commits).
const outboxParallel = 64

// outbox is the part that delivers every outbound platform call durably:
// items are stored first (by whoever produces them, often in the
// transaction that completes a queue item) and delivered by run, one
// goroutine per location so a slow or rate-limited chat never holds up the
// others, each location's items in order. It delivers only the items of the
// channels this process runs.
//
// A turn hands the items it just stored to offer, which delivers them at
// once without reading the outbox back; everything else (retries, items
// other processes or the decide path stored) is found by a scan of the due
// items, on kick and twice a second.
type outbox struct {
	env  *env
	wake chan struct{}
	d    *delivery
	// started is when this process's outbox began: an unsent item created
	// before it may have been sent by the process that died.
	started time.Time
	// known is the newest item id handed to delivery: the poll for other
	// processes' items need not scan for this process's own.
	known atomic.Int64
}

// scanEvery is how often the loop scans without a reason to, in ticks: so
// an item another process wrote (whose id this process's own newer ones
// hid from the poll) waits at most a second.
const scanEvery = 2

func newOutbox(e *env) *outbox {
	return &outbox{env: e, wake: make(chan struct{}, 1), d: &delivery{locs: map[string]*locQueue{}, sem: make(chan struct{}, outboxParallel)},
		started: e.now()}
}

// kick wakes the delivery loop for a scan.
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
	it.ID = ids[0]
	o.offer([]Outbound{it})
	return ids[0]
}

// run delivers due outbox items until ctx ends.
func (o *outbox) run(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	d := o.d
	d.mu.Lock()
	d.ctx = ctx
	d.from = 0
	// Items stored before this start (or by the decide path, or another
	// process) are found only by scans: until the first complete one,
	// every offer waits for it, so none overtakes them.
	d.seq++
	d.flooded = d.seq
	d.mu.Unlock()
	o.holdWaiting(ctx)
	defer func() {
		d.mu.Lock()
		d.ctx = nil
		d.mu.Unlock()
		d.wg.Wait()
	}()
	fromStart := true
	for ticks := 0; ; {
		o.deliverDue(ctx, scanLimit, fromStart)
		for {
			fromStart = false
			select {
			case <-ctx.Done():
				return
			case <-o.wake:
			case <-tick.C:
				// Every scanEvery ticks a scan reads from the oldest
				// unsent item: what the cursor passed that this process
				// was not told of (another process's retry, an item not
				// due when a scan read past it). Between them a tick
				// scans only when something waits for one (deferred
				// items, a retry due now).
				if ticks++; ticks%scanEvery == 0 {
					fromStart = true
				} else if !o.scanWanted() {
					continue
				}
			}
			if o.putOff() {
				continue
			}
			break
		}
	}
}

// holdWaiting holds the chats of the items an earlier process left waiting
// out a retry or a rate limit (up to maxDeferred of them), as if this
// process had scheduled them: a chat's next message does not overtake
// one of them after a restart either.
func (o *outbox) holdWaiting(ctx context.Context) {
	items, err := o.env.opts.Store.WaitingOutbound(ctx, o.env.channels, o.env.now().UTC(), maxDeferred)
	if err != nil {
		if ctx.Err() == nil {
			o.env.log.Error("read the outbox's waiting items", "err", err)
		}
		return
	}
	d := o.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, it := range items {
		o.laterLocked(it.ID, it.Location, it.NextAt)
	}
}

// putOff reports whether a scan would be wasted: the in-memory queues have
// no room for what it reads (every offer and every drained location asks
// for one while they are full, and each would read scanLimit items only to
// leave them in the store). The delivery that makes the room kicks.
func (o *outbox) putOff() bool {
	d := o.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.queued+scanLimit <= maxQueued {
		return false
	}
	d.roomWanted = true
	return true
}

// roomLocked kicks the scan putOff put off once there is room; d.mu held.
func (o *outbox) roomLocked() {
	d := o.d
	if d.roomWanted && d.queued+scanLimit <= maxQueued {
		d.roomWanted = false
		o.kick()
	}
}

// scanWanted reports whether items wait for a scan: deferred locations, a
// scan that read its limit, or a retry whose time has come.
func (o *outbox) scanWanted() bool {
	d := o.d
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.deferred) > 0 || d.flooded != 0 || d.more || (!d.retryAt.IsZero() && !o.env.now().Before(d.retryAt))
}

// noticed is told the newest outbox id in the store (the poll for other
// processes' items): a scan runs only when it is not this process's own.
func (o *outbox) noticed(id int64) {
	if id > o.known.Load() {
		o.kick()
	}
}

// delivery is the state of the delivery loop: the locations that have a
// goroutine (each with the items handed to it), the locations whose
// unsent items were left to a scan, and the slots. It holds only
// locations with undelivered items.
type delivery struct {
	mu   sync.Mutex
	ctx  context.Context // set while run runs
	locs map[string]*locQueue
	// deferred are locations with unsent items no goroutine was handed (no
	// slot was free, or a delivery failed): a later item must not overtake
	// them, so until a scan hands them over, their offers wait for it too.
	// At most maxDeferred; past that every offer waits for a scan. The
	// value is the deferral's number (seq): a scan clears only deferrals
	// made before it read the outbox, whose items it has seen.
	deferred map[string]uint64
	seq      uint64
	flooded  uint64 // the seq at which the map overflowed; 0: it did not
	sem      chan struct{}
	wg       sync.WaitGroup
	// waiting are locations handed items while every slot was busy, in
	// the order they came; queued counts the items all queues hold.
	waiting []string
	queued  int
	// retryAt is the earliest retry this process scheduled since the last
	// scan (zero: none).
	retryAt time.Time
	// more: the last scan read as many items as it could, so more may be
	// due; the next tick scans in full.
	more bool
	// roomWanted: a scan was put off because the queues had no room for
	// what it reads; the delivery that makes room kicks.
	roomWanted bool
	// from is the scans' cursor: every due unsent item at or below it is
	// in memory (handed to a location's queue), so a scan reads the items
	// after it. Without it each scan read the oldest unsent items again,
	// nearly all of them queued already: with asks parking faster than
	// the chat takes their messages, 93% of the rows scans read
	// (bench/gatewayload -phases park). Whatever leaves an item to a
	// later scan (a deferral, a busy location's newer item, a failed
	// delivery, an item not due yet) lowers it below that item
	// (lowerLocked); the periodic scan reads from the start, and a retry
	// whose time came from below it.
	from int64
	// lowered is the lowest cursor lower set while a scan read the store.
	lowered int64
	// later are the items not due yet (a retry, a chat's rate limit) by
	// id: this process's, and at start those an earlier one left
	// (holdWaiting). The scan at their time reads from below them. Until
	// then their locations (laterLocs counts them) are held: a chat's
	// next message does not overtake one that waits out a retry. At most
	// maxDeferred; past that the periodic scan from the start finds them
	// and their locations are not held.
	later     map[int64]laterItem
	laterLocs map[string]int
}

// laterItem is an item not due yet: its time and location.
type laterItem struct {
	at  time.Time
	loc string
}

// maxDeferred bounds the locations remembered as deferred; maxQueued the
// items held in memory for delivery (past it they wait in the store for a
// scan).
const (
	maxDeferred = 10000
	maxQueued   = 4096
)

// scanLimit is how many due items one scan reads.
const scanLimit = 500

// locQueue is what one location's goroutine has still to deliver.
type locQueue struct {
	items  []Outbound
	maxID  int64 // the newest item ever handed to the goroutine
	rescan bool  // items were left to a scan: kick when done
}

func (q *locQueue) add(items []Outbound) {
	q.items = append(q.items, items...)
	for _, it := range items {
		q.maxID = max(q.maxID, it.ID)
	}
}

// handled records the newest id handed to delivery (see outbox.known).
func (o *outbox) handled(items []Outbound) {
	for _, it := range items {
		for {
			k := o.known.Load()
			if it.ID <= k || o.known.CompareAndSwap(k, it.ID) {
				break
			}
		}
	}
}

// offer delivers items (stored, with their ids) now: each location's are
// added to its goroutine, or one is started. Items that find no free slot
// are left to a scan, and so are later items of their location; items not
// due yet are left to the scan at their time.
func (o *outbox) offer(items []Outbound) {
	if len(items) == 0 {
		return
	}
	o.handled(items)
	d := o.d
	rest := false
	now := o.env.now()
	d.mu.Lock()
	for _, it := range items {
		if it.NextAt.After(now) {
			// Not due yet (a chat's rate limit holds it): the scan
			// delivers it when it is.
			o.laterLocked(it.ID, it.Location, it.NextAt)
			continue
		}
		_, deferred := d.deferred[it.Location]
		deferred = deferred || d.laterLocs[it.Location] > 0
		if d.ctx == nil || d.flooded != 0 || deferred || !o.handLocked(it.Location, []Outbound{it}) {
			o.deferLocked(it.Location, it.ID)
			rest = true
		}
	}
	d.mu.Unlock()
	if rest {
		o.kick()
	}
}

// deferLocked records that loc has unsent items left to a scan, the
// oldest of them id; d.mu held.
func (o *outbox) deferLocked(loc string, id int64) {
	d := o.d
	o.lowerLocked(id)
	if d.deferred == nil {
		d.deferred = map[string]uint64{}
	}
	d.seq++
	if _, ok := d.deferred[loc]; !ok && len(d.deferred) >= maxDeferred {
		d.flooded = d.seq
		return
	}
	d.deferred[loc] = d.seq
}

// lowerLocked moves the scans' cursor below id, an item left to a later
// scan; d.mu held.
func (o *outbox) lowerLocked(id int64) {
	d := o.d
	d.from = min(d.from, id-1)
	d.lowered = min(d.lowered, id-1)
}

// handLocked gives items of loc to loc's goroutine, starting one if a slot
// is free, else queueing them until one is; false when the queues are
// full. d.mu held.
func (o *outbox) handLocked(loc string, items []Outbound) bool {
	d := o.d
	if d.ctx == nil || d.ctx.Err() != nil {
		return false
	}
	if q, ok := d.locs[loc]; ok {
		if d.queued+len(items) > maxQueued {
			return false
		}
		q.add(items)
		d.queued += len(items)
		return true
	}
	q := &locQueue{}
	select {
	case d.sem <- struct{}{}:
	default:
		if d.queued+len(items) > maxQueued {
			return false
		}
		q.add(items)
		d.locs[loc] = q
		d.queued += len(items)
		d.waiting = append(d.waiting, loc)
		return true
	}
	q.add(items)
	d.locs[loc] = q
	d.queued += len(items)
	o.startLocked(loc)
	return true
}

// startLocked starts the goroutine of loc, which holds a slot; d.mu held.
func (o *outbox) startLocked(loc string) {
	d := o.d
	q := d.locs[loc]
	d.wg.Add(1)
	ctx := d.ctx
	go func() {
		defer d.wg.Done()
		o.drain(ctx, loc, q)
	}()
}

// drain delivers a location's items in order until none is left or one
// fails (it is retried later: a scan finds it and the ones after it).
func (o *outbox) drain(ctx context.Context, loc string, q *locQueue) {
	d := o.d
	for {
		d.mu.Lock()
		if len(q.items) == 0 || ctx.Err() != nil {
			d.queued -= len(q.items)
			delete(d.locs, loc)
			rescan := q.rescan || len(q.items) > 0 || len(d.deferred) > 0 || d.flooded != 0
			// The slot goes to the location that waited longest, or back.
			if len(d.waiting) > 0 && ctx.Err() == nil {
				next := d.waiting[0]
				d.waiting = d.waiting[1:]
				o.startLocked(next)
			} else {
				for _, w := range d.waiting {
					d.queued -= len(d.locs[w].items)
					delete(d.locs, w)
				}
				d.waiting = nil
				<-d.sem
			}
			if len(d.locs) == 0 {
				// A map keeps the buckets of its largest size: the busiest
				// moment's locations, for as long as the process runs.
				d.locs = map[string]*locQueue{}
			}
			d.mu.Unlock()
			if rescan {
				o.kick()
			}
			return
		}
		it := q.items[0]
		q.items = q.items[1:]
		d.queued--
		o.roomLocked()
		d.mu.Unlock()
		if !o.deliver(ctx, it) {
			d.mu.Lock()
			d.queued -= len(q.items)
			q.items, q.rescan = nil, true
			o.deferLocked(loc, it.ID)
			o.roomLocked()
			d.mu.Unlock()
		}
	}
}

// deliverDue scans the due items after the cursor (or all, fromStart) and
// hands each location's to its goroutine; a location being delivered
// already gets the ones newer than what it holds, after them.
func (o *outbox) deliverDue(ctx context.Context, limit int, fromStart bool) {
	d := o.d
	d.mu.Lock()
	seen := d.seq // deferrals up to here are in what the scan reads
	now := o.env.now().UTC()
	start, cursor := d.from, d.from
	if fromStart {
		start = 0
	}
	var came int64 // the newest item whose time came
	if !d.retryAt.IsZero() && !now.Before(d.retryAt) {
		// The items whose time came may be below the cursor.
		d.retryAt = time.Time{}
		for id, l := range d.later {
			if now.Before(l.at) {
				if d.retryAt.IsZero() || l.at.Before(d.retryAt) {
					d.retryAt = l.at
				}
				continue
			}
			start, came = min(start, id-1), max(came, id)
			delete(d.later, id)
			if d.laterLocs[l.loc]--; d.laterLocs[l.loc] <= 0 {
				delete(d.laterLocs, l.loc)
			}
		}
		if len(d.later) == 0 {
			d.later, d.laterLocs = nil, nil
		}
	}
	d.lowered = math.MaxInt64
	d.mu.Unlock()
	items, err := o.env.opts.Store.DueOutboundAfter(ctx, o.env.channels, now, start, limit)
	if err != nil {
		if ctx.Err() == nil {
			o.env.log.Error("read outbox", "err", err)
		}
		d.mu.Lock()
		d.from = min(d.from, start) // what it was to read waits for the next
		d.mu.Unlock()
		return
	}
	o.handled(items)
	var order []string
	byLoc := map[string][]Outbound{}
	for _, it := range items {
		if _, ok := byLoc[it.Location]; !ok {
			order = append(order, it.Location)
		}
		byLoc[it.Location] = append(byLoc[it.Location], it)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// clear forgets a deferral the scan has seen the items of.
	clear := func(loc string) {
		if n, ok := d.deferred[loc]; ok && n <= seen {
			delete(d.deferred, loc)
		}
	}
	// Only a scan that read every due item knows a location's whole
	// backlog; after a partial one the deferrals stay.
	complete := len(items) < limit
	d.more = !complete
	// The cursor moves past what the scan read (items after start) and
	// stays below what it left (deferLocked below) and whatever was left
	// meanwhile: both lowered d.lowered.
	if len(items) > 0 {
		last := items[len(items)-1].ID
		cursor = max(cursor, last)
		if !complete && came > last {
			// It stopped short of an item whose time came.
			cursor = last
		}
	}
	handedAll := true
	for _, loc := range order {
		its := byLoc[loc]
		if d.laterLocs[loc] > 0 {
			// An item of it waits out its retry: the rest wait for it.
			o.deferLocked(loc, its[0].ID)
			continue
		}
		if q, busy := d.locs[loc]; busy {
			// Its goroutine holds the items up to maxID; the newer ones
			// (offered while it was deferred, an edit by the decide path,
			// another process's) go after them.
			i := slices.IndexFunc(its, func(it Outbound) bool { return it.ID > q.maxID })
			if i < 0 {
				continue
			}
			its = its[i:]
		}
		if !o.handLocked(loc, its) {
			handedAll = false
			o.deferLocked(loc, its[0].ID)
			continue
		}
		if complete {
			clear(loc)
		}
	}
	d.from = min(cursor, d.lowered)
	if complete && handedAll {
		// Deferred locations the scan did not see have nothing due (a
		// failed item waits for its retry time, as before).
		for loc := range d.deferred {
			if _, ok := byLoc[loc]; !ok && d.laterLocs[loc] == 0 {
				clear(loc)
			}
		}
		if d.flooded != 0 && d.flooded <= seen {
			d.flooded = 0
		}
	}
}

// deliver makes one platform call for an outbox item and records the
// outcome. It reports success.
func (o *outbox) deliver(ctx context.Context, it Outbound) bool {
	st := o.env.opts.Store
	// The item may have been delivered since the round read it (by the
	// location's previous goroutine): never send twice.
	if sent, err := st.OutboundSent(ctx, it.ID); err != nil || sent {
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
	if it.Attempts > 0 || it.Created.Before(o.started) {
		// An earlier attempt, or the process that died, may have posted
		// it before recording so (the send-then-crash window).
		msg.MaybeSentSince = it.Created
		if cp, ok := st.(ChatPosts); ok && len(msg.ButtonRows()) > 0 {
			// What is on record around it, so that an adapter without a
			// way to find that post can disarm it (Telegram).
			var err error
			if msg.PostedBefore, msg.PostedSince, err = cp.ChatPosts(ctx, loc.Chat().String(), it.Created); err != nil {
				o.env.log.Warn("read the posts around a retried send", "item", it.ID, "err", err)
				msg.PostedBefore, msg.PostedSince = "", nil
			}
		}
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
				o.retryLater(ctx, it, o.env.now().Add(time.Second), "waiting for the message to be sent")
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
	o.retryLater(context.WithoutCancel(ctx), it, o.env.now().Add(wait), err.Error())
	return false
}

// retryLater schedules an item's next attempt and makes the loop scan when
// it comes due.
func (o *outbox) retryLater(ctx context.Context, it Outbound, at time.Time, why string) {
	_ = o.env.opts.Store.Retry(ctx, it.ID, at, why, false)
	d := o.d
	d.mu.Lock()
	o.laterLocked(it.ID, it.Location, at)
	d.mu.Unlock()
}

// laterLocked records that item id of loc is due at at; d.mu held.
func (o *outbox) laterLocked(id int64, loc string, at time.Time) {
	d := o.d
	if d.retryAt.IsZero() || at.Before(d.retryAt) {
		d.retryAt = at
	}
	if l, ok := d.later[id]; ok {
		l.at = at // a retry of a retry
		d.later[id] = l
		return
	}
	if len(d.later) >= maxDeferred {
		return
	}
	if d.later == nil {
		d.later, d.laterLocs = map[int64]laterItem{}, map[string]int{}
	}
	d.later[id] = laterItem{at: at, loc: loc}
	d.laterLocs[loc]++
}
