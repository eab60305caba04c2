package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

// checkOutbound validates items before any write, so that a bad item
// fails the call without a transaction. Only the kind is checked: a bad
// location or an edit without a target is the deliverer's to settle (as a
// permanent failure, or a send instead of the edit), and refusing it here
// would make CompleteWithOutbound fail, and its turn be retried, forever.
func checkOutbound(items []gateway.Outbound) error {
	for i, o := range items {
		switch o.Kind {
		case gateway.OutboundSend, gateway.OutboundEdit, gateway.OutboundEphemeral:
		default:
			return fmt.Errorf("outbound item %d has unknown kind %q", i, o.Kind)
		}
	}
	return nil
}

// insertOutbound stores items as unsent with zero attempts; NextAt and
// Created default to t.
func (db *DB) insertOutbound(ctx context.Context, tx *sql.Tx, items []gateway.Outbound, t time.Time) ([]int64, error) {
	if len(items) == 0 {
		return nil, nil
	}
	st := db.txStmt(ctx, tx, db.stmts.insertOutbound)
	ids := make([]int64, len(items))
	for i, o := range items {
		next, created := o.NextAt, o.Created
		if next.IsZero() {
			next = t
		}
		if created.IsZero() {
			created = t
		}
		body := o.Body
		if body == nil {
			body = []byte{} // nil binds as NULL
		}
		if err := st.QueryRowContext(ctx, string(o.Kind), o.Location, o.MessageID, o.EditOf,
			body, nanos(next), nanos(created), channelOf(o.Location), o.UserID).Scan(&ids[i]); err != nil {
			return nil, fmt.Errorf("insert outbound item %d: %w", i, err)
		}
	}
	return ids, nil
}

