package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

const pairingColumns = `code, channel, user_id, user_name, location, created, expires, approved`

func scanPairing(s scanner) (gateway.Pairing, error) {
	var p gateway.Pairing
	var created, expires int64
	if err := s.Scan(&p.Code, &p.Channel, &p.UserID, &p.UserName, &p.Location,
		&created, &expires, &p.Approved); err != nil {
		return gateway.Pairing{}, err
	}
	p.Created, p.Expires = fromNanos(created), fromNanos(expires)
	return p, nil
}

// CreatePairing gives p's user a pending code and says whether to send it
// (see gateway.Pairings): the user's unexpired pending code if there is
// one, else p, stored — evicting the oldest other users' pending codes
// while the channel holds more than limit (limit < 1 counts as 1). notify is
// true, and now is recorded as the user's last notice, unless the user was
// sent a code within notifyEvery; a user whose code was evicted within
// that time gets no new code either (the zero Pairing and false). Code,
// Channel, UserID and Expires are required; Created defaults to now.
// Expired pending codes and old notices are purged. A code that is already
// taken is an error.
func (db *DB) CreatePairing(ctx context.Context, p gateway.Pairing, limit int, notifyEvery time.Duration, t time.Time) (gateway.Pairing, bool, error) {
	if p.Code == "" || p.Channel == "" || p.UserID == "" || p.Expires.IsZero() {
		return gateway.Pairing{}, false, fmt.Errorf("create pairing: code, channel (%q), user id (%q) and expiry are required", p.Channel, p.UserID)
	}
	if p.Created.IsZero() {
		p.Created = t
	}
	p.Approved = false
	limit = max(limit, 1)
	var stored gateway.Pairing
	var notify bool
	err := db.write(ctx, "CreatePairing", func(tx *sql.Tx) error {
		stored, notify = gateway.Pairing{}, false
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM pairings WHERE approved = 0 AND expires <= ?`, nanos(t)); err != nil {
			return fmt.Errorf("purge expired codes: %w", err)
		}
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM pairing_notices WHERE sent <= ?`, nanos(t.Add(-notifyEvery))); err != nil {
			return fmt.Errorf("purge old notices: %w", err)
		}
		var noticed int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pairing_notices
			WHERE channel = ? AND user_id = ?`, p.Channel, p.UserID).Scan(&noticed); err != nil {
			return fmt.Errorf("look up the user's last notice: %w", err)
		}
		existing, err := scanPairing(tx.QueryRowContext(ctx, `SELECT `+pairingColumns+` FROM pairings
			WHERE channel = ? AND user_id = ? AND approved = 0 AND expires > ?
			ORDER BY created DESC LIMIT 1`, p.Channel, p.UserID, nanos(t)))
		switch {
		case err == nil:
			stored = existing
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("look up the user's code: %w", err)
		case noticed > 0:
			return nil // told within the hour; their code was evicted since
		default:
			if _, err := tx.ExecContext(ctx, `INSERT INTO pairings
				(code, channel, user_id, user_name, location, created, expires, approved)
				VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
				p.Code, p.Channel, p.UserID, p.UserName, p.Location, nanos(p.Created), nanos(p.Expires)); err != nil {
				if isUnique(err) {
					return fmt.Errorf("code already taken: %w", err)
				}
				return err
			}
			if err := evictPairings(ctx, tx, p, limit); err != nil {
				return err
			}
			stored = p
		}
		if noticed > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO pairing_notices (channel, user_id, sent) VALUES (?, ?, ?)
			ON CONFLICT (channel, user_id) DO UPDATE SET sent = excluded.sent`,
			p.Channel, p.UserID, nanos(t)); err != nil {
			return fmt.Errorf("record the notice: %w", err)
		}
		notify = true
		return nil
	})
	if err != nil {
		return gateway.Pairing{}, false, fmt.Errorf("create pairing for %s:%s: %w", p.Channel, p.UserID, err)
	}
	return stored, notify, nil
}

// evictPairings deletes the oldest pending codes of p's channel, other
// than p's user's, while the channel holds more than limit. Expired codes
// were purged before.
func evictPairings(ctx context.Context, tx *sql.Tx, p gateway.Pairing, limit int) error {
	var pending int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pairings
		WHERE channel = ? AND approved = 0`, p.Channel).Scan(&pending); err != nil {
		return fmt.Errorf("count pending codes: %w", err)
	}
	if pending <= limit {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM pairings WHERE code IN (
		SELECT code FROM pairings WHERE channel = ? AND approved = 0 AND user_id != ?
		ORDER BY created, code LIMIT ?)`, p.Channel, p.UserID, pending-limit); err != nil {
		return fmt.Errorf("evict the oldest pending codes: %w", err)
	}
	return nil
}

// ApprovePairing marks a pending code that is unexpired at now approved
// and pairs its user, in one transaction. An unknown, expired or already
// approved code is an error wrapping gateway.ErrNotFound.
func (db *DB) ApprovePairing(ctx context.Context, code string, t time.Time) (gateway.Pairing, error) {
	var p gateway.Pairing
	err := db.write(ctx, "ApprovePairing", func(tx *sql.Tx) error {
		var err error
		p, err = scanPairing(tx.QueryRowContext(ctx, `UPDATE pairings SET approved = 1
			WHERE code = ? AND approved = 0 AND expires > ? RETURNING `+pairingColumns, code, nanos(t)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no pending unexpired code: %w", gateway.ErrNotFound)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO paired_users (channel, user_id, code, created)
			VALUES (?, ?, ?, ?) ON CONFLICT (channel, user_id) DO NOTHING`,
			p.Channel, p.UserID, p.Code, nanos(t))
		return err
	})
	if err != nil {
		return gateway.Pairing{}, fmt.Errorf("approve pairing code %q: %w", code, err)
	}
	return p, nil
}

