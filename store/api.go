package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/channels/api"
	"github.com/switchboard-gw/switchboard/gateway"
)

// The HTTP API's storage port (channels/api.Store): the conversations API
// callers started and the retained event log of their streams. Its "not
// found" errors wrap api.ErrNotFound.
var (
	_ api.Store           = (*DB)(nil)
	_ gateway.MessageSeqs = (*DB)(nil)
)

// AddConversation records a conversation an API caller started.
func (db *DB) AddConversation(ctx context.Context, c api.Conversation) (api.Conversation, error) {
	if c.ID == "" || c.Account == "" {
		return api.Conversation{}, fmt.Errorf("add API conversation: id (%q) and account (%q) are required", c.ID, c.Account)
	}
	if c.Created.IsZero() {
		c.Created = now()
	}
	err := db.write(ctx, "AddConversation", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO api_conversations (id, account, agent, title, created)
			VALUES (?, ?, ?, ?, ?) RETURNING pos`, c.ID, c.Account, c.Agent, c.Title, nanos(c.Created)).Scan(&c.Pos)
	})
	if err != nil {
		return api.Conversation{}, fmt.Errorf("add API conversation %s: %w", c.ID, err)
	}
	return c, nil
}

const apiConversationColumns = `pos, id, account, agent, title, created`

func scanAPIConversation(s scanner) (api.Conversation, error) {
	var c api.Conversation
	var created int64
	if err := s.Scan(&c.Pos, &c.ID, &c.Account, &c.Agent, &c.Title, &created); err != nil {
		return api.Conversation{}, err
	}
	c.Created = fromNanos(created)
	return c, nil
}

// APIConversation returns a conversation an API caller started.
func (db *DB) APIConversation(ctx context.Context, id string) (api.Conversation, error) {
	c, err := scanAPIConversation(db.r.QueryRowContext(ctx, `SELECT `+apiConversationColumns+` FROM api_conversations WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Conversation{}, fmt.Errorf("API conversation %s: %w", id, api.ErrNotFound)
	}
	if err != nil {
		return api.Conversation{}, fmt.Errorf("API conversation %s: %w", id, err)
	}
	return c, nil
}

