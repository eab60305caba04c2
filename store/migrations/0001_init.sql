-- 0001: agents, conversations, the append-only transcript and its full-text
-- index, the in-context view, runs, the tool ledger, approvals, agent rules
-- and conversation leases. Every time is unix nanoseconds (UTC); 0 means
-- "not set".

CREATE TABLE agents (
    id      TEXT PRIMARY KEY,
    created INTEGER NOT NULL
) STRICT;

CREATE TABLE conversations (
    id              TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL REFERENCES agents(id),
    created         INTEGER NOT NULL,
    updated         INTEGER NOT NULL,
    system_prompt   TEXT NOT NULL DEFAULT '',
    prompt_revision TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX conversations_by_agent_updated ON conversations(agent_id, updated DESC);

-- messages is append-only: pk doubles as the rowid of messages_fts.
CREATE TABLE messages (
    pk              INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    parts           TEXT NOT NULL DEFAULT '[]', -- JSON []agentcore.Part
    tool_calls      TEXT NOT NULL DEFAULT '[]', -- JSON []agentcore.ToolCall
    reasoning       TEXT NOT NULL DEFAULT '',
    tool_call_id    TEXT NOT NULL DEFAULT '',
    tool_name       TEXT NOT NULL DEFAULT '',
    is_error        INTEGER NOT NULL DEFAULT 0,
    run_id          TEXT NOT NULL DEFAULT '',
    created         INTEGER NOT NULL,
    UNIQUE (conversation_id, seq)
) STRICT;

CREATE TRIGGER messages_no_update BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only: UPDATE refused');
END;

CREATE TRIGGER messages_no_delete BEFORE DELETE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only: DELETE refused');
END;

-- messages_fts holds the searchable text of each message (text parts,
-- reminders, summaries, tool call names and arguments, tool results) under
-- rowid = messages.pk. It keeps its own copy of the text so that snippet()
-- works; it is written in the same transaction as the message.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE view (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    position        INTEGER NOT NULL,
    message_id      TEXT NOT NULL REFERENCES messages(id),
    PRIMARY KEY (conversation_id, position)
) STRICT, WITHOUT ROWID;

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    turn_id         TEXT NOT NULL DEFAULT '',
    step            INTEGER NOT NULL DEFAULT 0,
    model           TEXT NOT NULL DEFAULT '',
    stop_reason     TEXT NOT NULL DEFAULT '',
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cached_tokens   INTEGER NOT NULL DEFAULT 0,
    usage_reported  INTEGER NOT NULL DEFAULT 0,
    error           TEXT NOT NULL DEFAULT '',
    started         INTEGER NOT NULL,
    finished        INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX runs_by_conversation ON runs(conversation_id, started);

CREATE TABLE tool_started (
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    tool_call_id    TEXT NOT NULL,
    started         INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, tool_call_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    agent_id        TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    tool_name       TEXT NOT NULL,
    arguments       TEXT NOT NULL DEFAULT '',
    summary         TEXT NOT NULL DEFAULT '',
    reason          TEXT NOT NULL DEFAULT '',
    rule            TEXT NOT NULL DEFAULT '',
    workdir         TEXT NOT NULL DEFAULT '',
    diff            TEXT NOT NULL DEFAULT '',
    requester       TEXT NOT NULL DEFAULT '',
    approvers       TEXT NOT NULL DEFAULT '[]', -- JSON []string
    state           TEXT NOT NULL,
    decision_reason TEXT NOT NULL DEFAULT '',
    decided_by      TEXT NOT NULL DEFAULT '',
    created         INTEGER NOT NULL,
    expires         INTEGER NOT NULL DEFAULT 0,
    decided         INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX approvals_by_conversation ON approvals(conversation_id, state, created);

CREATE TABLE agent_rules (
    agent_id TEXT NOT NULL,
    rule     TEXT NOT NULL,
    created  INTEGER NOT NULL,
    UNIQUE (agent_id, rule)
) STRICT;

-- leases has no foreign key: a lease may be taken before the conversation
-- row exists (a worker claims the conversation it is about to create).
CREATE TABLE leases (
    conversation_id TEXT PRIMARY KEY,
    owner           TEXT NOT NULL,
    expires         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
