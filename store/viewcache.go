package store

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// The view cache keeps the in-context view of recently active
// conversations, so that a turn reads only the messages appended since
// the last one instead of the whole view (a turn's view read was an
// eighth of its CPU at saturation, bench/gatewayload phase a). Messages
// are append-only and so is a view, except when compaction replaces it;
// every deletion or change of view rows bumps the conversation's
// view_epoch (triggers in migrations/0009_read_caches.sql), whichever
// process makes it. A cached view is therefore brought up to date by the
// rows after its last position, read in one statement with the epoch: an
// epoch still the same means no row the cache holds was replaced.
const (
	// maxViewEntries and maxViewBytes bound the cache; the views used
	// longest ago go first.
	maxViewEntries = 2048
	maxViewBytes   = 8 << 20
	// viewIdle is how long a view not used stays cached. The cache is for
	// conversations whose turns come back to back (a backlog, a burst, a
	// busy gateway); a conversation whose next message is seconds away
	// gains little from it, and views grow with their conversation, so
	// keeping those would only hold memory (the soak's live heap grew by
	// the views of its 200 chatty conversations while this was 15 s).
	viewIdle = 2 * time.Second
	// settingsIdle is how long a settings scope not read stays cached.
	settingsIdle = 15 * time.Second
	// sweepEvery is how often the sweeper drops idle entries.
	sweepEvery = time.Second
)

type viewCache struct {
	mu    sync.Mutex
	lru   list.List // of *cachedView, most recently used at the front
	m     map[string]*list.Element
	bytes int
}

type cachedView struct {
	conv    string
	epoch   int64
	lastPos int64 // position of msgs' last message
	msgs    []agentcore.Message
	bytes   int
	used    time.Time
}

func (c *viewCache) get(conv string) (cachedView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[conv]
	if !ok {
		return cachedView{}, false
	}
	return *e.Value.(*cachedView), true
}

// put stores v (whose msgs the cache now owns and never changes) unless
// the cache holds a newer one for the conversation.
func (c *viewCache) put(v cachedView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*list.Element{}
	}
	if e, ok := c.m[v.conv]; ok {
		old := e.Value.(*cachedView)
		if old.epoch > v.epoch || old.epoch == v.epoch && old.lastPos > v.lastPos {
			old.used = v.used
			c.lru.MoveToFront(e)
			return
		}
		c.removeLocked(e)
	}
	if v.bytes > maxViewBytes/4 {
		return // one huge view would push out everything else
	}
	c.m[v.conv] = c.lru.PushFront(&v)
	c.bytes += v.bytes
	for c.lru.Len() > maxViewEntries || c.bytes > maxViewBytes {
		c.removeLocked(c.lru.Back())
	}
}

// drop forgets conv's view.
func (c *viewCache) drop(conv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[conv]; ok {
		c.removeLocked(e)
	}
}

func (c *viewCache) removeLocked(e *list.Element) {
	v := c.lru.Remove(e).(*cachedView)
	delete(c.m, v.conv)
	c.bytes -= v.bytes
}

// sweep drops the views not used since before.
func (c *viewCache) sweep(before time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Back(); e != nil && e.Value.(*cachedView).used.Before(before); e = c.lru.Back() {
		c.removeLocked(e)
	}
	if c.lru.Len() == 0 {
		c.m = nil // a map keeps its buckets after its entries go
	}
}

