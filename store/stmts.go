package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are the hot statements, prepared once at Open so that no call
// parses SQL again. The writer's statements are prepared on its single
// connection; transactions use them through Tx.StmtContext, which reuses
// the prepared statement. The read statements are prepared on the read
// pool (database/sql prepares them on each pool connection once, as the
// connection first runs them).
type stmts struct {
	// writer: transcript
	appendHead        *sql.Stmt
	insertMessage     *sql.Stmt
	indexMessage      *sql.Stmt
	appendView        *sql.Stmt
	touchConversation *sql.Stmt
	insertPrompt      *sql.Stmt
	setPrompt         *sql.Stmt
	insertApproval    *sql.Stmt
	holdsLease        *sql.Stmt
	insertButton      *sql.Stmt
	insertPost        *sql.Stmt
	upsertSetting     *sql.Stmt
	deleteSetting     *sql.Stmt
	// writer: gateway queue and outbox
	purgeDedupe    *sql.Stmt
	claimDedupe    *sql.Stmt
	insertItem     *sql.Stmt
	takeItem       *sql.Stmt
	takeQueued     *sql.Stmt
	completeItem   *sql.Stmt
	bind           *sql.Stmt
	insertOutbound *sql.Stmt
	markSent       *sql.Stmt
	retryOutbound  *sql.Stmt
	// writer: leases and runs
	acquireLease *sql.Stmt
	renewLease   *sql.Stmt
	releaseLease *sql.Stmt
	startRun     *sql.Stmt
	finishRun    *sql.Stmt
	markTool     *sql.Stmt
	// writer: a chat's first message (EnqueueNew) and the dedupe key's item
	ensureAgent        *sql.Stmt
	insertConversation *sql.Stmt
	bindingForUpdate   *sql.Stmt
	keyItem            *sql.Stmt
	seenKeyItem        *sql.Stmt
	// writer: a grouped request's savepoint (see runOnce)
	savepoint         *sql.Stmt
	releaseSavepoint  *sql.Stmt
	rollbackSavepoint *sql.Stmt

	// read pool
	binding         *sql.Stmt
	conversation    *sql.Stmt
	viewAfter       *sql.Stmt
	viewEpoch       *sql.Stmt
	messagesAfter   *sql.Stmt
	convExists      *sql.Stmt
	listRuns        *sql.Stmt
	startedToolCall *sql.Stmt
	recentRuns      *sql.Stmt
	dueOutbound     *sql.Stmt
	peekItem        *sql.Stmt
	outboundItem    *sql.Stmt
	outboundSent    *sql.Stmt
	paired          *sql.Stmt
	settings        *sql.Stmt
	settingsVersion *sql.Stmt
	approvalPosts   *sql.Stmt
	approvalButtons *sql.Stmt
	agentRules      *sql.Stmt
	callApprovals   *sql.Stmt
	taskByID        *sql.Stmt
	taskOfConv      *sql.Stmt
	isTaskConv      *sql.Stmt

	all []*sql.Stmt
}

