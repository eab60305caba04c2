package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// turnBatch is an agentcore.TurnWrite checked and encoded outside the
// writer.
type turnBatch struct {
	w         agentcore.TurnWrite
	msgs      messageBatch
	approvals []approvalRow
}

func encodeTurn(w agentcore.TurnWrite) (turnBatch, error) {
	if w.ConversationID == "" {
		return turnBatch{}, errors.New("empty conversation id")
	}
	if w.Release && w.Owner == "" {
		return turnBatch{}, errors.New("a lease release needs its owner")
	}
	t := now()
	b := turnBatch{w: w}
	var err error
	if b.msgs, err = encodeMessages(w.ConversationID, w.Messages, t); err != nil {
		return turnBatch{}, err
	}
	if b.approvals, err = encodeApprovals(w.Approvals, t); err != nil {
		return turnBatch{}, err
	}
	b.w.Runs = slices.Clone(w.Runs)
	for i, r := range w.Runs {
		if r.ID == "" {
			return turnBatch{}, fmt.Errorf("run %d has no id", i)
		}
		if r.Started.IsZero() {
			b.w.Runs[i].Started = t
		}
	}
	return b, nil
}

// CommitTurn stores a turn's records in one transaction: the lease check,
// the system prompt, messages, runs, approvals, tool starts and the lease's
// release, in that order (see agentcore.TurnStore).
func (db *DB) CommitTurn(ctx context.Context, w agentcore.TurnWrite) ([]agentcore.Message, error) {
	b, err := encodeTurn(w)
	if err != nil {
		return nil, fmt.Errorf("commit turn of %s: %w", w.ConversationID, err)
	}
	err = db.write(ctx, "CommitTurn", func(tx *sql.Tx) error {
		return db.commitTurnTx(inWriter(ctx), tx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("commit turn of %s: %w", w.ConversationID, err)
	}
	return b.msgs.out, nil
}

func (db *DB) commitTurnTx(ctx context.Context, tx *sql.Tx, b turnBatch) error {
	w := b.w
	if w.Owner != "" {
		var one int
		err := db.txStmt(ctx, tx, db.stmts.holdsLease).QueryRowContext(ctx, w.ConversationID, w.Owner).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%s does not hold the lease: %w", w.Owner, agentcore.ErrLeaseLost)
		}
		if err != nil {
			return err
		}
	}
	if w.SystemPrompt != "" {
		if err := db.setPromptTx(ctx, tx, w.ConversationID, w.SystemPrompt, w.PromptRevision); err != nil {
			return fmt.Errorf("system prompt: %w", err)
		}
	}
	if len(b.msgs.out) > 0 {
		if err := db.appendTx(ctx, tx, w.ConversationID, b.msgs); err != nil {
			return err
		}
	}
	for _, r := range w.Runs {
		if r.ConversationID == "" {
			r.ConversationID = w.ConversationID
		}
		if err := db.startRunTx(ctx, tx, r); err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
	}
	if err := db.createApprovalsTx(ctx, tx, b.approvals); err != nil {
		return err
	}
	t := b.msgs.t
	for _, id := range w.ToolStarted {
		if err := db.markToolTx(ctx, tx, w.ConversationID, id, t); err != nil {
			return fmt.Errorf("mark tool call %s started: %w", id, err)
		}
	}
	if w.Release {
		if _, err := db.txStmt(ctx, tx, db.stmts.releaseLease).ExecContext(ctx, w.ConversationID, w.Owner); err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
	}
	return nil
}
