package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/gateway"
)

var _ gateway.Pruner = (*DB)(nil)

// PruneDelivered deletes work that is finished and older than before: queue
// items done before it, outbox items created before it that were sent (or
// given up) — except those an approval post still names, whose message may
// yet be edited — and expired dedupe keys. Transcripts, approvals and
// bindings are never pruned.
func (db *DB) PruneDelivered(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, "PruneDelivered", func(tx *sql.Tx) error {
		n = 0
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM queue WHERE state = 'done' AND finished > 0 AND finished < ?`, []any{nanos(before)}},
			{`DELETE FROM outbox WHERE sent = 1 AND created < ?
				AND id NOT IN (SELECT outbox_id FROM approval_posts WHERE outbox_id > 0)`, []any{nanos(before)}},
			{`DELETE FROM dedupe WHERE expires < ?`, []any{nanos(time.Now())}},
		} {
			res, err := tx.ExecContext(ctx, q.sql, q.args...)
			if err != nil {
				return err
			}
			c, _ := res.RowsAffected()
			n += c
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune delivered work: %w", err)
	}
	return n, nil
}
