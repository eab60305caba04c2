package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// System prompts are content-addressed: conversations.prompt_hash is the hex
// SHA-256 of the text, stored once in prompts (migrations/0008_prompts.sql).
// A prompt that no conversation names any more stays (there are few: one
// per agent and memory revision).

func promptHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// setPromptTx points a conversation at prompt (stored if new) and records
// the revision; ErrNotFound when the conversation does not exist. An empty
// prompt clears it.
func (db *DB) setPromptTx(ctx context.Context, tx *sql.Tx, conversationID, prompt, revision string) error {
	hash := ""
	if prompt != "" {
		hash = promptHash(prompt)
		if _, err := db.txStmt(ctx, tx, db.stmts.insertPrompt).ExecContext(ctx, hash, prompt); err != nil {
			return fmt.Errorf("store prompt: %w", err)
		}
	}
	res, err := db.txStmt(ctx, tx, db.stmts.setPrompt).ExecContext(ctx, hash, revision, conversationID)
	if err != nil {
		return err
	}
	return mustAffect(res)
}

const (
	qInsertPrompt = `INSERT INTO prompts (hash, text) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING`
	qSetPrompt    = `UPDATE conversations SET system_prompt = '', prompt_hash = ?, prompt_revision = ? WHERE id = ?`
)

// movePrompts is the Go step of migration 0008: every conversation's own
// copy of its prompt moves to the prompts table.
func movePrompts(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, system_prompt FROM conversations WHERE system_prompt != ''`)
	if err != nil {
		return err
	}
	type conv struct{ id, prompt string }
	var convs []conv
	for rows.Next() {
		var c conv
		if err := rows.Scan(&c.id, &c.prompt); err != nil {
			rows.Close()
			return err
		}
		convs = append(convs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range convs {
		hash := promptHash(c.prompt)
		if _, err := tx.ExecContext(ctx, qInsertPrompt, hash, c.prompt); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET system_prompt = '', prompt_hash = ? WHERE id = ?`, hash, c.id); err != nil {
			return err
		}
	}
	return nil
}
