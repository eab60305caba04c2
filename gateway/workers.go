package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
)

// workers is the part that runs one worker per busy conversation: a
// conversation's items are worked one at a time, in order, under the
// conversation's lease (taken by the turn); different conversations run
// concurrently, at most Options.Workers turns at once. A worker works only
// items of this process's channels; when the oldest item of a conversation
// belongs to another channel it stops and leaves the conversation to the
// process that runs that channel.
//
// Workers run on at most Options.Workers goroutines that are not waiting
// out a backoff; the busy conversations beyond them wait in a queue, not
// on goroutines of their own, and a goroutine that finished an item while
// others wait takes the next conversation and queues its own at the back
// (one item per turn in the queue, as the slots were before). A goroutine
// whose queue is empty ends. So a backlog of thousands of conversations
// costs queue entries, not thousands of goroutines (whose descriptors the
// runtime keeps for good), and a goroutine's grown stack serves many
// turns.
type workers struct {
	env     *env
	process func(ctx context.Context, w *worker, it Item) (busy bool, err error)

	mu       sync.Mutex
	running  map[string]*worker // by conversation id
	waiting  []*worker          // kicked, waiting for a goroutine, in order
	active   int                // goroutines working (not waiting out a backoff)
	slots    chan struct{}
	wg       sync.WaitGroup
	ctx      context.Context // set by start
	draining bool            // shutting down: no new workers
}

// worker works one conversation's queue, one item at a time.
type worker struct {
	conv     string
	cancel   context.CancelCauseFunc // cancels the running turn
	again    bool                    // work arrived while the worker was finishing
	stopping bool                    // shutdown: take no new items
	wake     chan struct{}           // a kick while the worker waits (busy) makes it look again
}

// peekOnly makes Peek a read: no channel matches an empty list, so no
// attempt is counted (a turn counts its attempt when it takes the item
// with the lease, in one write: turnHost.Begin).
var peekOnly = []string{}

var (
	errInterrupted = errors.New("interrupted by a new message")
	errStopped     = errors.New("stopped with /stop")
	errShutdown    = errors.New("switchboard is shutting down")
)

func newWorkers(e *env) *workers {
	return &workers{env: e, running: map[string]*worker{}, slots: make(chan struct{}, e.opts.Workers)}
}

func (ws *workers) start(ctx context.Context) {
	ws.mu.Lock()
	ws.ctx = ctx
	ws.mu.Unlock()
}

// kick makes sure a worker runs for the conversation.
func (ws *workers) kick(conv string) {
	if only := ws.env.opts.Conversations; only != nil && !only(conv) {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.ctx == nil || ws.ctx.Err() != nil || ws.draining {
		return
	}
	if w, ok := ws.running[conv]; ok {
		w.again = true
		select {
		case w.wake <- struct{}{}:
		default:
		}
		return
	}
	w := &worker{conv: conv, cancel: func(error) {}, wake: make(chan struct{}, 1)}
	ws.running[conv] = w
	ws.env.metrics.Busy.Inc()
	if ws.active >= cap(ws.slots) {
		ws.waiting = append(ws.waiting, w)
		return
	}
	ws.active++
	ws.wg.Add(1)
	ctx := ws.ctx
	go ws.run(ctx, w)
}

// run works w, then the waiting workers, until none waits; ws.active
// counts it (kick).
func (ws *workers) run(ctx context.Context, w *worker) {
	defer ws.wg.Done()
	for w != nil {
		if ws.work(ctx, w) {
			ws.env.metrics.Busy.Dec()
		}
		w = ws.next()
	}
}

// next hands the calling goroutine the oldest waiting worker, or ends its
// count in ws.active when none waits.
func (ws *workers) next() *worker {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.waiting) == 0 {
		ws.active--
		return nil
	}
	w := ws.waiting[0]
	ws.waiting[0] = nil
	ws.waiting = ws.waiting[1:]
	if len(ws.waiting) == 0 {
		ws.waiting = nil // drop the backing array a backlog grew
	}
	return w
}

// yield queues w behind the waiting workers when there are any: its
// goroutine then takes the oldest (run). It reports whether it did.
func (ws *workers) yield(w *worker) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.waiting) == 0 {
		return false
	}
	ws.waiting = append(ws.waiting, w)
	return true
}

// pause and resume take a worker's goroutine out of ws.active while it
// waits out a backoff, so that workers blocked by another process's lease
// hold up no one: a waiting worker gets a goroutine meanwhile.
func (ws *workers) pause() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.waiting) == 0 || ws.draining || ws.ctx == nil || ws.ctx.Err() != nil {
		ws.active--
		return
	}
	w := ws.waiting[0]
	ws.waiting[0] = nil
	ws.waiting = ws.waiting[1:]
	ws.wg.Add(1)
	go ws.run(ws.ctx, w) // counted in ws.active in place of the paused one
}

func (ws *workers) resume() {
	ws.mu.Lock()
	ws.active++
	ws.mu.Unlock()
}

// backoffWait is sleepOrWake (wake nil: sleepCtx) with the goroutine
// paused meanwhile.
func (ws *workers) backoffWait(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	ws.pause()
	defer ws.resume()
	return sleepOrWake(ctx, d, wake)
}

// forgetLocked drops conv's worker. The last one out replaces the map: a
// map keeps the buckets of its largest size, here the busiest moment's
// conversations, for as long as the process runs. ws.mu held.
func (ws *workers) forgetLocked(conv string) {
	delete(ws.running, conv)
	if len(ws.running) == 0 {
		ws.running = map[string]*worker{}
	}
}

