package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// The gateway's storage ports (gateway.Store) live in the gateway_*.go
// files. Their "not found" errors wrap gateway.ErrNotFound, the sentinel
// the gateway branches on. Every write runs in one IMMEDIATE transaction on
// the writer connection (db.write); reads use the read pool.
var _ gateway.Store = (*DB)(nil)

// Binding returns the binding of a location or an error wrapping
// gateway.ErrNotFound.
func (db *DB) Binding(ctx context.Context, location string) (gateway.Binding, error) {
	var b gateway.Binding
	var created int64
	err := db.stmts.binding.QueryRowContext(pointRead(ctx), location).Scan(&b.Location, &b.AgentID, &b.ConversationID, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Binding{}, fmt.Errorf("binding of %s: %w", location, gateway.ErrNotFound)
	}
	if err != nil {
		return gateway.Binding{}, fmt.Errorf("binding of %s: %w", location, err)
	}
	b.Created = fromNanos(created)
	return b, nil
}

// Bind creates or replaces the binding of b.Location. Location and
// ConversationID are required; Created defaults to now.
func (db *DB) Bind(ctx context.Context, b gateway.Binding) error {
	if b.Location == "" || b.ConversationID == "" {
		return fmt.Errorf("bind: location (%q) and conversation id (%q) are required", b.Location, b.ConversationID)
	}
	if b.Created.IsZero() {
		b.Created = now()
	}
	err := db.write(ctx, "Bind", func(tx *sql.Tx) error {
		_, err := db.txStmt(ctx, tx, db.stmts.bind).ExecContext(ctx,
			b.Location, b.AgentID, b.ConversationID, nanos(b.Created))
		return err
	})
	if err != nil {
		return fmt.Errorf("bind %s to conversation %s: %w", b.Location, b.ConversationID, err)
	}
	return nil
}