// Paired reports whether channel:userID has been paired.
func (db *DB) Paired(ctx context.Context, channel, userID string) (bool, error) {
	var n int
	if err := db.stmts.paired.QueryRowContext(ctx, channel, userID).Scan(&n); err != nil {
		return false, fmt.Errorf("paired %s:%s: %w", channel, userID, err)
	}
	return n > 0, nil
}

// CreateButtons stores button tokens in one transaction: all or none.
// Token, ApprovalID and Action are required; Created defaults to now. A
// token that already exists is an error.
func (db *DB) CreateButtons(ctx context.Context, bs []gateway.Button) error {
	if err := checkButtons(bs); err != nil {
		return fmt.Errorf("create buttons: %w", err)
	}
	if len(bs) == 0 {
		return nil
	}
	err := db.write(ctx, "CreateButtons", func(tx *sql.Tx) error {
		return db.createButtonsTx(ctx, tx, bs, now())
	})
	if err != nil {
		// Tokens are secrets of a kind (whoever has one can press the
		// button), so they stay out of error messages.
		return fmt.Errorf("create buttons for approval %s: %w", bs[0].ApprovalID, err)
	}
	return nil
}

func checkButtons(bs []gateway.Button) error {
	for i, b := range bs {
		if b.Token == "" || b.ApprovalID == "" || b.Action == "" {
			return fmt.Errorf("button %d needs a token, approval id (%q) and action (%q)", i, b.ApprovalID, b.Action)
		}
	}
	return nil
}

func (db *DB) createButtonsTx(ctx context.Context, tx *sql.Tx, bs []gateway.Button, t time.Time) error {
	for i, b := range bs {
		created := b.Created
		if created.IsZero() {
			created = t
		}
		if _, err := db.txStmt(ctx, tx, db.stmts.insertButton).ExecContext(ctx,
			b.Token, b.ApprovalID, string(b.Action), nanos(created)); err != nil {
			if isUnique(err) {
				return fmt.Errorf("button %d: token already exists: %w", i, err)
			}
			return fmt.Errorf("button %d: %w", i, err)
		}
	}
	return nil
}

// Button looks a token up; unknown tokens are an error wrapping
// gateway.ErrNotFound.
func (db *DB) Button(ctx context.Context, token string) (gateway.Button, error) {
	var b gateway.Button
	var action string
	var created int64
	err := db.r.QueryRowContext(ctx,
		`SELECT token, approval_id, action, created FROM buttons WHERE token = ?`, token).
		Scan(&b.Token, &b.ApprovalID, &action, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return gateway.Button{}, fmt.Errorf("button: unknown token: %w", gateway.ErrNotFound)
	}
	if err != nil {
		return gateway.Button{}, fmt.Errorf("button: %w", err)
	}
	b.Action, b.Created = gateway.ButtonAction(action), fromNanos(created)
	return b, nil
}

// AddApprovalPost records one posted copy of an approval message.
// ApprovalID and Location are required.
func (db *DB) AddApprovalPost(ctx context.Context, p gateway.ApprovalPost) error {
	if p.ApprovalID == "" || p.Location == "" {
		return fmt.Errorf("add approval post: approval id (%q) and location (%q) are required", p.ApprovalID, p.Location)
	}
	err := db.write(ctx, "AddApprovalPost", func(tx *sql.Tx) error {
		return db.addPostTx(ctx, tx, p)
	})
	if err != nil {
		return fmt.Errorf("add post of approval %s at %s: %w", p.ApprovalID, p.Location, err)
	}
	return nil
}

func (db *DB) addPostTx(ctx context.Context, tx *sql.Tx, p gateway.ApprovalPost) error {
	_, err := db.txStmt(ctx, tx, db.stmts.insertPost).ExecContext(ctx, p.ApprovalID, p.Location, p.MessageID, p.OutboxID)
	return err
}

const (
	qInsertButton    = `INSERT INTO buttons (token, approval_id, action, created) VALUES (?, ?, ?, ?)`
	qInsertPost      = `INSERT INTO approval_posts (approval_id, location, message_id, outbox_id) VALUES (?, ?, ?, ?)`
	qApprovalPosts   = `SELECT approval_id, location, message_id, outbox_id FROM approval_posts WHERE approval_id = ? ORDER BY id`
	qApprovalButtons = `SELECT token, approval_id, action, created FROM buttons WHERE approval_id = ? ORDER BY created, token`
)

// ApprovalPosts returns the posts of an approval in the order they were
// added.
func (db *DB) ApprovalPosts(ctx context.Context, approvalID string) ([]gateway.ApprovalPost, error) {
	rows, err := db.stmts.approvalPosts.QueryContext(ctx, approvalID)
	if err != nil {
		return nil, fmt.Errorf("posts of approval %s: %w", approvalID, err)
	}
	defer rows.Close()
	var ps []gateway.ApprovalPost
	for rows.Next() {
		var p gateway.ApprovalPost
		if err := rows.Scan(&p.ApprovalID, &p.Location, &p.MessageID, &p.OutboxID); err != nil {
			return nil, fmt.Errorf("posts of approval %s: %w", approvalID, err)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("posts of approval %s: %w", approvalID, err)
	}
	return ps, nil
}
