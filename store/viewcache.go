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
// rows after its last position, read before the epoch: an epoch still the
// same means no row the cache holds was replaced up to that read.
const (
	// maxViewEntries and maxViewBytes bound the cache; the views used
	// longest ago go first.
	maxViewEntries = 2048
	maxViewBytes   = 8 << 20
	// cacheIdle is how long a view (or a settings scope) not used stays
	// cached; sweepEvery is how often the sweeper drops those.
	cacheIdle  = 15 * time.Second
	sweepEvery = 5 * time.Second
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

// messageBytes estimates what a message holds in memory.
func messageBytes(m *agentcore.Message) int {
	n := 256 + len(m.ID) + len(m.ConversationID) + len(m.Reasoning) + len(m.ToolCallID) + len(m.ToolName) + len(m.RunID) + len(m.Outcome)
	for _, p := range m.Parts {
		n += 64 + len(p.Text) + len(p.Data) + len(p.MIME)
	}
	for _, tc := range m.ToolCalls {
		n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
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
		// The rows after the cached ones, then the epoch: an epoch
		// unchanged since the cache was filled means no cached row was
		// replaced up to the read of the new ones.
		more, lastPos, err := db.viewRows(ctx, db.stmts.viewAfter, conv, c.lastPos)
		if err != nil {
			return nil, err
		}
		epoch, err := db.viewEpoch(ctx, conv)
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
	// The epoch first: a replacement between the two reads leaves the
	// cache an older epoch than the rows', which only costs a full read
	// next time.
	epoch, err := db.viewEpoch(ctx, conv)
	if err != nil {
		return nil, err
	}
	msgs, lastPos, err := db.viewRows(ctx, db.stmts.viewAfter, conv, -1<<62)
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

// viewRows reads the view's messages at positions after after, in order,
// and the last position read (after, when none).
func (db *DB) viewRows(ctx context.Context, st *sql.Stmt, conv string, after int64) ([]agentcore.Message, int64, error) {
	rows, err := st.QueryContext(ctx, conv, after)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ms []agentcore.Message
	last := after
	for rows.Next() {
		m, err := scanMessage(positioned{rows, &last})
		if err != nil {
			return nil, 0, err
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return ms, last, nil
}

// positioned scans a view row: its position, then messageColumns.
type positioned struct {
	rows *sql.Rows
	pos  *int64
}

func (p positioned) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.pos}, dest...)...)
}

// sweeper drops the caches' idle entries every sweepEvery, until Close.
func (db *DB) sweeper() {
	defer close(db.sweepDone)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			before := time.Now().Add(-cacheIdle)
			db.views.sweep(before)
			db.settingsCache.sweep(before)
		case <-db.closing:
			return
		}
	}
}