// BindingsOf returns the bindings that point at a conversation, oldest
// first.
func (db *DB) BindingsOf(ctx context.Context, conversationID string) ([]gateway.Binding, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT location, agent_id, conversation_id, created FROM bindings
		 WHERE conversation_id = ? ORDER BY created, location`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("bindings of conversation %s: %w", conversationID, err)
	}
	defer rows.Close()
	var bs []gateway.Binding
	for rows.Next() {
		var b gateway.Binding
		var created int64
		if err := rows.Scan(&b.Location, &b.AgentID, &b.ConversationID, &created); err != nil {
			return nil, fmt.Errorf("bindings of conversation %s: %w", conversationID, err)
		}
		b.Created = fromNanos(created)
		bs = append(bs, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bindings of conversation %s: %w", conversationID, err)
	}
	return bs, nil
}

// The gateway's hot statements (prepared at Open, see stmts).
const (
	qBinding = `SELECT location, agent_id, conversation_id, created FROM bindings WHERE location = ?`
	qBind    = `INSERT INTO bindings (location, agent_id, conversation_id, created)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (location) DO UPDATE SET agent_id = excluded.agent_id,
			conversation_id = excluded.conversation_id, created = excluded.created`
	qPurgeDedupe = `DELETE FROM dedupe WHERE expires <= ?`
	qClaimDedupe = `INSERT INTO dedupe (key, expires) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`
	qInsertItem  = `INSERT INTO queue
		(conversation_id, agent_id, kind, location, payload, created, channel)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`
	qPeekItem = `SELECT ` + itemColumns + ` FROM queue WHERE conversation_id = ? AND state = 'queued'
		ORDER BY id LIMIT 1`
	qTakeItem     = `UPDATE queue SET attempts = attempts + 1 WHERE id = ? AND state = 'queued' RETURNING attempts`
	qCompleteItem = `UPDATE queue SET state = 'done', finished = ? WHERE id = ? AND state = 'queued'`
)

// Enqueue stores an item unless dedupeKey (when not empty) was seen within
// its TTL; see gateway.Queue. For a key seen before, the returned id is the
// item the key stored (0 for keys of ClaimDedupe). The dedupe row and the item are written in one
// transaction, which also purges expired dedupe rows. A dedupeKey needs a
// positive dedupeTTL. ConversationID and Kind are required; Created
// defaults to now. The stored item starts with zero Attempts.
func (db *DB) Enqueue(ctx context.Context, it gateway.Item, dedupeKey string, dedupeTTL time.Duration) (int64, bool, error) {
	if it.ConversationID == "" || it.Kind == "" {
		return 0, false, fmt.Errorf("enqueue: conversation id (%q) and kind (%q) are required", it.ConversationID, it.Kind)
	}
	if dedupeKey != "" && dedupeTTL <= 0 {
		return 0, false, fmt.Errorf("enqueue to conversation %s: dedupe key %q with non-positive ttl %v", it.ConversationID, dedupeKey, dedupeTTL)
	}
	var id int64
	var enqueued bool
	err := db.write(ctx, "Enqueue", func(tx *sql.Tx) error {
		ctx := inWriter(ctx)
		var err error
		id, enqueued, err = db.enqueueTx(ctx, tx, it, dedupeKey, dedupeTTL)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("enqueue to conversation %s: %w", it.ConversationID, err)
	}
	return id, enqueued, nil
}

// enqueueTx is Enqueue's transaction: the dedupe claim (a key seen before
// names the item it stored) and the item.
func (db *DB) enqueueTx(ctx context.Context, tx *sql.Tx, it gateway.Item, dedupeKey string, dedupeTTL time.Duration) (int64, bool, error) {
	t := now()
	if seen, fresh, err := db.claimItemKey(ctx, tx, dedupeKey, t, dedupeTTL); err != nil || !fresh {
		return seen, false, err
	}
	id, err := db.insertKeyedItem(ctx, tx, it, dedupeKey, t)
	return id, err == nil, err
}

// claimItemKey claims an item's dedupe key ("" claims nothing: fresh). A
// key seen before is not fresh and names the item it stored (0 for keys of
// ClaimDedupe).
func (db *DB) claimItemKey(ctx context.Context, tx *sql.Tx, key string, t time.Time, ttl time.Duration) (seen int64, fresh bool, err error) {
	if key == "" {
		return 0, true, nil
	}
	if fresh, err = db.claimDedupe(ctx, tx, key, t, ttl); err != nil || fresh {
		return 0, fresh, err
	}
	if err := db.txStmt(ctx, tx, db.stmts.seenKeyItem).QueryRowContext(ctx, key).Scan(&seen); err != nil {
		return 0, false, fmt.Errorf("read dedupe key %q: %w", key, err)
	}
	return seen, false, nil
}

// insertKeyedItem stores an item and, with a key, records it as the key's.
func (db *DB) insertKeyedItem(ctx context.Context, tx *sql.Tx, it gateway.Item, key string, t time.Time) (int64, error) {
	id, err := db.insertItem(ctx, tx, it, t)
	if err != nil {
		return 0, err
	}
	if key != "" {
		if _, err := db.txStmt(ctx, tx, db.stmts.keyItem).ExecContext(ctx, id, key); err != nil {
			return 0, fmt.Errorf("record dedupe key %q: %w", key, err)
		}
	}
	return id, nil
}

// claimDedupe purges expired dedupe rows and records key until t+ttl. It
// reports false when key is still remembered (a live row exists).
func (db *DB) claimDedupe(ctx context.Context, tx *sql.Tx, key string, t time.Time, ttl time.Duration) (bool, error) {
	// The purge is an index range scan on expires: amortized, each row is
	// deleted once, and a live row for key is never touched.
	if _, err := db.txStmt(ctx, tx, db.stmts.purgeDedupe).ExecContext(ctx, nanos(t)); err != nil {
		return false, fmt.Errorf("purge dedupe keys: %w", err)
	}
	res, err := db.txStmt(ctx, tx, db.stmts.claimDedupe).ExecContext(ctx, key, nanos(t.Add(ttl)))
	if err != nil {
		return false, fmt.Errorf("record dedupe key %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record dedupe key %q: %w", key, err)
	}
	return n == 1, nil
}

func (db *DB) insertItem(ctx context.Context, tx *sql.Tx, it gateway.Item, t time.Time) (int64, error) {
	created := it.Created
	if created.IsZero() {
		created = t
	}
	payload := it.Payload
	if payload == nil {
		payload = []byte{} // nil binds as NULL
	}
	var id int64
	err := db.txStmt(ctx, tx, db.stmts.insertItem).QueryRowContext(ctx,
		it.ConversationID, it.AgentID, string(it.Kind), it.Location, payload, nanos(created), channelOf(it.Location)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert item: %w", err)
	}
	return id, nil
}

const itemColumns = `id, conversation_id, agent_id, kind, location, payload, created, attempts, channel`

// channelOf is the channel of a location key: its first field (channel
// names never need escaping).
func channelOf(location string) string {
	ch, _, _ := strings.Cut(location, ":")
	return ch
}

// inChannels reports whether ch is one of channels (nil: any).
func inChannels(ch string, channels []string) bool {
	return channels == nil || slices.Contains(channels, ch)
}

// channelsArg encodes a channel list for "channel IN (SELECT value FROM
// json_each(?))"; nil (any channel) is NULL, which the queries test first.
func channelsArg(channels []string) any {
	if channels == nil {
		return nil
	}
	b, _ := json.Marshal(channels)
	return string(b)
}

func scanItem(s scanner) (gateway.Item, error) {
	var it gateway.Item
	var kind string
	var created int64
	if err := s.Scan(&it.ID, &it.ConversationID, &it.AgentID, &kind, &it.Location,
		&it.Payload, &created, &it.Attempts, &it.Channel); err != nil {
		return gateway.Item{}, err
	}
	it.Kind = gateway.ItemKind(kind)
	it.Created = fromNanos(created)
	return it, nil
}

// Peek returns the lowest-id unfinished item of a conversation, or an
// error wrapping gateway.ErrNotFound. Its Attempts are incremented when its
// channel is one of channels (nil: any); an item of another channel is
// returned untouched (another process works it), without a write.
func (db *DB) Peek(ctx context.Context, conversationID string, channels []string) (gateway.Item, error) {
	for {
		it, err := scanItem(db.stmts.peekItem.QueryRowContext(pointRead(ctx), conversationID))
		if errors.Is(err, sql.ErrNoRows) {
			return gateway.Item{}, fmt.Errorf("peek conversation %s: no unfinished item: %w", conversationID, gateway.ErrNotFound)
		}
		if err != nil {
			return gateway.Item{}, fmt.Errorf("peek conversation %s: %w", conversationID, err)
		}
		if !inChannels(it.Channel, channels) {
			return it, nil
		}
		err = db.write(ctx, "Peek", func(tx *sql.Tx) error {
			return db.txStmt(ctx, tx, db.stmts.takeItem).QueryRowContext(ctx, it.ID).Scan(&it.Attempts)
		})
		if errors.Is(err, sql.ErrNoRows) {
			continue // completed since it was read: look again
		}
		if err != nil {
			return gateway.Item{}, fmt.Errorf("peek conversation %s: %w", conversationID, err)
		}
		return it, nil
	}
}

// Complete marks an unfinished item done. An item that does not exist or
// is already done is an error wrapping gateway.ErrNotFound: completing an
// item twice means two workers ran it.
func (db *DB) Complete(ctx context.Context, id int64) error {
	err := db.write(ctx, "Complete", func(tx *sql.Tx) error {
		return db.completeItem(ctx, tx, id, now())
	})
	if err != nil {
		return fmt.Errorf("complete queue item %d: %w", id, err)
	}
	return nil
}

func (db *DB) completeItem(ctx context.Context, tx *sql.Tx, id int64, t time.Time) error {
	res, err := db.txStmt(ctx, tx, db.stmts.completeItem).ExecContext(ctx, nanos(t), id)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no unfinished queue item %d: %w", id, gateway.ErrNotFound)
	}
	return nil
}

// CompleteWithOutbound marks an unfinished queue item done and stores the
// outbound items in one transaction, returning their ids in order. When the
// item does not exist or is already done, nothing is stored and the error
// wraps gateway.ErrNotFound, so a turn run twice (a worker that lost its
// lease) does not send its reply twice.
func (db *DB) CompleteWithOutbound(ctx context.Context, itemID int64, items ...gateway.Outbound) ([]int64, error) {
	if err := checkOutbound(items); err != nil {
		return nil, fmt.Errorf("complete queue item %d: %w", itemID, err)
	}
	var ids []int64
	err := db.write(ctx, "CompleteWithOutbound", func(tx *sql.Tx) error {
		t := now()
		if err := db.completeItem(ctx, tx, itemID, t); err != nil {
			return err
		}
		var err error
		ids, err = db.insertOutbound(ctx, tx, items, t)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("complete queue item %d: %w", itemID, err)
	}
	return ids, nil
}

// Pending returns the unfinished items of a conversation in id order.
func (db *DB) Pending(ctx context.Context, conversationID string) ([]gateway.Item, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+itemColumns+` FROM queue
		WHERE conversation_id = ? AND state = 'queued' ORDER BY id`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("pending items of conversation %s: %w", conversationID, err)
	}
	defer rows.Close()
	var items []gateway.Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("pending items of conversation %s: %w", conversationID, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending items of conversation %s: %w", conversationID, err)
	}
	return items, nil
}

// Busy lists the conversations that have unfinished items in one of
// channels (nil: any), the one with the oldest unfinished item first.
func (db *DB) Busy(ctx context.Context, channels []string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT conversation_id FROM queue
		WHERE state = 'queued' AND (?1 IS NULL OR channel IN (SELECT value FROM json_each(?1)))
		GROUP BY conversation_id ORDER BY MIN(id)`, channelsArg(channels))
	if err != nil {
		return nil, fmt.Errorf("busy conversations: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("busy conversations: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("busy conversations: %w", err)
	}
	return ids, nil
}

