-- 0002: the gateway's storage ports: location bindings, the durable
-- per-conversation work queue and its dedupe keys, pairing codes and paired
-- users, approval button tokens and posts, and the outbox. Every time is
-- unix nanoseconds (UTC); 0 means "not set". No table has a foreign key to
-- the agent tables: the gateway's records name conversations and approvals
-- that agentcore may create later (or in another process).

CREATE TABLE bindings (
    location        TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    created         INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX bindings_by_conversation ON bindings(conversation_id);

-- dedupe remembers platform event ids until expires so that a platform's
-- retry of an event already queued is dropped. Expired rows are purged by
-- the next enqueue.
CREATE TABLE dedupe (
    key     TEXT PRIMARY KEY,
    expires INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX dedupe_by_expires ON dedupe(expires);

-- queue ids are AUTOINCREMENT: an id is never reused, also after the
-- newest items are deleted, so "lowest id first" stays arrival order.
CREATE TABLE queue (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    agent_id        TEXT NOT NULL DEFAULT '',
    kind            TEXT NOT NULL,
    location        TEXT NOT NULL DEFAULT '',
    payload         BLOB NOT NULL,
    created         INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    state           TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'done')),
    finished        INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Serves Peek, Pending (per conversation, in id order) and Busy; done
-- items leave the index.
CREATE INDEX queue_unfinished ON queue(conversation_id, id) WHERE state = 'queued';

CREATE TABLE pairings (
    code      TEXT PRIMARY KEY,
    channel   TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    user_name TEXT NOT NULL DEFAULT '',
    location  TEXT NOT NULL DEFAULT '',
    created   INTEGER NOT NULL,
    expires   INTEGER NOT NULL,
    approved  INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

CREATE INDEX pairings_pending ON pairings(channel, user_id, expires) WHERE approved = 0;

CREATE TABLE paired_users (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    code    TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL,
    PRIMARY KEY (channel, user_id)
) STRICT, WITHOUT ROWID;

-- buttons maps opaque button tokens (platform callback payloads) to an
-- approval and what the button does.
CREATE TABLE buttons (
    token       TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL,
    action      TEXT NOT NULL,
    created     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE approval_posts (
    id          INTEGER PRIMARY KEY,
    approval_id TEXT NOT NULL,
    location    TEXT NOT NULL,
    message_id  TEXT NOT NULL DEFAULT '',
    outbox_id   INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX approval_posts_by_approval ON approval_posts(approval_id, id);

-- outbox holds outgoing platform calls until they succeed or fail for
-- good; a permanent failure is sent = 1 with last_err kept.
CREATE TABLE outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    location   TEXT NOT NULL,
    message_id TEXT NOT NULL DEFAULT '',
    edit_of    INTEGER NOT NULL DEFAULT 0,
    body       BLOB NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    created    INTEGER NOT NULL,
    sent       INTEGER NOT NULL DEFAULT 0,
    last_err   TEXT NOT NULL DEFAULT ''
) STRICT;

-- The unsent items, in id order: DueOutbound walks this and filters on
-- next_at (the unsent set is small; sent items leave the index).
CREATE INDEX outbox_unsent ON outbox(id, next_at) WHERE sent = 0;