// cancel cancels the conversation's running turn with cause, if any.
func (ws *workers) cancel(conv string, cause error) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w, ok := ws.running[conv]; ok {
		w.cancel(cause)
		return true
	}
	return false
}

// isRunning reports whether a worker runs for the conversation.
func (ws *workers) isRunning(conv string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	_, ok := ws.running[conv]
	return ok
}

// setCancel installs the cancel function of the worker's current turn.
func (ws *workers) setCancel(w *worker, cancel context.CancelCauseFunc) {
	ws.mu.Lock()
	w.cancel = cancel
	ws.mu.Unlock()
}

// work processes queue items until the queue is empty (or its oldest item
// belongs to another process's channel), and reports true then: the
// worker is gone. It reports false when it queued the worker behind
// others after an item (yield): it is still running, its next item later.
func (ws *workers) work(ctx context.Context, w *worker) (done bool) {
	e := ws.env
	retry := time.Duration(0)
	defer func() {
		if done {
			ws.mu.Lock()
			if ws.running[w.conv] == w { // not a worker kicked since
				ws.forgetLocked(w.conv)
			}
			ws.mu.Unlock()
		}
	}()
	for {
		ws.mu.Lock()
		w.again = false
		stopping := w.stopping
		ws.mu.Unlock()
		if stopping || ctx.Err() != nil {
			return true
		}
		it, err := e.opts.Store.Peek(ctx, w.conv, peekOnly)
		foreign := err == nil && !slices.Contains(e.channels, it.Channel)
		if errors.Is(err, ErrNotFound) || foreign {
			ws.mu.Lock()
			again := w.again
			if !again {
				ws.forgetLocked(w.conv)
			}
			ws.mu.Unlock()
			if again && !foreign {
				continue
			}
			return true
		}
		if err != nil {
			e.log.Error("read queue", "conversation", w.conv, "err", err)
			retry = backoff(retry)
			if !ws.backoffWait(ctx, retry, nil) {
				return true
			}
			continue
		}
		var busy bool
		if claim := e.opts.Claim; claim != nil && !claim(ctx, it) {
			busy = true // another process of this channel owns the item
		} else {
			busy, err = ws.runItem(ctx, w, it)
		}
		switch {
		case busy:
			// Another process holds the lease (or the agent's task slots
			// are taken); look again later, or when kicked.
			retry = backoff(retry)
			if !ws.backoffWait(ctx, retry, w.wake) {
				return true
			}
			continue
		case err != nil:
			e.log.Error("work queue item", "conversation", w.conv, "item", it.ID, "kind", it.Kind, "err", err)
			retry = backoff(retry)
			if !ws.backoffWait(ctx, retry, nil) {
				return true
			}
			continue
		}
		retry = 0
		if ws.yield(w) {
			return false
		}
	}
}

// runItem takes a slot and processes one item.
func (ws *workers) runItem(ctx context.Context, w *worker, it Item) (bool, error) {
	select {
	case ws.slots <- struct{}{}:
	case <-ctx.Done():
		return false, nil
	}
	defer func() { <-ws.slots }()
	return ws.process(ctx, w, it)
}

// drain waits up to grace for running turns, then cancels them.
func (ws *workers) drain(grace time.Duration) {
	ws.mu.Lock()
	ws.draining = true
	ws.mu.Unlock()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ws.mu.Lock()
		n := len(ws.running)
		var all []*worker
		for _, w := range ws.running {
			all = append(all, w)
			w.stopping = true
		}
		ws.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-deadline.C:
			ws.mu.Lock()
			for _, w := range all {
				w.cancel(errShutdown)
			}
			ws.mu.Unlock()
			return
		case <-tick.C:
		}
	}
}

// wait waits for every worker goroutine.
func (ws *workers) wait() { ws.wg.Wait() }

// recover starts workers for conversations that have queued items of this
// process's channels (after a restart, or queued by another process).
func (ws *workers) recover(ctx context.Context) error {
	busy, err := ws.env.opts.Store.Busy(ctx, ws.env.channels)
	if err != nil {
		return err
	}
	for _, conv := range busy {
		if !ws.isRunning(conv) {
			ws.kick(conv)
		}
	}
	return nil
}

// pollLoop notices items that other processes sharing the data directory
// queued for this process's channels (a decision made from another
// process's page, a `switchboard approvals approve`), within about one
// PollInterval.
func (ws *workers) pollLoop(ctx context.Context, outboxAt func(newest int64)) {
	st := ws.env.opts.Store
	lastQ, lastO, _ := st.LatestIDs(ctx)
	tick := time.NewTicker(ws.env.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		q, o, err := st.LatestIDs(ctx)
		if err != nil {
			continue
		}
		if q != lastQ {
			lastQ = q
			if err := ws.recover(ctx); err != nil && ctx.Err() == nil {
				ws.env.log.Warn("look for queued work", "err", err)
			}
		}
		if o != lastO {
			lastO = o
			outboxAt(o)
		}
	}
}

// Setting keys of a location (scope "location:<location>").
const settingQueueMode = "queue_mode"

func locationScope(loc channels.Location) string { return "location:" + loc.String() }

// queueMode is the location's queue mode: set with /queue (durable), else
// the channel's.
func (ws *workers) queueMode(ctx context.Context, loc channels.Location) string {
	return queueModeAt(ctx, ws.env, loc)
}

func queueModeAt(ctx context.Context, e *env, loc channels.Location) string {
	if vals, err := e.opts.Store.Settings(ctx, locationScope(loc)); err == nil {
		if m := vals[settingQueueMode]; m != "" {
			return m
		}
	}
	return e.channel(loc.Channel).QueueMode
}
