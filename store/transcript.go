package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// EnsureAgent records the agent if it is not known yet.
func (db *DB) EnsureAgent(ctx context.Context, agentID string) error {
	if agentID == "" {
		return errors.New("ensure agent: empty agent id")
	}
	err := db.write(ctx, "EnsureAgent", func(tx *sql.Tx) error {
		return db.ensureAgent(ctx, tx, agentID)
	})
	if err != nil {
		return fmt.Errorf("ensure agent %s: %w", agentID, err)
	}
	return nil
}

func (db *DB) ensureAgent(ctx context.Context, tx *sql.Tx, agentID string) error {
	_, err := db.txStmt(ctx, tx, db.stmts.ensureAgent).ExecContext(ctx, agentID, nanos(now()))
	return err
}

// qInsertConversation stores a new conversation without its prompt.
const qInsertConversation = `INSERT INTO conversations
	(id, agent_id, created, updated, system_prompt, prompt_revision) VALUES (?, ?, ?, ?, '', '')`

// CreateConversation stores a new conversation (recording its agent if
// needed). c.ID and c.AgentID are required; Created and Updated default to
// now.
func (db *DB) CreateConversation(ctx context.Context, c agentcore.Conversation) error {
	if c.ID == "" || c.AgentID == "" {
		return fmt.Errorf("create conversation: id (%q) and agent id (%q) are required", c.ID, c.AgentID)
	}
	t := now()
	if c.Created.IsZero() {
		c.Created = t
	}
	if c.Updated.IsZero() {
		c.Updated = c.Created
	}
	err := db.write(ctx, "CreateConversation", func(tx *sql.Tx) error {
		if err := db.ensureAgent(ctx, tx, c.AgentID); err != nil {
			return err
		}
		_, err := db.txStmt(ctx, tx, db.stmts.insertConversation).ExecContext(ctx,
			c.ID, c.AgentID, nanos(c.Created), nanos(c.Updated))
		if isUnique(err) {
			return fmt.Errorf("conversation already exists: %w", err)
		}
		if err != nil || c.SystemPrompt == "" {
			return err
		}
		return db.setPromptTx(ctx, tx, c.ID, c.SystemPrompt, c.PromptRevision)
	})
	if err != nil {
		return fmt.Errorf("create conversation %s: %w", c.ID, err)
	}
	return nil
}

// conversationColumns are read FROM conversations c: the prompt text comes
// from the prompts table (rows written before it keep their own copy).
const conversationColumns = `c.id, c.agent_id, c.created, c.updated,
	CASE WHEN c.prompt_hash = '' THEN c.system_prompt
	     ELSE COALESCE((SELECT p.text FROM prompts p WHERE p.hash = c.prompt_hash), '') END,
	c.prompt_revision`

type scanner interface{ Scan(dest ...any) error }

func scanConversation(s scanner) (agentcore.Conversation, error) {
	var c agentcore.Conversation
	var created, updated int64
	if err := s.Scan(&c.ID, &c.AgentID, &created, &updated, &c.SystemPrompt, &c.PromptRevision); err != nil {
		return agentcore.Conversation{}, err
	}
	c.Created, c.Updated = fromNanos(created), fromNanos(updated)
	return c, nil
}

// Conversation returns the conversation with the given id, or ErrNotFound.
func (db *DB) Conversation(ctx context.Context, id string) (agentcore.Conversation, error) {
	c, err := scanConversation(db.stmts.conversation.QueryRowContext(pointRead(ctx), id))
	if errors.Is(err, sql.ErrNoRows) {
		return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return agentcore.Conversation{}, fmt.Errorf("conversation %s: %w", id, err)
	}
	return c, nil
}

// LatestConversation returns the agent's most recently updated
// conversation, or ErrNotFound. A task's child conversation is not one of
// the agent's conversations here (nor in ListConversations): people and
// --continue reach it only through its task.
func (db *DB) LatestConversation(ctx context.Context, agentID string) (agentcore.Conversation, error) {
	c, err := scanConversation(db.r.QueryRowContext(ctx,
		`SELECT `+conversationColumns+` FROM conversations c WHERE c.agent_id = ?
		 AND c.id NOT IN (SELECT conversation_id FROM tasks)
		 ORDER BY c.updated DESC, c.rowid DESC LIMIT 1`, agentID))
	if errors.Is(err, sql.ErrNoRows) {
		return agentcore.Conversation{}, fmt.Errorf("latest conversation of agent %s: %w", agentID, ErrNotFound)
	}
	if err != nil {
		return agentcore.Conversation{}, fmt.Errorf("latest conversation of agent %s: %w", agentID, err)
	}
	return c, nil
}

