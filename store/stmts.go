package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are the writer's hot statements, prepared once on its single
// connection; transactions use them through Tx.StmtContext, which reuses
// the prepared statement instead of parsing the SQL again.
type stmts struct {
	appendHead        *sql.Stmt
	insertMessage     *sql.Stmt
	indexMessage      *sql.Stmt
	appendView        *sql.Stmt
	touchConversation *sql.Stmt
}

func (s *stmts) prepare(ctx context.Context, w *sql.DB) error {
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&s.appendHead, `SELECT
			COALESCE((SELECT MAX(seq) FROM messages WHERE conversation_id = c.id), 0),
			COALESCE((SELECT MAX(position) FROM view WHERE conversation_id = c.id), -1)
			FROM conversations c WHERE c.id = ?`},
		{&s.insertMessage, `INSERT INTO messages
			(id, conversation_id, seq, role, parts, tool_calls, reasoning,
			 tool_call_id, tool_name, is_error, run_id, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.indexMessage, `INSERT INTO messages_fts (rowid, body) VALUES (?, ?)`},
		{&s.appendView, `INSERT INTO view (conversation_id, position, message_id) VALUES (?, ?, ?)`},
		{&s.touchConversation, `UPDATE conversations SET updated = MAX(updated, ?) WHERE id = ?`},
	} {
		st, err := w.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = st
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.appendHead, s.insertMessage, s.indexMessage, s.appendView, s.touchConversation} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
