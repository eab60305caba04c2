package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The leases' statements (prepared at Open, see stmts).
const (
	qAcquireLease = `INSERT INTO leases (conversation_id, owner, expires)
		VALUES (?, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE
		SET owner = excluded.owner, expires = excluded.expires
		WHERE leases.owner = excluded.owner OR leases.expires <= ?`
	qRenewLease   = `UPDATE leases SET expires = ? WHERE conversation_id = ? AND owner = ?`
	qReleaseLease = `DELETE FROM leases WHERE conversation_id = ? AND owner = ?`
)

// Lease expiry is judged by the clock of the process that asks; the
// processes sharing a data directory share a machine and so a clock.

// AcquireLease gives owner the right to work the conversation for ttl. It
// succeeds when nobody holds the lease, when the holder's lease has expired,
// or when owner already holds it (the lease is then extended). It reports
// false, without error, when another owner holds a live lease.
func (db *DB) AcquireLease(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("acquire lease on conversation %s: empty owner", conversationID)
	}
	var ok bool
	err := db.write(ctx, "AcquireLease", func(tx *sql.Tx) error {
		t := now()
		res, err := db.txStmt(ctx, tx, db.stmts.acquireLease).ExecContext(ctx,
			conversationID, owner, nanos(t.Add(ttl)), nanos(t))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("acquire lease on conversation %s for %s: %w", conversationID, owner, err)
	}
	return ok, nil
}

// RenewLease extends owner's lease by ttl from now. It reports false when
// owner does not hold the lease (it was released, or taken by another
// owner after it expired).
func (db *DB) RenewLease(ctx context.Context, conversationID, owner string, ttl time.Duration) (bool, error) {
	var ok bool
	err := db.write(ctx, "RenewLease", func(tx *sql.Tx) error {
		res, err := db.txStmt(ctx, tx, db.stmts.renewLease).ExecContext(ctx,
			nanos(now().Add(ttl)), conversationID, owner)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("renew lease on conversation %s for %s: %w", conversationID, owner, err)
	}
	return ok, nil
}

// ReleaseLease gives up owner's lease. Releasing a lease owner does not
// hold is a no-op.
func (db *DB) ReleaseLease(ctx context.Context, conversationID, owner string) error {
	err := db.write(ctx, "ReleaseLease", func(tx *sql.Tx) error {
		_, err := db.txStmt(ctx, tx, db.stmts.releaseLease).ExecContext(ctx, conversationID, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease on conversation %s for %s: %w", conversationID, owner, err)
	}
	return nil
}

// LeaseOwners returns the distinct owners of every lease (conversations
// and host sessions), for the start-up sweep of a crashed process's leases.
func (db *DB) LeaseOwners(ctx context.Context) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT DISTINCT owner FROM leases`)
	if err != nil {
		return nil, fmt.Errorf("lease owners: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("lease owners: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// DropLeasesOf deletes every lease of owner (a process known to be dead),
// so its conversations are worked at once instead of after the leases
// expire.
func (db *DB) DropLeasesOf(ctx context.Context, owner string) (int64, error) {
	var n int64
	err := db.write(ctx, "DropLeasesOf", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE owner = ?`, owner)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("drop leases of %s: %w", owner, err)
	}
	return n, nil
}