// ListConversations returns the agent's conversations, most recently
// updated first; limit <= 0 means all.
func (db *DB) ListConversations(ctx context.Context, agentID string, limit int) ([]agentcore.Conversation, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT `+conversationColumns+` FROM conversations c WHERE c.agent_id = ?
		 AND c.id NOT IN (SELECT conversation_id FROM tasks)
		 ORDER BY c.updated DESC, c.rowid DESC LIMIT ?`, agentID, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("list conversations of agent %s: %w", agentID, err)
	}
	defer rows.Close()
	var cs []agentcore.Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			return nil, fmt.Errorf("list conversations of agent %s: %w", agentID, err)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations of agent %s: %w", agentID, err)
	}
	return cs, nil
}

// SetSystemPrompt caches the compiled system prompt and the memory
// revision it was compiled from. The prompt is stored byte for byte, once
// for all conversations that share it (content-addressed, see prompts.go).
func (db *DB) SetSystemPrompt(ctx context.Context, conversationID, prompt, revision string) error {
	err := db.write(ctx, "SetSystemPrompt", func(tx *sql.Tx) error {
		return db.setPromptTx(ctx, tx, conversationID, prompt, revision)
	})
	if err != nil {
		return fmt.Errorf("set system prompt of conversation %s: %w", conversationID, err)
	}
	return nil
}

// mustAffect turns "no row changed" into ErrNotFound.
func mustAffect(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Append adds messages to the end of the transcript and of the in-context
// view in one transaction, assigning Seq (and ID and CreatedAt when
// empty), indexing their text for Search and bumping the conversation's
// update time. It returns the stored messages.
func (db *DB) Append(ctx context.Context, conversationID string, msgs ...agentcore.Message) ([]agentcore.Message, error) {
	batch, err := encodeMessages(conversationID, msgs, now())
	if err != nil {
		return nil, fmt.Errorf("append to conversation %s: %w", conversationID, err)
	}
	err = db.write(ctx, "Append", func(tx *sql.Tx) error {
		return db.appendTx(ctx, tx, conversationID, batch)
	})
	if err != nil {
		return nil, fmt.Errorf("append to conversation %s: %w", conversationID, err)
	}
	return batch.out, nil
}

// messageBatch is messages checked and encoded for appendTx, outside the
// writer (so that encoding never holds the write lock).
type messageBatch struct {
	t   time.Time
	out []agentcore.Message // Seq is set by appendTx
	enc []encodedMessage
}

type encodedMessage struct{ parts, calls, body string }

func encodeMessages(conversationID string, msgs []agentcore.Message, t time.Time) (messageBatch, error) {
	b := messageBatch{t: t, out: make([]agentcore.Message, len(msgs)), enc: make([]encodedMessage, len(msgs))}
	for i, m := range msgs {
		switch m.Role {
		case agentcore.RoleUser, agentcore.RoleAssistant, agentcore.RoleTool:
		default:
			return messageBatch{}, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
		if m.ConversationID != "" && m.ConversationID != conversationID {
			return messageBatch{}, fmt.Errorf("message %d belongs to conversation %s", i, m.ConversationID)
		}
		m.ConversationID = conversationID
		if m.ID == "" {
			m.ID = newID()
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = t
		} else {
			m.CreatedAt = m.CreatedAt.UTC()
		}
		parts, err := marshalList(m.Parts)
		if err != nil {
			return messageBatch{}, fmt.Errorf("message %d parts: %w", i, err)
		}
		calls, err := marshalList(m.ToolCalls)
		if err != nil {
			return messageBatch{}, fmt.Errorf("message %d tool calls: %w", i, err)
		}
		b.enc[i] = encodedMessage{parts: parts, calls: calls, body: searchText(m)}
		b.out[i] = m
	}
	return b, nil
}

// appendTx appends b in tx (see Append); ErrNotFound when the conversation
// does not exist.
func (db *DB) appendTx(ctx context.Context, tx *sql.Tx, conversationID string, b messageBatch) error {
	var lastSeq, lastPos int64
	err := db.txStmt(ctx, tx, db.stmts.appendHead).QueryRowContext(ctx, conversationID).Scan(&lastSeq, &lastPos)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	if len(b.out) == 0 {
		return nil
	}
	insMsg := db.txStmt(ctx, tx, db.stmts.insertMessage)
	insView := db.txStmt(ctx, tx, db.stmts.appendView)
	for i := range b.out {
		m := &b.out[i]
		m.Seq = lastSeq + int64(i) + 1
		res, err := insMsg.ExecContext(ctx, m.ID, conversationID, m.Seq, string(m.Role),
			b.enc[i].parts, b.enc[i].calls, m.Reasoning, m.ToolCallID, m.ToolName,
			m.IsError, m.RunID, nanos(m.CreatedAt), m.Outcome)
		if isUnique(err) {
			return fmt.Errorf("message id %s already stored: %w", m.ID, err)
		}
		if err != nil {
			return fmt.Errorf("insert message %s: %w", m.ID, err)
		}
		pk, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if b.enc[i].body != "" {
			// Indexed when the writer's transaction ends (indexLater).
			db.indexLater(pk, b.enc[i].body)
		}
		if _, err := insView.ExecContext(ctx, conversationID, lastPos+int64(i)+1, m.ID); err != nil {
			return fmt.Errorf("add message %s to view: %w", m.ID, err)
		}
	}
	_, err = db.txStmt(ctx, tx, db.stmts.touchConversation).ExecContext(ctx, nanos(b.t), conversationID)
	return err
}

// newID returns a random, time-ordered (UUIDv7) identifier.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// Only a failing system random source gets here; v4 fails the same
		// way, and a panic beats storing colliding ids.
		panic(fmt.Sprintf("store: generate id: %v", err))
	}
	return id.String()
}

// marshalList encodes a slice as JSON, nil as "[]".
func marshalList[T any](v []T) (string, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

const messageColumns = `m.id, m.conversation_id, m.seq, m.role, m.parts, m.tool_calls, m.reasoning,
	m.tool_call_id, m.tool_name, m.is_error, m.run_id, m.created, m.outcome`

// The transcript's hot statements (prepared at Open, see stmts).
const (
	qAppendHead = `SELECT
		COALESCE((SELECT MAX(seq) FROM messages WHERE conversation_id = c.id), 0),
		COALESCE((SELECT MAX(position) FROM view WHERE conversation_id = c.id), -1)
		FROM conversations c WHERE c.id = ?`
	qInsertMessage = `INSERT INTO messages
		(id, conversation_id, seq, role, parts, tool_calls, reasoning,
		 tool_call_id, tool_name, is_error, run_id, created, outcome)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// qViewAfter reads the view's rows after a position with the
	// conversation's view_epoch, in one statement, so that both come from
	// one snapshot (viewcache.go).
	qViewAfter = `SELECT (SELECT view_epoch FROM conversations WHERE id = ?1), v.position, ` + messageColumns + `
		FROM view v JOIN messages m ON m.id = v.message_id
		WHERE v.conversation_id = ?1 AND v.position > ?2 ORDER BY v.position`
	qMessagesAfter = `SELECT ` + messageColumns + ` FROM messages m
		WHERE m.conversation_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?`
)