// ClaimDedupe records key until now+ttl unless it is remembered; see
// gateway.Queue.
func (db *DB) ClaimDedupe(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if key == "" || ttl <= 0 {
		return false, fmt.Errorf("claim dedupe key %q: key and a positive ttl (%v) are required", key, ttl)
	}
	var fresh bool
	err := db.write(ctx, "ClaimDedupe", func(tx *sql.Tx) error {
		var err error
		fresh, err = db.claimDedupe(ctx, tx, key, now(), ttl)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim dedupe key: %w", err)
	}
	return fresh, nil
}

// Rebind binds b.Location to b.ConversationID and moves the location's
// unfinished items queued after afterID there, in one transaction.
func (db *DB) Rebind(ctx context.Context, b gateway.Binding, afterID int64) error {
	if b.Location == "" || b.ConversationID == "" {
		return fmt.Errorf("rebind: location (%q) and conversation id (%q) are required", b.Location, b.ConversationID)
	}
	if b.Created.IsZero() {
		b.Created = now()
	}
	err := db.write(ctx, "Rebind", func(tx *sql.Tx) error {
		if _, err := db.txStmt(ctx, tx, db.stmts.bind).ExecContext(ctx,
			b.Location, b.AgentID, b.ConversationID, nanos(b.Created)); err != nil {
			return err
		}
		// A task's child works at its parent's location: its items stay
		// with it.
		_, err := tx.ExecContext(ctx, `UPDATE queue SET conversation_id = ?, agent_id = ?
			WHERE location = ? AND state = 'queued' AND id > ? AND conversation_id != ?
			AND conversation_id NOT IN (SELECT conversation_id FROM tasks)`,
			b.ConversationID, b.AgentID, b.Location, afterID, b.ConversationID)
		return err
	})
	if err != nil {
		return fmt.Errorf("rebind %s to conversation %s: %w", b.Location, b.ConversationID, err)
	}
	return nil
}

// LatestIDs returns the newest queue and outbox ids (0 when empty).
func (db *DB) LatestIDs(ctx context.Context) (int64, int64, error) {
	var q, o int64
	err := db.r.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(MAX(id), 0) FROM queue), (SELECT COALESCE(MAX(id), 0) FROM outbox)`).Scan(&q, &o)
	if err != nil {
		return 0, 0, fmt.Errorf("latest ids: %w", err)
	}
	return q, o, nil
}
