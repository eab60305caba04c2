package slack

import (
	"context"
	"sync"

	"github.com/switchboard-gw/switchboard/channels"
)

// behind keeps a conversation's missed messages ahead of its live ones.
// Catch-up runs beside live events; without it, a reply posted while serve
// was down would reach the agent after one posted after the restart (and
// could supersede its ask). When a catch-up pass starts (the socket said
// hello, or HTTP mode started) live events wait until the pass has listed
// the bound conversations; then a live event for a conversation the pass
// has not caught up yet catches that one up first itself, and one for a
// conversation being caught up waits for it. Other conversations' events
// do not wait for the pass.
type behind struct {
	mu      sync.Mutex
	listing chan struct{} // set while a pass lists; closed when it has
	convs   map[string]*behindConv
}

type behindConv struct {
	loc     channels.Location
	claimed bool
	done    chan struct{} // closed when its catch-up is over
}

// begin marks a pass as listing; live events wait for listed.
func (b *behind) begin() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listing == nil {
		b.listing = make(chan struct{})
	}
}

// listed records the conversations the pass will catch up (nil when it
// could not list them) and lets live events go on.
func (b *behind) listed(locs []channels.Location) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.convs == nil {
		b.convs = map[string]*behindConv{}
	}
	for _, loc := range locs {
		k := threadKey(loc.ChatID, loc.ThreadID)
		if b.convs[k] == nil {
			b.convs[k] = &behindConv{loc: loc, done: make(chan struct{})}
		}
	}
	if b.listing != nil {
		close(b.listing)
		b.listing = nil
	}
}

// claim reports whether the caller is to catch up k (listed and not
// claimed by anyone yet). Whoever claims must call finish.
func (b *behind) claim(k string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.convs[k]
	if c == nil || c.claimed {
		return false
	}
	c.claimed = true
	return true
}

// finish ends k's catch-up and wakes the live events waiting for it.
func (b *behind) finish(k string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.convs[k]; c != nil {
		close(c.done)
		delete(b.convs, k)
	}
}

// before is called for a live message of conversation k. It waits while a
// pass lists; when k is listed and unclaimed it claims it and returns its
// location (the caller catches it up, then calls finish); when another
// goroutine catches k up it waits for that. It returns ok false when there
// is nothing for the caller to do (or ctx ended).
func (b *behind) before(ctx context.Context, k string) (loc channels.Location, mine bool) {
	for {
		b.mu.Lock()
		if ch := b.listing; ch != nil {
			b.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return loc, false
			}
		}
		c := b.convs[k]
		if c == nil {
			b.mu.Unlock()
			return loc, false
		}
		if !c.claimed {
			c.claimed = true
			b.mu.Unlock()
			return c.loc, true
		}
		done := c.done
		b.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return loc, false
	}
}
