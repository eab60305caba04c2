package store

import (
	"context"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// ExpiredApprovals returns pending approvals whose expiry has passed at
// now, oldest first (the gateway's expiry sweeper).
func (db *DB) ExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]agentcore.Approval, error) {
	if limit <= 0 {
		limit = 100
	}
	return db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE state = ? AND expires > 0 AND expires <= ? ORDER BY expires LIMIT ?`,
		string(agentcore.ApprovalPending), nanos(now), limit)
}
