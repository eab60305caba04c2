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

// DecideAndResume is the one decide path's transaction (gateway.Deciding):
// the decision, the Always rule, the edits of every posted copy and — when
// it was the conversation's last pending ask — the resume item commit
// together, or not at all.
func (db *DB) DecideAndResume(ctx context.Context, approvalID string, d agentcore.Decision, edit func(agentcore.Approval) []byte, resume gateway.Item) (agentcore.Approval, bool, bool, error) {
	switch d.State {
	case agentcore.ApprovalAllowed, agentcore.ApprovalAlways, agentcore.ApprovalDenied, agentcore.ApprovalExpired:
	default:
		return agentcore.Approval{}, false, false, fmt.Errorf("decide approval %s: %q is not a decision", approvalID, d.State)
	}
	if d.At.IsZero() {
		d.At = now()
	}
	var (
		ap      agentcore.Approval
		decided bool
		resumed bool
	)
	err := db.write(ctx, "DecideAndResume", func(tx *sql.Tx) error {
		resumed = false
		var err error
		ap, decided, err = db.decideTx(ctx, tx, approvalID, d)
		if err != nil || !decided {
			return err
		}
		if err := db.step("decided"); err != nil {
			return err
		}
		t := now()
		if edit != nil {
			if err := db.editPosts(ctx, tx, ap, edit(ap), t); err != nil {
				return err
			}
			if err := db.step("edits"); err != nil {
				return err
			}
		}
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM approvals WHERE conversation_id = ? AND state = ?`,
			ap.ConversationID, string(agentcore.ApprovalPending)).Scan(&pending); err != nil {
			return fmt.Errorf("count pending approvals: %w", err)
		}
		if pending > 0 {
			return nil
		}
		it := resume
		it.ConversationID, it.AgentID = ap.ConversationID, ap.AgentID
		if it.Kind == "" {
			it.Kind = gateway.ItemResume
		}
		if it.Location == "" {
			it.Location = ap.Location
		}
		if it.Location == "" {
			err := tx.QueryRowContext(ctx, `SELECT location FROM bindings WHERE conversation_id = ?
				ORDER BY created DESC, location DESC LIMIT 1`, ap.ConversationID).Scan(&it.Location)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("find where to resume: %w", err)
			}
		}
		if it.Location == "" {
			return nil // nowhere to resume: the next message continues the turn
		}
		if _, err := db.insertItem(ctx, tx, it, t); err != nil {
			return fmt.Errorf("queue the resume: %w", err)
		}
		if err := db.step("resume"); err != nil {
			return err
		}
		resumed = true
		return nil
	})
	if err != nil {
		return agentcore.Approval{}, false, false, fmt.Errorf("decide approval %s: %w", approvalID, err)
	}
	return ap, decided, resumed, nil
}

// ApprovalButtons returns the button tokens of an approval, in creation
// order (surfaces that reopen a conversation show its pending asks with
// working buttons).
func (db *DB) ApprovalButtons(ctx context.Context, approvalID string) ([]gateway.Button, error) {
	rows, err := db.stmts.approvalButtons.QueryContext(ctx, approvalID)
	if err != nil {
		return nil, fmt.Errorf("buttons of approval %s: %w", approvalID, err)
	}
	defer rows.Close()
	var out []gateway.Button
	for rows.Next() {
		var b gateway.Button
		var action string
		var created int64
		if err := rows.Scan(&b.Token, &b.ApprovalID, &action, &created); err != nil {
			return nil, fmt.Errorf("buttons of approval %s: %w", approvalID, err)
		}
		b.Action, b.Created = gateway.ButtonAction(action), fromNanos(created)
		out = append(out, b)
	}
	return out, rows.Err()
}

// PostApproval stores an approval's buttons, the outbox items that post it
// and the record of each post in ONE transaction (gateway.Buttons), so a
// crash can never leave a posted ask the gateway does not know it posted
// (it would post it again with new buttons). It returns the items' ids.
func (db *DB) PostApproval(ctx context.Context, bs []gateway.Button, posts []gateway.Outbound) ([]int64, error) {
	if len(bs) == 0 {
		return nil, errors.New("post approval: no buttons")
	}
	if err := checkOutbound(posts); err != nil {
		return nil, fmt.Errorf("post approval %s: %w", bs[0].ApprovalID, err)
	}
	var ids []int64
	err := db.write(ctx, "PostApproval", func(tx *sql.Tx) error {
		t := now()
		for i, b := range bs {
			if b.Token == "" || b.ApprovalID == "" || b.Action == "" {
				return fmt.Errorf("button %d needs a token, approval id and action", i)
			}
			created := b.Created
			if created.IsZero() {
				created = t
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO buttons (token, approval_id, action, created) VALUES (?, ?, ?, ?)`,
				b.Token, b.ApprovalID, string(b.Action), nanos(created)); err != nil {
				return fmt.Errorf("button %d: %w", i, err)
			}
		}
		var err error
		if ids, err = db.insertOutbound(ctx, tx, posts, t); err != nil {
			return err
		}
		for i, p := range posts {
			if _, err := tx.ExecContext(ctx, `INSERT INTO approval_posts (approval_id, location, message_id, outbox_id)
				VALUES (?, ?, '', ?)`, bs[0].ApprovalID, p.Location, ids[i]); err != nil {
				return fmt.Errorf("record post %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("post approval %s: %w", bs[0].ApprovalID, err)
	}
	return ids, nil
}

// editPosts queues an edit of every posted copy of an approval to body.
func (db *DB) editPosts(ctx context.Context, tx *sql.Tx, ap agentcore.Approval, body []byte, t time.Time) error {
	rows, err := tx.QueryContext(ctx, `SELECT location, outbox_id, message_id FROM approval_posts
		WHERE approval_id = ? ORDER BY id`, ap.ID)
	if err != nil {
		return fmt.Errorf("read approval posts: %w", err)
	}
	var edits []gateway.Outbound
	for rows.Next() {
		var o gateway.Outbound
		if err := rows.Scan(&o.Location, &o.EditOf, &o.MessageID); err != nil {
			rows.Close()
			return fmt.Errorf("read approval posts: %w", err)
		}
		o.Kind, o.Body = gateway.OutboundEdit, body
		edits = append(edits, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read approval posts: %w", err)
	}
	_, err = db.insertOutbound(ctx, tx, edits, t)
	return err
}

// SetDecisionEdit makes every decision recorded through the agent core's
// Decide (the harness settling an ask: a new message came, it expired)
// also queue the edits of the approval's posted copies, in the same
// transaction (gateway.DecisionEditor). The gateway sets it at start.
func (db *DB) SetDecisionEdit(edit func(agentcore.Approval) []byte) { db.decisionEdit.Store(&edit) }