// knownRole is role as one of the agentcore constants when it is one, so
// that a message read does not hold its own copy of the word.
func knownRole(role string) agentcore.Role {
	for _, r := range []agentcore.Role{agentcore.RoleUser, agentcore.RoleAssistant, agentcore.RoleTool} {
		if role == string(r) {
			return r
		}
	}
	return agentcore.Role(role)
}

func scanMessage(s scanner) (agentcore.Message, error) {
	var m agentcore.Message
	var role, parts, calls string
	var created int64
	if err := s.Scan(&m.ID, &m.ConversationID, &m.Seq, &role, &parts, &calls, &m.Reasoning,
		&m.ToolCallID, &m.ToolName, &m.IsError, &m.RunID, &created, &m.Outcome); err != nil {
		return agentcore.Message{}, err
	}
	m.Role = knownRole(role)
	m.CreatedAt = fromNanos(created)
	if parts != "[]" {
		if err := json.Unmarshal([]byte(parts), &m.Parts); err != nil {
			return agentcore.Message{}, fmt.Errorf("message %s parts: %w", m.ID, err)
		}
	}
	if calls != "[]" {
		if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
			return agentcore.Message{}, fmt.Errorf("message %s tool calls: %w", m.ID, err)
		}
	}
	return m, nil
}

// queryMessages runs a query selecting messageColumns. When it yields no
// rows it checks that the conversation exists, so that an unknown
// conversation is ErrNotFound rather than an empty transcript.
func (db *DB) queryMessages(ctx context.Context, conversationID string, st *sql.Stmt, args ...any) ([]agentcore.Message, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ms []agentcore.Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		if err := db.conversationExists(ctx, conversationID); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

func (db *DB) conversationExists(ctx context.Context, id string) error {
	var one int
	err := db.stmts.convExists.QueryRowContext(pointRead(ctx), id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// ReplaceView sets the in-context view (compaction) to the given message
// ids, in order. Every id must belong to the conversation and appear once.
func (db *DB) ReplaceView(ctx context.Context, conversationID string, ids []string) error {
	err := db.write(ctx, "ReplaceView", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, conversationID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		check, err := tx.PrepareContext(ctx, `SELECT conversation_id FROM messages WHERE id = ?`)
		if err != nil {
			return err
		}
		defer check.Close()
		var foreign []string
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if seen[id] {
				return fmt.Errorf("message id %s appears twice in the new view", id)
			}
			seen[id] = true
			var conv string
			err := check.QueryRowContext(ctx, id).Scan(&conv)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && conv != conversationID) {
				foreign = append(foreign, id)
				continue
			}
			if err != nil {
				return err
			}
		}
		if len(foreign) > 0 {
			return fmt.Errorf("message ids not in this conversation: %s: %w", strings.Join(foreign, ", "), ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM view WHERE conversation_id = ?`, conversationID); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO view (conversation_id, position, message_id) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i, id := range ids {
			if _, err := ins.ExecContext(ctx, conversationID, i, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace view of conversation %s: %w", conversationID, err)
	}
	return nil
}

// Messages pages through the whole transcript by Seq: messages with
// Seq > afterSeq, at most limit of them (limit <= 0: all).
func (db *DB) Messages(ctx context.Context, conversationID string, afterSeq int64, limit int) ([]agentcore.Message, error) {
	ms, err := db.queryMessages(ctx, conversationID, db.stmts.messagesAfter,
		conversationID, afterSeq, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("messages of conversation %s: %w", conversationID, err)
	}
	return ms, nil
}
