package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// maxWebSessions bounds the stored web logins; the oldest go first.
const maxWebSessions = 256

// CreateWebSession stores a web login (channels/web.SessionStore) by the
// hash of its cookie, purging expired ones and keeping at most
// maxWebSessions.
func (db *DB) CreateWebSession(ctx context.Context, id string, expires time.Time) error {
	t := now()
	err := db.write(ctx, "CreateWebSession", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE expires <= ?`, nanos(t)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (id, expires, created) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET expires = excluded.expires`, id, nanos(expires), nanos(t)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE id IN
			(SELECT id FROM web_sessions ORDER BY created DESC LIMIT -1 OFFSET ?)`, maxWebSessions)
		return err
	})
	if err != nil {
		return fmt.Errorf("store web session: %w", err)
	}
	return nil
}

// WebSession returns a stored login's expiry.
func (db *DB) WebSession(ctx context.Context, id string) (time.Time, bool, error) {
	var exp int64
	err := db.r.QueryRowContext(ctx, `SELECT expires FROM web_sessions WHERE id = ?`, id).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("web session: %w", err)
	}
	return fromNanos(exp), true, nil
}

// DeleteWebSession revokes a stored login.
func (db *DB) DeleteWebSession(ctx context.Context, id string) error {
	err := db.write(ctx, "DeleteWebSession", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete web session: %w", err)
	}
	return nil
}
