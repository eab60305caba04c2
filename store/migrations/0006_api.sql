-- 0006: the HTTP API (channels/api).
--
-- dedupe.item_id names the queue item a dedupe key stored, so a retried
-- request (the API's Idempotency-Key) learns which input it queued the
-- first time. Keys stored before this migration, and ClaimDedupe keys,
-- have 0.
ALTER TABLE dedupe ADD COLUMN item_id INTEGER NOT NULL DEFAULT 0;

-- api_conversations indexes the conversations API callers started: the
-- token name (account) that owns each, its agent and the title the caller
-- gave. pos orders a caller's list (newest first) and is its page cursor.
CREATE TABLE api_conversations (
    pos     INTEGER PRIMARY KEY AUTOINCREMENT,
    id      TEXT NOT NULL UNIQUE,
    account TEXT NOT NULL,
    agent   TEXT NOT NULL,
    title   TEXT NOT NULL DEFAULT '',
    created INTEGER NOT NULL
) STRICT;

CREATE INDEX api_conversations_by_account ON api_conversations(account, pos);

-- api_events is the retained event stream of API conversations, in the
-- order the API sent it. (conversation_id, run_id, seq_id) is an event's
-- stream identity (its SSE id): seq_id counts the events of one run within
-- the conversation, 1, 2, 3…, also when a later turn adds events to an
-- earlier run (a resumed tool call), so a client resumes exactly after the
-- last event it saw. Rows older than the retention are pruned.
CREATE TABLE api_events (
    pos             INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    seq_id          INTEGER NOT NULL,
    type            TEXT NOT NULL,
    input_id        TEXT NOT NULL DEFAULT '',
    data            TEXT NOT NULL,
    created         INTEGER NOT NULL,
    UNIQUE (conversation_id, run_id, seq_id)
) STRICT;

CREATE INDEX api_events_by_conversation ON api_events(conversation_id, pos);
CREATE INDEX api_events_by_input ON api_events(conversation_id, input_id, type) WHERE input_id <> '';
CREATE INDEX api_events_by_created ON api_events(created);