func (s *stmts) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, p := range []struct {
		db    *sql.DB
		dst   **sql.Stmt
		query string
	}{
		{w, &s.appendHead, qAppendHead},
		{w, &s.insertMessage, qInsertMessage},
		{w, &s.indexMessage, `INSERT INTO messages_fts (rowid, body) VALUES (?, ?)`},
		{w, &s.appendView, `INSERT INTO view (conversation_id, position, message_id) VALUES (?, ?, ?)`},
		{w, &s.touchConversation, `UPDATE conversations SET updated = MAX(updated, ?) WHERE id = ?`},
		{w, &s.insertPrompt, qInsertPrompt},
		{w, &s.setPrompt, qSetPrompt},
		{w, &s.insertApproval, qInsertApproval},
		{w, &s.holdsLease, `SELECT 1 FROM leases WHERE conversation_id = ? AND owner = ?`},
		{w, &s.insertButton, qInsertButton},
		{w, &s.insertPost, qInsertPost},
		{w, &s.upsertSetting, qUpsertSetting},
		{w, &s.deleteSetting, `DELETE FROM settings WHERE scope = ? AND key = ?`},
		{w, &s.purgeDedupe, qPurgeDedupe},
		{w, &s.claimDedupe, qClaimDedupe},
		{w, &s.insertItem, qInsertItem},
		{w, &s.takeItem, qTakeItem},
		{w, &s.takeQueued, qTakeQueued},
		{r, &s.peekItem, qPeekItem},
		{w, &s.completeItem, qCompleteItem},
		{w, &s.bind, qBind},
		{w, &s.insertOutbound, qInsertOutbound},
		{w, &s.markSent, qMarkSent},
		{w, &s.retryOutbound, qRetryOutbound},
		{w, &s.acquireLease, qAcquireLease},
		{w, &s.renewLease, qRenewLease},
		{w, &s.releaseLease, qReleaseLease},
		{w, &s.startRun, qStartRun},
		{w, &s.finishRun, qFinishRun},
		{w, &s.markTool, qMarkToolStarted},
		{w, &s.ensureAgent, `INSERT INTO agents (id, created) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`},
		{w, &s.insertConversation, qInsertConversation},
		{w, &s.bindingForUpdate, qBinding},
		{w, &s.keyItem, `UPDATE dedupe SET item_id = ? WHERE key = ?`},
		{w, &s.seenKeyItem, `SELECT item_id FROM dedupe WHERE key = ?`},
		{w, &s.savepoint, `SAVEPOINT w`},
		{w, &s.releaseSavepoint, `RELEASE w`},
		{w, &s.rollbackSavepoint, `ROLLBACK TO w`},

		{r, &s.binding, qBinding},
		{r, &s.conversation, `SELECT ` + conversationColumns + ` FROM conversations c WHERE c.id = ?`},
		{r, &s.viewAfter, qViewAfter},
		{r, &s.viewEpoch, `SELECT view_epoch FROM conversations WHERE id = ?`},
		{r, &s.messagesAfter, qMessagesAfter},
		{r, &s.convExists, `SELECT 1 FROM conversations WHERE id = ?`},
		{r, &s.listRuns, qListRuns},
		{r, &s.recentRuns, qRecentRuns},
		{r, &s.startedToolCall, `SELECT 1 FROM tool_started WHERE conversation_id = ? AND tool_call_id = ?`},
		{r, &s.dueOutbound, qDueOutbound},
		{r, &s.outboundItem, `SELECT ` + outboundColumns + ` FROM outbox WHERE id = ?`},
		{r, &s.outboundSent, `SELECT sent FROM outbox WHERE id = ?`},
		{r, &s.paired, `SELECT COUNT(*) FROM paired_users WHERE channel = ? AND user_id = ?`},
		{r, &s.settings, `SELECT key, value FROM settings WHERE scope = ?`},
		{r, &s.settingsVersion, `SELECT n FROM settings_version WHERE id = 1`},
		{r, &s.approvalPosts, qApprovalPosts},
		{r, &s.approvalButtons, qApprovalButtons},
		{r, &s.agentRules, `SELECT rule FROM agent_rules WHERE agent_id = ? ORDER BY created, rowid`},
		{r, &s.callApprovals, `SELECT ` + approvalColumns + ` FROM approvals WHERE conversation_id = ? AND tool_call_id = ? ORDER BY created, rowid`},
		{r, &s.taskByID, `SELECT ` + taskColumns + ` FROM tasks WHERE id = ?`},
		{r, &s.taskOfConv, `SELECT ` + taskColumns + ` FROM tasks WHERE conversation_id = ?`},
		{r, &s.isTaskConv, `SELECT 1 FROM tasks WHERE conversation_id = ?`},
	} {
		st, err := p.db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}

// txStmts memoizes the writer transaction's forms of the prepared
// statements. Tx.StmtContext makes a new statement on every call and
// registers it with the pool (a map entry per call, released at commit):
// a grouped transaction of a hundred turns made a thousand of them, and
// the pool's maps kept the size of the largest group.
type txStmts struct {
	tx *sql.Tx
	m  map[*sql.Stmt]*sql.Stmt
}

// txStmt returns st's form in the writer's transaction tx, made once per
// transaction. Only the writer goroutine calls it (from write functions).
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	t := &db.txStmts
	if t.tx != tx {
		t.reset()
		t.tx = tx
	}
	if s, ok := t.m[st]; ok {
		return s
	}
	if t.m == nil {
		t.m = make(map[*sql.Stmt]*sql.Stmt, 16)
	}
	s := tx.StmtContext(ctx, st)
	t.m[st] = s
	return s
}

// reset forgets the transaction's statements (it ended: they are closed).
func (t *txStmts) reset() {
	t.tx = nil
	clear(t.m)
}
