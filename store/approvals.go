package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// CreateApprovals stores the approvals of one step in one transaction.
// Each needs an ID and a ConversationID; State defaults to pending and
// Created to now.
func (db *DB) CreateApprovals(ctx context.Context, as []agentcore.Approval) error {
	if len(as) == 0 {
		return nil
	}
	rows, err := encodeApprovals(as, now())
	if err != nil {
		return fmt.Errorf("create approvals: %w", err)
	}
	err = db.write(ctx, "CreateApprovals", func(tx *sql.Tx) error {
		return db.createApprovalsTx(ctx, tx, rows)
	})
	if err != nil {
		return fmt.Errorf("create approvals: %w", err)
	}
	return nil
}

const qInsertApproval = `INSERT INTO approvals
	(id, conversation_id, agent_id, tool_call_id, tool_name, arguments, summary, reason,
	 rule, workdir, diff, requester, approvers, state, decision_reason, decided_by,
	 created, expires, decided, location, task_id, task_type)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// approvalRow is an approval checked and encoded for createApprovalsTx.
type approvalRow struct {
	a         agentcore.Approval
	approvers string
}

func encodeApprovals(as []agentcore.Approval, t time.Time) ([]approvalRow, error) {
	rows := make([]approvalRow, len(as))
	for i, a := range as {
		if a.ID == "" || a.ConversationID == "" {
			return nil, fmt.Errorf("approval %d needs an id (%q) and a conversation id (%q)", i, a.ID, a.ConversationID)
		}
		if a.State == "" {
			a.State = agentcore.ApprovalPending
		}
		if a.Created.IsZero() {
			a.Created = t
		}
		approvers, err := marshalList(a.Approvers)
		if err != nil {
			return nil, fmt.Errorf("approval %s: approvers: %w", a.ID, err)
		}
		rows[i] = approvalRow{a, approvers}
	}
	return rows, nil
}

func (db *DB) createApprovalsTx(ctx context.Context, tx *sql.Tx, rows []approvalRow) error {
	ins := db.txStmt(ctx, tx, db.stmts.insertApproval)
	for _, r := range rows {
		a := r.a
		_, err := ins.ExecContext(ctx, a.ID, a.ConversationID, a.AgentID, a.ToolCallID,
			a.ToolName, a.Arguments, a.Summary, a.Reason, a.Rule, a.Workdir, a.Diff,
			a.Requester, r.approvers, string(a.State), a.DecisionReason, a.DecidedBy,
			nanos(a.Created), nanos(a.Expires), nanos(a.Decided), a.Location, a.TaskID, a.TaskType)
		if isForeignKey(err) {
			return fmt.Errorf("approval %s: conversation %s: %w", a.ID, a.ConversationID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("approval %s: %w", a.ID, err)
		}
	}
	return nil
}

const approvalColumns = `id, conversation_id, agent_id, tool_call_id, tool_name, arguments,
	summary, reason, rule, workdir, diff, requester, approvers, state, decision_reason,
	decided_by, created, expires, decided, location, task_id, task_type`

func scanApproval(s scanner) (agentcore.Approval, error) {
	var a agentcore.Approval
	var approvers, state string
	var created, expires, decided int64
	if err := s.Scan(&a.ID, &a.ConversationID, &a.AgentID, &a.ToolCallID, &a.ToolName,
		&a.Arguments, &a.Summary, &a.Reason, &a.Rule, &a.Workdir, &a.Diff, &a.Requester,
		&approvers, &state, &a.DecisionReason, &a.DecidedBy, &created, &expires, &decided, &a.Location, &a.TaskID, &a.TaskType); err != nil {
		return agentcore.Approval{}, err
	}
	a.State = agentcore.ApprovalState(state)
	a.Created, a.Expires, a.Decided = fromNanos(created), fromNanos(expires), fromNanos(decided)
	if approvers != "[]" {
		if err := json.Unmarshal([]byte(approvers), &a.Approvers); err != nil {
			return agentcore.Approval{}, fmt.Errorf("approval %s approvers: %w", a.ID, err)
		}
	}
	return a, nil
}

// Approval returns the approval with the given id, or ErrNotFound.
func (db *DB) Approval(ctx context.Context, id string) (agentcore.Approval, error) {
	a, err := scanApproval(db.r.QueryRowContext(ctx,
		`SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if err != nil {
		return agentcore.Approval{}, fmt.Errorf("approval %s: %w", id, errNoRows(err))
	}
	return a, nil
}

func (db *DB) queryApprovals(ctx context.Context, query string, args ...any) ([]agentcore.Approval, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var as []agentcore.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	return as, rows.Err()
}

