-- 0008: identical system prompts are stored once, and buttons are found by
-- their approval without a scan. A conversation names its
-- compiled prompt by the hex SHA-256 of the text (prompt_hash); the text
-- lives in prompts, one row per distinct prompt, however many conversations
-- share it (a 2.6 KB preset was stored again for every conversation). The
-- existing prompts move there in the same transaction (a Go step of this
-- migration, see store/prompts.go), and system_prompt is emptied.

CREATE TABLE prompts (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL
) STRICT, WITHOUT ROWID;

ALTER TABLE conversations ADD COLUMN prompt_hash TEXT NOT NULL DEFAULT '';

-- Buttons are looked up by their approval (ApprovalButtons: history's
-- cards, the Stop button a conversation reuses): without an index each
-- lookup read every button ever made.
CREATE INDEX buttons_by_approval ON buttons(approval_id);
