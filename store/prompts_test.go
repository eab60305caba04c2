package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-gw/switchboard/agentcore"
)

// TestPromptStoredOnce: a thousand conversations with the same prompt hold
// one copy of its text.
func TestPromptStoredOnce(t *testing.T) {
	db := openTemp(t, filepath.Join(t.TempDir(), "p.db"))
	ctx := context.Background()
	prompt := strings.Repeat("You are a helpful agent. ", 100)
	for i := range 1000 {
		id := "c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if err := db.CreateConversation(ctx, agentcore.Conversation{ID: id, AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
		if err := db.SetSystemPrompt(ctx, id, prompt, "r"); err != nil {
			t.Fatal(err)
		}
	}
	var rows, bytes int
	if err := db.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(length(text)), 0) FROM prompts`).Scan(&rows, &bytes); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || bytes != len(prompt) {
		t.Errorf("prompts: %d rows, %d bytes; want 1 row of %d", rows, bytes, len(prompt))
	}
	var inline int
	if err := db.r.QueryRow(`SELECT COALESCE(SUM(length(system_prompt)), 0) FROM conversations`).Scan(&inline); err != nil || inline != 0 {
		t.Errorf("conversations still hold %d bytes of prompts (%v)", inline, err)
	}
}

// TestPromptMigrationMovesPrompts applies 0008 to a database whose
// conversations hold their own prompts: each reads back the same text,
// stored once.
func TestPromptMigrationMovesPrompts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db := openTemp(t, path)
	ctx := context.Background()
	for _, id := range []string{"c1", "c2", "c3"} {
		if err := db.CreateConversation(ctx, agentcore.Conversation{ID: id, AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	// Back to schema 7, with the prompts inline as 0007 stored them
	// (0009 undone first).
	for _, q := range []string{
		`DELETE FROM schema_migrations WHERE name LIKE '%_read_caches.sql'`,
		`DROP TRIGGER view_epoch_on_delete`,
		`DROP TRIGGER view_epoch_on_update`,
		`DROP TRIGGER settings_version_on_insert`,
		`DROP TRIGGER settings_version_on_update`,
		`DROP TRIGGER settings_version_on_delete`,
		`DROP TABLE settings_version`,
		`ALTER TABLE conversations DROP COLUMN view_epoch`,
		`DELETE FROM schema_migrations WHERE name LIKE '%_prompts.sql'`,
		`DROP TABLE prompts`,
		`DROP INDEX buttons_by_approval`,
		`ALTER TABLE conversations DROP COLUMN prompt_hash`,
		`UPDATE conversations SET system_prompt = 'old prompt', prompt_revision = 'r0' WHERE id IN ('c1', 'c2')`,
		`UPDATE conversations SET system_prompt = 'other prompt' WHERE id = 'c3'`,
	} {
		if _, err := db.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	db = openTemp(t, path)
	for id, want := range map[string]string{"c1": "old prompt", "c2": "old prompt", "c3": "other prompt"} {
		c, err := db.Conversation(ctx, id)
		if err != nil || c.SystemPrompt != want {
			t.Errorf("Conversation(%s).SystemPrompt = %q, %v; want %q", id, c.SystemPrompt, err, want)
		}
	}
	var rows, inline int
	if err := db.r.QueryRow(`SELECT (SELECT COUNT(*) FROM prompts), (SELECT COALESCE(SUM(length(system_prompt)), 0) FROM conversations)`).Scan(&rows, &inline); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || inline != 0 {
		t.Errorf("after the migration: %d prompts, %d bytes inline; want 2 and 0", rows, inline)
	}
}