// messageBytes estimates what a cached message holds on the heap: the
// struct (216 bytes), its strings and slices, each rounded up to the
// allocator's size classes (about a sixth more; measured: a text message
// of a few words holds about 450 bytes).
func messageBytes(m *agentcore.Message) int {
	n := 216 + len(m.ID) + len(m.Reasoning) + len(m.ToolCallID) + len(m.ToolName) + len(m.RunID) + len(m.Outcome)
	for _, p := range m.Parts {
		n += 72 + len(p.Text) + len(p.Data) + len(p.MIME)
	}
	for _, tc := range m.ToolCalls {
		n += 48 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n + n/6
}

// View returns the in-context messages in view order. The messages'
// slices (parts, tool calls) may be shared with the cache: callers must
// not change them in place.
func (db *DB) View(ctx context.Context, conversationID string) ([]agentcore.Message, error) {
	ms, err := db.view(pointRead(ctx), conversationID)
	if err != nil {
		db.views.drop(conversationID)
		return nil, fmt.Errorf("view of conversation %s: %w", conversationID, err)
	}
	return ms, nil
}

func (db *DB) view(ctx context.Context, conv string) ([]agentcore.Message, error) {
	now := time.Now()
	if c, ok := db.views.get(conv); ok {
		more, epoch, lastPos, err := db.viewRows(ctx, conv, c.lastPos)
		if err != nil {
			return nil, err
		}
		if epoch == c.epoch {
			if len(more) == 0 {
				c.used = now
				db.views.put(c)
				return slices.Clone(c.msgs), nil
			}
			msgs := make([]agentcore.Message, 0, len(c.msgs)+len(more))
			msgs = append(append(msgs, c.msgs...), more...)
			n := c.bytes
			for i := range more {
				n += messageBytes(&more[i])
			}
			db.views.put(cachedView{conv: conv, epoch: epoch, lastPos: lastPos, msgs: msgs, bytes: n, used: now})
			return slices.Clone(msgs), nil
		}
		db.views.drop(conv)
	}
	msgs, epoch, lastPos, err := db.viewRows(ctx, conv, -1<<62)
	if err != nil {
		return nil, err
	}
	if len(msgs) > 0 {
		n := 0
		for i := range msgs {
			n += messageBytes(&msgs[i])
		}
		db.views.put(cachedView{conv: conv, epoch: epoch, lastPos: lastPos, msgs: slices.Clip(msgs), bytes: n, used: now})
		msgs = slices.Clone(msgs)
	}
	return msgs, nil
}

// viewEpoch reads the conversation's view_epoch; ErrNotFound when it does
// not exist.
func (db *DB) viewEpoch(ctx context.Context, conv string) (int64, error) {
	var epoch int64
	err := db.stmts.viewEpoch.QueryRowContext(ctx, conv).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return epoch, err
}

// viewRows reads the view's messages at positions after after, in
// order, with the conversation's view_epoch and the last position read
// (after, when none). With no rows the epoch is read on its own, which
// also tells a conversation that does not exist (ErrNotFound).
func (db *DB) viewRows(ctx context.Context, conv string, after int64) ([]agentcore.Message, int64, int64, error) {
	rows, err := db.stmts.viewAfter.QueryContext(ctx, conv, after)
	if err != nil {
		return nil, 0, 0, err
	}
	defer rows.Close()
	var ms []agentcore.Message
	var epoch int64
	last := after
	for rows.Next() {
		m, err := scanMessage(viewRow{rows, &epoch, &last})
		if err != nil {
			return nil, 0, 0, err
		}
		m.ConversationID = conv // one copy of the id for the whole view
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, err
	}
	if len(ms) == 0 {
		if epoch, err = db.viewEpoch(ctx, conv); err != nil {
			return nil, 0, 0, err
		}
	}
	return ms, epoch, last, nil
}

// viewRow scans a row of qViewAfter: the epoch, the position, then
// messageColumns.
type viewRow struct {
	rows       *sql.Rows
	epoch, pos *int64
}

func (r viewRow) Scan(dest ...any) error {
	return r.rows.Scan(append([]any{r.epoch, r.pos}, dest...)...)
}

// sweeper drops the caches' idle entries every sweepEvery, until Close.
func (db *DB) sweeper() {
	defer close(db.sweepDone)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			db.views.sweep(now.Add(-viewIdle))
			db.settingsCache.sweep(now.Add(-settingsIdle))
		case <-db.closing:
			return
		}
	}
}