// APIConversations lists an account's conversations below a position,
// newest first.
func (db *DB) APIConversations(ctx context.Context, account string, beforePos int64, limit int) ([]api.Conversation, error) {
	if beforePos <= 0 {
		beforePos = 1<<63 - 1
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+apiConversationColumns+` FROM api_conversations
		WHERE account = ? AND pos < ? ORDER BY pos DESC LIMIT ?`, account, beforePos, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("API conversations of %s: %w", account, err)
	}
	defer rows.Close()
	var out []api.Conversation
	for rows.Next() {
		c, err := scanAPIConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("API conversations of %s: %w", account, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("API conversations of %s: %w", account, err)
	}
	return out, nil
}

// AppendEvent stores one event, numbering it within its run: seq_id is 1 +
// the run's highest in the conversation, read and written in one
// transaction.
func (db *DB) AppendEvent(ctx context.Context, ev api.Event) (api.Event, error) {
	if ev.ConversationID == "" || ev.RunID == "" || ev.Type == "" {
		return api.Event{}, fmt.Errorf("append API event: conversation (%q), run (%q) and type (%q) are required", ev.ConversationID, ev.RunID, ev.Type)
	}
	if !json.Valid(ev.Data) || !strings.HasPrefix(strings.TrimSpace(string(ev.Data)), "{") {
		return api.Event{}, fmt.Errorf("append API event %s of %s: data is not a JSON object", ev.Type, ev.ConversationID)
	}
	if ev.At.IsZero() {
		ev.At = now()
	}
	err := db.write(ctx, "AppendEvent", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO api_events (conversation_id, run_id, seq_id, type, input_id, data, created)
			VALUES (?1, ?2, 1 + COALESCE((SELECT MAX(seq_id) FROM api_events WHERE conversation_id = ?1 AND run_id = ?2), 0), ?3, ?4, ?5, ?6)
			RETURNING pos, seq_id`,
			ev.ConversationID, ev.RunID, ev.Type, ev.InputID, string(ev.Data), nanos(ev.At)).Scan(&ev.Pos, &ev.SeqID)
	})
	if err != nil {
		return api.Event{}, fmt.Errorf("append API event %s of %s: %w", ev.Type, ev.ConversationID, err)
	}
	return ev, nil
}

const apiEventColumns = `pos, conversation_id, run_id, seq_id, type, input_id, data, created`

func scanAPIEvent(s scanner) (api.Event, error) {
	var ev api.Event
	var data string
	var created int64
	if err := s.Scan(&ev.Pos, &ev.ConversationID, &ev.RunID, &ev.SeqID, &ev.Type, &ev.InputID, &data, &created); err != nil {
		return api.Event{}, err
	}
	ev.Data, ev.At = []byte(data), fromNanos(created)
	return ev, nil
}

// EventsAfter returns a conversation's events after a position, in order.
func (db *DB) EventsAfter(ctx context.Context, conversationID string, afterPos int64, limit int) ([]api.Event, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+apiEventColumns+` FROM api_events
		WHERE conversation_id = ? AND pos > ? ORDER BY pos LIMIT ?`, conversationID, afterPos, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("API events of %s: %w", conversationID, err)
	}
	defer rows.Close()
	var out []api.Event
	for rows.Next() {
		ev, err := scanAPIEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("API events of %s: %w", conversationID, err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("API events of %s: %w", conversationID, err)
	}
	return out, nil
}

// EventByID returns the event with a stream identity.
func (db *DB) EventByID(ctx context.Context, conversationID, runID string, seqID int64) (api.Event, error) {
	ev, err := scanAPIEvent(db.r.QueryRowContext(ctx, `SELECT `+apiEventColumns+` FROM api_events
		WHERE conversation_id = ? AND run_id = ? AND seq_id = ?`, conversationID, runID, seqID))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Event{}, fmt.Errorf("API event %s:%d of %s: %w", runID, seqID, conversationID, api.ErrNotFound)
	}
	if err != nil {
		return api.Event{}, fmt.Errorf("API event %s:%d of %s: %w", runID, seqID, conversationID, err)
	}
	return ev, nil
}

// LastEvent returns the newest event matching q.
func (db *DB) LastEvent(ctx context.Context, q api.EventQuery) (api.Event, error) {
	query := `SELECT ` + apiEventColumns + ` FROM api_events WHERE conversation_id = ?`
	args := []any{q.ConversationID}
	if q.BeforePos > 0 {
		query += ` AND pos < ?`
		args = append(args, q.BeforePos)
	}
	if q.InputID != "" {
		query += ` AND input_id = ?`
		args = append(args, q.InputID)
	}
	if len(q.Types) > 0 {
		query += ` AND type IN (SELECT value FROM json_each(?))`
		b, _ := json.Marshal(q.Types)
		args = append(args, string(b))
	}
	ev, err := scanAPIEvent(db.r.QueryRowContext(ctx, query+` ORDER BY pos DESC LIMIT 1`, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return api.Event{}, fmt.Errorf("last API event of %s: %w", q.ConversationID, api.ErrNotFound)
	}
	if err != nil {
		return api.Event{}, fmt.Errorf("last API event of %s: %w", q.ConversationID, err)
	}
	return ev, nil
}

// PruneEvents deletes events stored before a time.
func (db *DB) PruneEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, "PruneEvents", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM api_events WHERE created < ?`, nanos(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune API events: %w", err)
	}
	return n, nil
}

// MessageSeq returns the position of a message in its conversation
// (gateway.MessageSeqs), or ErrNotFound.
func (db *DB) MessageSeq(ctx context.Context, conversationID, messageID string) (int64, error) {
	var seq int64
	err := db.r.QueryRowContext(ctx, `SELECT seq FROM messages WHERE id = ? AND conversation_id = ?`, messageID, conversationID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("message %s of %s: %w", messageID, conversationID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("message %s of %s: %w", messageID, conversationID, err)
	}
	return seq, nil
}
