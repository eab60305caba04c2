package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// TakeItem takes the conversation's lease and counts an attempt of the
// item, in one transaction (gateway.Turns).
func (db *DB) TakeItem(ctx context.Context, id int64, conversationID, owner string, ttl time.Duration) (int, bool, error) {
	if owner == "" {
		return 0, false, fmt.Errorf("take queue item %d: empty owner", id)
	}
	var attempts int
	var leased bool
	err := db.write(ctx, "TakeItem", func(tx *sql.Tx) error {
		ctx := inWriter(ctx)
		t := now()
		res, err := db.txStmt(ctx, tx, db.stmts.acquireLease).ExecContext(ctx,
			conversationID, owner, nanos(t.Add(ttl)), nanos(t))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n != 1 {
			leased = false
			return err
		}
		err = db.txStmt(ctx, tx, db.stmts.takeQueued).QueryRowContext(ctx, id, conversationID).Scan(&attempts)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no unfinished queue item %d in conversation %s: %w", id, conversationID, gateway.ErrNotFound)
		}
		leased = err == nil
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("take queue item %d: %w", id, err)
	}
	return attempts, leased, nil
}

const qTakeQueued = `UPDATE queue SET attempts = attempts + 1
	WHERE id = ? AND conversation_id = ? AND state = 'queued' RETURNING attempts`

// FinishTurn stores a finished turn's records in one transaction
// (gateway.Turns): the agent core's, the completed items, the outbox items,
// buttons, approval posts and settings.
func (db *DB) FinishTurn(ctx context.Context, e gateway.TurnEnd) (gateway.Finished, error) {
	fail := func(err error) (gateway.Finished, error) {
		return gateway.Finished{}, fmt.Errorf("finish turn of %s: %w", e.Turn.ConversationID, err)
	}
	b, err := encodeTurn(e.Turn)
	if err != nil {
		return fail(err)
	}
	if err := checkOutbound(e.Outbound); err != nil {
		return fail(err)
	}
	for i, p := range e.Posts {
		if p.Outbound < 0 || p.Outbound >= len(e.Outbound) || p.ApprovalID == "" {
			return fail(fmt.Errorf("approval post %d names outbound item %d of %d", i, p.Outbound, len(e.Outbound)))
		}
	}
	if err := checkButtons(e.Buttons); err != nil {
		return fail(err)
	}
	for i, s := range e.Settings {
		if s.Scope == "" || s.Key == "" {
			return fail(fmt.Errorf("setting %d needs a scope and a key", i))
		}
	}
	var ids []int64
	err = db.write(ctx, "FinishTurn", func(tx *sql.Tx) error {
		ctx := inWriter(ctx)
		t := now()
		for i, id := range e.Complete {
			err := db.completeItem(ctx, tx, id, t)
			if i > 0 && errors.Is(err, gateway.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
		}
		if err := db.commitTurnTx(ctx, tx, b); err != nil {
			return err
		}
		if err := db.createButtonsTx(ctx, tx, e.Buttons, t); err != nil {
			return err
		}
		var err error
		if ids, err = db.insertOutbound(ctx, tx, e.Outbound, t); err != nil {
			return err
		}
		for _, p := range e.Posts {
			if err := db.addPostTx(ctx, tx, gateway.ApprovalPost{ApprovalID: p.ApprovalID, Location: p.Location, OutboxID: ids[p.Outbound]}); err != nil {
				return err
			}
		}
		for _, s := range e.Settings {
			if err := db.setSettingTx(ctx, tx, s.Scope, s.Key, s.Value, t); err != nil {
				return err
			}
		}
		return nil
	})
	if len(e.Settings) > 0 {
		scopes := make([]string, len(e.Settings))
		for i, s := range e.Settings {
			scopes[i] = s.Scope
		}
		db.settingsCache.drop(scopes...)
	}
	if err != nil {
		return fail(err)
	}
	return gateway.Finished{Messages: b.msgs.out, Outbound: ids}, nil
}

// EnqueueNew enqueues the first message of an unbound location with its
// new conversation and binding, in one transaction (gateway.Turns).
func (db *DB) EnqueueNew(ctx context.Context, conv agentcore.Conversation, b gateway.Binding, it gateway.Item, dedupeKey string, dedupeTTL time.Duration) (gateway.Binding, int64, bool, error) {
	if conv.ID == "" || conv.AgentID == "" || b.Location == "" || it.Kind == "" {
		return b, 0, false, fmt.Errorf("enqueue new: conversation (%q of %q), location (%q) and kind (%q) are required", conv.ID, conv.AgentID, b.Location, it.Kind)
	}
	if dedupeKey != "" && dedupeTTL <= 0 {
		return b, 0, false, fmt.Errorf("enqueue new at %s: dedupe key %q with non-positive ttl %v", b.Location, dedupeKey, dedupeTTL)
	}
	t := now()
	if conv.Created.IsZero() {
		conv.Created = t
	}
	if conv.Updated.IsZero() {
		conv.Updated = conv.Created
	}
	if b.Created.IsZero() {
		b.Created = t
	}
	var (
		used     gateway.Binding
		id       int64
		enqueued bool
	)
	err := db.write(ctx, "EnqueueNew", func(tx *sql.Tx) error {
		ctx := inWriter(ctx)
		used, id, enqueued = b, 0, false
		var created int64
		err := db.txStmt(ctx, tx, db.stmts.bindingForUpdate).QueryRowContext(ctx, b.Location).Scan(&used.Location, &used.AgentID, &used.ConversationID, &created)
		bound := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if bound {
			used.Created = fromNanos(created) // bound meanwhile: that conversation
		}
		// A retry names the item the key stored; no conversation is
		// created for it.
		seen, fresh, err := db.claimItemKey(ctx, tx, dedupeKey, t, dedupeTTL)
		if err != nil || !fresh {
			id = seen
			return err
		}
		if !bound {
			used = b
			used.ConversationID, used.AgentID = conv.ID, conv.AgentID
			if err := db.ensureAgent(ctx, tx, conv.AgentID); err != nil {
				return err
			}
			if _, err := db.txStmt(ctx, tx, db.stmts.insertConversation).ExecContext(ctx,
				conv.ID, conv.AgentID, nanos(conv.Created), nanos(conv.Updated)); err != nil {
				return fmt.Errorf("create conversation %s: %w", conv.ID, err)
			}
			if _, err := db.txStmt(ctx, tx, db.stmts.bind).ExecContext(ctx,
				used.Location, used.AgentID, used.ConversationID, nanos(used.Created)); err != nil {
				return fmt.Errorf("bind: %w", err)
			}
		}
		it.ConversationID, it.AgentID = used.ConversationID, used.AgentID
		id, err = db.insertKeyedItem(ctx, tx, it, dedupeKey, t)
		enqueued = err == nil
		return err
	})
	if err != nil {
		return b, 0, false, fmt.Errorf("enqueue the first message at %s: %w", b.Location, err)
	}
	return used, id, enqueued, nil
}
