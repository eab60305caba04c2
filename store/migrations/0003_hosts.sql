-- 0003: one gateway for every host.
-- * settings: durable run-time settings (/mode, /model per agent; /queue per
--   location), so they survive restarts and every process sees them.
-- * approvals.location: where the turn that asked came from, so a decision
--   resumes it there (not at the conversation's newest binding).
-- * messages.outcome: how a tool call went (ok, error, denied_policy,
--   denied_person, unknown), so history shows the true outcome.
-- * queue.channel and outbox.channel: processes sharing the data directory
--   divide the work by channel (the location's first field).
-- * outbox.user_id: the recipient of an ephemeral item.

CREATE TABLE settings (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    updated INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;

ALTER TABLE approvals ADD COLUMN location TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN outcome TEXT NOT NULL DEFAULT '';

ALTER TABLE queue ADD COLUMN channel TEXT NOT NULL DEFAULT '';
UPDATE queue SET channel = substr(location, 1, instr(location, ':') - 1) WHERE instr(location, ':') > 0;
CREATE INDEX queue_unfinished_by_channel ON queue(channel, conversation_id, id) WHERE state = 'queued';

ALTER TABLE outbox ADD COLUMN channel TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
UPDATE outbox SET channel = substr(location, 1, instr(location, ':') - 1) WHERE instr(location, ':') > 0;
CREATE INDEX outbox_unsent_by_channel ON outbox(channel, id, next_at) WHERE sent = 0;