// ConversationApprovals returns the approvals of the given tool calls (all
// of the conversation's when callIDs is empty), keyed by tool call id.
// Should a call have several approvals, the latest created wins.
func (db *DB) ConversationApprovals(ctx context.Context, conversationID string, callIDs []string) (map[string]agentcore.Approval, error) {
	var as []agentcore.Approval
	if len(callIDs) == 0 {
		var err error
		as, err = db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE conversation_id = ? ORDER BY created, rowid`, conversationID)
		if err != nil {
			return nil, fmt.Errorf("approvals of conversation %s: %w", conversationID, err)
		}
	}
	// Point lookups by a prepared statement (a step asks about its own few
	// calls, twice): in created order per call, so the latest wins below.
	for _, id := range callIDs {
		rows, err := db.stmts.callApprovals.QueryContext(pointRead(ctx), conversationID, id)
		if err != nil {
			return nil, fmt.Errorf("approvals of conversation %s: %w", conversationID, err)
		}
		for rows.Next() {
			a, err := scanApproval(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("approvals of conversation %s: %w", conversationID, err)
			}
			as = append(as, a)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("approvals of conversation %s: %w", conversationID, err)
		}
	}
	byCall := make(map[string]agentcore.Approval, len(as))
	for _, a := range as {
		byCall[a.ToolCallID] = a
	}
	return byCall, nil
}

// PendingApprovals returns the conversation's undecided approvals, oldest
// first.
func (db *DB) PendingApprovals(ctx context.Context, conversationID string) ([]agentcore.Approval, error) {
	as, err := db.queryApprovals(ctx, `SELECT `+approvalColumns+` FROM approvals
		WHERE conversation_id = ? AND state = ? ORDER BY created, rowid`,
		conversationID, string(agentcore.ApprovalPending))
	if err != nil {
		return nil, fmt.Errorf("pending approvals of conversation %s: %w", conversationID, err)
	}
	return as, nil
}

// Decide records a decision if the approval is still pending and returns
// the updated record with decided=true; otherwise (already decided, by
// someone else or earlier) it returns the record unchanged with
// decided=false. For ApprovalAlways the approval's Rule is added to the
// agent's rules in the same transaction. d.At defaults to now.
func (db *DB) Decide(ctx context.Context, id string, d agentcore.Decision) (agentcore.Approval, bool, error) {
	switch d.State {
	case agentcore.ApprovalAllowed, agentcore.ApprovalAlways, agentcore.ApprovalDenied, agentcore.ApprovalExpired:
	default:
		return agentcore.Approval{}, false, fmt.Errorf("decide approval %s: %q is not a decision", id, d.State)
	}
	if d.At.IsZero() {
		d.At = now()
	}
	var a agentcore.Approval
	var decided bool
	err := db.write(ctx, "Decide", func(tx *sql.Tx) error {
		var err error
		a, decided, err = db.decideTx(ctx, tx, id, d)
		if err != nil || !decided {
			return err
		}
		if edit := db.decisionEdit.Load(); edit != nil && *edit != nil {
			return db.editPosts(ctx, tx, a, (*edit)(a), now())
		}
		return nil
	})
	if err != nil {
		return agentcore.Approval{}, false, fmt.Errorf("decide approval %s: %w", id, err)
	}
	return a, decided, nil
}

// decideTx records d inside tx (see Decide).
func (db *DB) decideTx(ctx context.Context, tx *sql.Tx, id string, d agentcore.Decision) (agentcore.Approval, bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE approvals
		SET state = ?, decision_reason = ?, decided_by = ?, decided = ?
		WHERE id = ? AND state = ?`,
		string(d.State), d.Reason, d.By, nanos(d.At), id, string(agentcore.ApprovalPending))
	if err != nil {
		return agentcore.Approval{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return agentcore.Approval{}, false, err
	}
	decided := n == 1
	a, err := scanApproval(tx.QueryRowContext(ctx,
		`SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if err != nil {
		return agentcore.Approval{}, false, errNoRows(err)
	}
	if decided && d.State == agentcore.ApprovalAlways && a.Rule != "" {
		if _, err := tx.ExecContext(ctx, `INSERT INTO agent_rules (agent_id, rule, created)
			VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, a.AgentID, a.Rule, nanos(d.At)); err != nil {
			return agentcore.Approval{}, false, fmt.Errorf("add rule %q: %w", a.Rule, err)
		}
	}
	return a, decided, nil
}

// AgentRules returns the rules added by "Always" decisions, oldest first.
func (db *DB) AgentRules(ctx context.Context, agentID string) ([]string, error) {
	rows, err := db.stmts.agentRules.QueryContext(ctx, agentID)
	if err != nil {
		return nil, fmt.Errorf("rules of agent %s: %w", agentID, err)
	}
	defer rows.Close()
	var rules []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("rules of agent %s: %w", agentID, err)
		}
		rules = append(rules, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rules of agent %s: %w", agentID, err)
	}
	return rules, nil
}
