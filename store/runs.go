package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// The runs' hot statements (prepared at Open, see stmts).
const (
	qStartRun = `INSERT INTO runs
		(id, conversation_id, turn_id, step, model, stop_reason, input_tokens, output_tokens,
		 cached_tokens, usage_reported, error, started, finished)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qFinishRun = `UPDATE runs SET
		model = CASE WHEN ? = '' THEN model ELSE ? END,
		stop_reason = ?, input_tokens = ?, output_tokens = ?, cached_tokens = ?,
		usage_reported = ?, error = ?, finished = ?
		WHERE id = ?`
	qListRuns = `SELECT id, conversation_id, turn_id, step, model, stop_reason,
			input_tokens, output_tokens, cached_tokens, usage_reported, error, started, finished
		FROM runs WHERE conversation_id = ? ORDER BY started, rowid`
	qRecentRuns = `SELECT id, conversation_id, turn_id, step, model, stop_reason,
			input_tokens, output_tokens, cached_tokens, usage_reported, error, started, finished
		FROM runs WHERE conversation_id = ? ORDER BY started DESC, rowid DESC LIMIT ?`
	qMarkToolStarted = `INSERT INTO tool_started (conversation_id, tool_call_id, started)
		VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
)

// StartRun records the start of a step (one model call). r.ID and
// r.ConversationID are required; Started defaults to now.
func (db *DB) StartRun(ctx context.Context, r agentcore.Run) error {
	if r.ID == "" {
		return fmt.Errorf("start run in conversation %s: empty run id", r.ConversationID)
	}
	if r.Started.IsZero() {
		r.Started = now()
	}
	err := db.write(ctx, "StartRun", func(tx *sql.Tx) error {
		return db.startRunTx(ctx, tx, r)
	})
	if err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return nil
}

func (db *DB) startRunTx(ctx context.Context, tx *sql.Tx, r agentcore.Run) error {
	_, err := db.txStmt(ctx, tx, db.stmts.startRun).ExecContext(ctx,
		r.ID, r.ConversationID, r.TurnID, r.Step, r.Model, string(r.StopReason),
		r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedTokens, r.Usage.Reported,
		r.Error, nanos(r.Started), nanos(r.Finished))
	if isForeignKey(err) {
		return fmt.Errorf("conversation %s: %w", r.ConversationID, ErrNotFound)
	}
	return err
}

// FinishRun records how a step ended: stop reason, usage, error, finish
// time (default now) and, when set, the model that answered. It returns
// ErrNotFound for a run that was never started.
func (db *DB) FinishRun(ctx context.Context, r agentcore.Run) error {
	if r.Finished.IsZero() {
		r.Finished = now()
	}
	err := db.write(ctx, "FinishRun", func(tx *sql.Tx) error {
		res, err := db.txStmt(ctx, tx, db.stmts.finishRun).ExecContext(ctx,
			r.Model, r.Model, string(r.StopReason),
			r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedTokens, r.Usage.Reported,
			r.Error, nanos(r.Finished), r.ID)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	return nil
}

// ListRuns returns the conversation's runs in the order they started.
func (db *DB) ListRuns(ctx context.Context, conversationID string) ([]agentcore.Run, error) {
	runs, err := db.queryRuns(ctx, db.stmts.listRuns, conversationID)
	if err != nil {
		return nil, fmt.Errorf("list runs of conversation %s: %w", conversationID, err)
	}
	return runs, nil
}

// RecentRuns returns the conversation's n newest runs, newest first.
func (db *DB) RecentRuns(ctx context.Context, conversationID string, n int) ([]agentcore.Run, error) {
	if n <= 0 {
		return nil, nil
	}
	runs, err := db.queryRuns(ctx, db.stmts.recentRuns, conversationID, n)
	if err != nil {
		return nil, fmt.Errorf("recent runs of conversation %s: %w", conversationID, err)
	}
	return runs, nil
}

func (db *DB) queryRuns(ctx context.Context, stmt *sql.Stmt, args ...any) ([]agentcore.Run, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []agentcore.Run
	for rows.Next() {
		var r agentcore.Run
		var stop string
		var started, finished int64
		if err := rows.Scan(&r.ID, &r.ConversationID, &r.TurnID, &r.Step, &r.Model, &stop,
			&r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CachedTokens, &r.Usage.Reported,
			&r.Error, &started, &finished); err != nil {
			return nil, err
		}
		r.StopReason = agentcore.StopReason(stop)
		r.Started, r.Finished = fromNanos(started), fromNanos(finished)
		runs = append(runs, r)
	}
	return runs, rows.Err()
}

// MarkToolStarted records that a tool call began executing. Marking the
// same call again is a no-op.
func (db *DB) MarkToolStarted(ctx context.Context, conversationID, toolCallID string) error {
	err := db.write(ctx, "MarkToolStarted", func(tx *sql.Tx) error {
		return db.markToolTx(ctx, tx, conversationID, toolCallID, now())
	})
	if err != nil {
		return fmt.Errorf("mark tool call %s started: %w", toolCallID, err)
	}
	return nil
}

func (db *DB) markToolTx(ctx context.Context, tx *sql.Tx, conversationID, toolCallID string, t time.Time) error {
	_, err := db.txStmt(ctx, tx, db.stmts.markTool).ExecContext(ctx, conversationID, toolCallID, nanos(t))
	if isForeignKey(err) {
		return fmt.Errorf("conversation %s: %w", conversationID, ErrNotFound)
	}
	return err
}

// StartedToolCalls returns which of the given calls of the conversation
// began executing, as a non-nil set: point lookups, so the cost does not
// grow with the conversation.
func (db *DB) StartedToolCalls(ctx context.Context, conversationID string, callIDs []string) (map[string]bool, error) {
	started := map[string]bool{}
	for _, id := range callIDs {
		var one int
		err := db.stmts.startedToolCall.QueryRowContext(pointRead(ctx), conversationID, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("started tool calls of conversation %s: %w", conversationID, err)
		}
		started[id] = true
	}
	return started, nil
}

// errNoRows maps sql.ErrNoRows to ErrNotFound.
func errNoRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
