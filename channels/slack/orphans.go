package slack

import (
	"slices"
	"sync"
	"time"
)

// Slack does not promise to deliver events in the order they happened: an
// event posted while the app was not connected waits for a retry, one
// posted after the connection came back is sent at once, and in HTTP mode
// every event is its own request. So a reply in a new thread can reach the
// adapter before the mention that starts the thread; the gateway, which
// does not know the thread yet, ignores it (it has no mention). orphans
// holds such replies for a while, and when a later message in the same
// thread is taken (the mention arrived: the thread is now the bot's), the
// replies posted after it are handed over again, oldest first. Replies
// posted before the message that took the thread stay ignored, as they
// would have in order.
type orphans struct {
	mu      sync.Mutex
	threads map[string][]orphan // channel+thread → replies the gateway ignored
	now     func() time.Time
}

type orphan struct {
	d    draft // before the lookups: what deliver takes (no image is held)
	seen time.Time
}

// Bounds of what orphans holds: memory stays small whatever is posted in
// threads the bot is not in.
const (
	orphanTTL        = 10 * time.Minute
	maxOrphanThreads = 500
	maxOrphansPer    = 20
)

func newOrphans(now func() time.Time) *orphans {
	return &orphans{threads: map[string][]orphan{}, now: now}
}

// hold keeps d, a thread reply the gateway ignored. It looks only at d's
// thread, unless the bound on threads is reached (then it drops what
// expired everywhere before refusing).
func (o *orphans) hold(d draft) {
	k := threadKey(d.in.Location.ChatID, d.in.Location.ThreadID)
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	list := live(o.threads[k], now)
	for _, x := range list {
		if x.d.in.MessageID == d.in.MessageID {
			return // a redelivery of one held already
		}
	}
	if len(list) == 0 && len(o.threads) >= maxOrphanThreads {
		o.expire(now)
		if len(o.threads) >= maxOrphanThreads {
			return
		}
	}
	if len(list) >= maxOrphansPer {
		list = list[1:]
	}
	o.threads[k] = append(list, orphan{d: d, seen: now})
}

// live is list without what was held longer than orphanTTL (held in
// order, so a prefix).
func live(list []orphan, now time.Time) []orphan {
	i := 0
	for i < len(list) && now.Sub(list[i].seen) >= orphanTTL {
		i++
	}
	return list[i:]
}

// take removes the replies held for a thread and returns the ones posted
// after ts, oldest first.
func (o *orphans) take(chat, thread, ts string) []draft {
	k := threadKey(chat, thread)
	o.mu.Lock()
	list, ok := o.threads[k]
	if ok {
		delete(o.threads, k)
	}
	list = live(list, o.now())
	o.mu.Unlock()
	var out []draft
	for _, x := range list {
		if tsLess(ts, x.d.in.MessageID) {
			out = append(out, x.d)
		}
	}
	slices.SortFunc(out, func(a, b draft) int {
		switch {
		case tsLess(a.in.MessageID, b.in.MessageID):
			return -1
		case tsLess(b.in.MessageID, a.in.MessageID):
			return 1
		}
		return 0
	})
	return out
}

// expire drops what was held longer than orphanTTL; call with o.mu held.
func (o *orphans) expire(now time.Time) {
	for k, list := range o.threads {
		if list = live(list, now); len(list) == 0 {
			delete(o.threads, k)
		} else {
			o.threads[k] = list
		}
	}
}