// EnqueueOutbound stores items in one transaction and returns their ids,
// in order. Kind must be OutboundSend or OutboundEdit; NextAt and Created
// default to now. Attempts, Sent and LastErr
// of the arguments are ignored: a new item is unsent.
func (db *DB) EnqueueOutbound(ctx context.Context, items ...gateway.Outbound) ([]int64, error) {
	if err := checkOutbound(items); err != nil {
		return nil, fmt.Errorf("enqueue outbound: %w", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	var ids []int64
	err := db.write(ctx, "EnqueueOutbound", func(tx *sql.Tx) error {
		var err error
		ids, err = db.insertOutbound(ctx, tx, items, now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue outbound: %w", err)
	}
	return ids, nil
}

const outboundColumns = `id, kind, location, message_id, edit_of, body, attempts, next_at, created, sent, last_err, user_id`

// The outbox's hot statements (prepared at Open, see stmts).
const (
	qInsertOutbound = `INSERT INTO outbox
		(kind, location, message_id, edit_of, body, next_at, created, channel, user_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	qDueOutbound = `SELECT ` + outboundColumns + ` FROM outbox
		WHERE sent = 0 AND next_at <= ?1 AND id > ?4
		  AND (?3 IS NULL OR channel IN (SELECT value FROM json_each(?3)))
		ORDER BY id LIMIT ?2`
	qMarkSent = `UPDATE outbox SET sent = 1,
		message_id = CASE WHEN ?1 = '' THEN message_id ELSE ?1 END WHERE id = ?2`
	qRetryOutbound = `UPDATE outbox SET attempts = attempts + 1,
		next_at = ?, last_err = ?, sent = CASE WHEN ? THEN 1 ELSE sent END WHERE id = ?`
)

func scanOutbound(s scanner) (gateway.Outbound, error) {
	var o gateway.Outbound
	var kind string
	var next, created int64
	if err := s.Scan(&o.ID, &kind, &o.Location, &o.MessageID, &o.EditOf, &o.Body,
		&o.Attempts, &next, &created, &o.Sent, &o.LastErr, &o.UserID); err != nil {
		return gateway.Outbound{}, err
	}
	o.Kind = gateway.OutboundKind(kind)
	o.NextAt, o.Created = fromNanos(next), fromNanos(created)
	return o, nil
}

// DueOutbound returns unsent items of channels (nil: any) whose NextAt is
// at or before now, in id order; limit <= 0 means all.
func (db *DB) DueOutbound(ctx context.Context, channels []string, t time.Time, limit int) ([]gateway.Outbound, error) {
	return db.DueOutboundAfter(ctx, channels, t, 0, limit)
}

// DueOutboundAfter is DueOutbound of the items whose id is above after.
func (db *DB) DueOutboundAfter(ctx context.Context, channels []string, t time.Time, after int64, limit int) ([]gateway.Outbound, error) {
	rows, err := db.stmts.dueOutbound.QueryContext(ctx, nanos(t), limitArg(limit), channelsArg(channels), after)
	if err != nil {
		return nil, fmt.Errorf("due outbound items: %w", err)
	}
	defer rows.Close()
	var out []gateway.Outbound
	for rows.Next() {
		o, err := scanOutbound(rows)
		if err != nil {
			return nil, fmt.Errorf("due outbound items: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("due outbound items: %w", err)
	}
	return out, nil
}

// WaitingOutbound returns the unsent items of channels (nil: any) whose
// NextAt is after now (a retry, a chat's rate limit), oldest first, with
// only their ID, Location and NextAt set; limit <= 0 means all. It runs
// when an outbox starts, so the chats they belong to wait for them.
func (db *DB) WaitingOutbound(ctx context.Context, channels []string, t time.Time, limit int) ([]gateway.Outbound, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, location, next_at FROM outbox
		WHERE sent = 0 AND next_at > ?1
		  AND (?3 IS NULL OR channel IN (SELECT value FROM json_each(?3)))
		ORDER BY id LIMIT ?2`, nanos(t), limitArg(limit), channelsArg(channels))
	if err != nil {
		return nil, fmt.Errorf("waiting outbound items: %w", err)
	}
	defer rows.Close()
	var out []gateway.Outbound
	for rows.Next() {
		var o gateway.Outbound
		var next int64
		if err := rows.Scan(&o.ID, &o.Location, &next); err != nil {
			return nil, fmt.Errorf("waiting outbound items: %w", err)
		}
		o.NextAt = fromNanos(next)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("waiting outbound items: %w", err)
	}
	return out, nil
}

// OutboundItem returns one item, or an error wrapping gateway.ErrNotFound.
func (db *DB) OutboundItem(ctx context.Context, id int64) (gateway.Outbound, error) {
	o, err := scanOutbound(db.stmts.outboundItem.QueryRowContext(pointRead(ctx), id))
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Outbound{}, fmt.Errorf("outbound item %d: %w", id, gateway.ErrNotFound)
	}
	if err != nil {
		return gateway.Outbound{}, fmt.Errorf("outbound item %d: %w", id, err)
	}
	return o, nil
}

// OutboundSent reports whether an item is marked sent, or an error
// wrapping gateway.ErrNotFound.
func (db *DB) OutboundSent(ctx context.Context, id int64) (bool, error) {
	var sent bool
	err := db.stmts.outboundSent.QueryRowContext(pointRead(ctx), id).Scan(&sent)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("outbound item %d: %w", id, gateway.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("outbound item %d: %w", id, err)
	}
	return sent, nil
}

// ChatPosts says what the outbox has on record as posted in chat (a
// location without its thread) and its threads; see gateway.ChatPosts.
// It reads the whole outbox (it has no index by location): it runs only
// for a message with buttons whose earlier attempt may have posted it.
func (db *DB) ChatPosts(ctx context.Context, chat string, before time.Time) (string, []string, error) {
	fail := func(err error) (string, []string, error) {
		return "", nil, fmt.Errorf("posts in %s: %w", chat, err)
	}
	const inChat = `(location = ?1 OR (location > ?1 || ':' AND location < ?1 || ';')) AND message_id GLOB '[0-9]*'`
	var last sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT MAX(CAST(message_id AS INTEGER)) FROM outbox
		WHERE `+inChat+` AND sent = 1 AND created < ?2`, chat, nanos(before)).Scan(&last)
	if err != nil {
		return fail(err)
	}
	lo := int64(0)
	if last.Valid {
		lo = last.Int64
	}
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT message_id FROM outbox
		WHERE `+inChat+` AND CAST(message_id AS INTEGER) > ?2`, chat, lo)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	since := []string{} // not nil: there is a record, possibly empty
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fail(err)
		}
		since = append(since, id)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	if !last.Valid {
		return "", since, nil
	}
	return strconv.FormatInt(lo, 10), since, nil
}

// MarkSent records success. A non-empty messageID is stored as the item's
// MessageID; an empty one keeps the stored MessageID (an edit's target).
func (db *DB) MarkSent(ctx context.Context, id int64, messageID string) error {
	err := db.write(ctx, "MarkSent", func(tx *sql.Tx) error {
		ctx := inWriter(ctx)
		res, err := db.txStmt(ctx, tx, db.stmts.markSent).ExecContext(ctx, messageID, id)
		if err != nil {
			return err
		}
		return mustAffectGateway(res, "outbound item", id)
	})
	if err != nil {
		return fmt.Errorf("mark outbound item %d sent: %w", id, err)
	}
	return nil
}

// Retry records a failed attempt: Attempts grows by one, LastErr is set and
// the item is due again at next. A permanent failure marks the item sent
// (LastErr kept), so it is never due again.
func (db *DB) Retry(ctx context.Context, id int64, next time.Time, lastErr string, permanent bool) error {
	err := db.write(ctx, "Retry", func(tx *sql.Tx) error {
		res, err := db.txStmt(ctx, tx, db.stmts.retryOutbound).ExecContext(ctx,
			nanos(next), lastErr, permanent, id)
		if err != nil {
			return err
		}
		return mustAffectGateway(res, "outbound item", id)
	})
	if err != nil {
		return fmt.Errorf("retry outbound item %d: %w", id, err)
	}
	return nil
}

// mustAffectGateway turns "no row changed" into an error wrapping
// gateway.ErrNotFound.
func mustAffectGateway(res sql.Result, what string, id any) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s %v: %w", what, id, gateway.ErrNotFound)
	}
	return nil
}
