-- 0007: sub-agent tasks (DESIGN §5). A task is a child conversation of the
-- same agent whose turns are queue items like any other's, at the parent
-- turn's location; this row is its record: who started it and where, its
-- type (spec: the type as it was at the start, JSON), its status and its
-- final report. Rows are kept like transcripts.
-- * approvals.task_id/task_type: an ask of a task's child is labelled with
--   the task wherever it is posted.

CREATE TABLE tasks (
    id                     TEXT PRIMARY KEY,
    agent_id               TEXT NOT NULL,
    parent_conversation_id TEXT NOT NULL REFERENCES conversations(id),
    parent_location        TEXT NOT NULL DEFAULT '',
    parent_tool_call_id    TEXT NOT NULL DEFAULT '',
    conversation_id        TEXT NOT NULL UNIQUE REFERENCES conversations(id),
    type                   TEXT NOT NULL,
    description            TEXT NOT NULL DEFAULT '',
    prompt                 TEXT NOT NULL DEFAULT '',
    spec                   TEXT NOT NULL DEFAULT '{}',
    fork                   INTEGER NOT NULL DEFAULT 0,
    background             INTEGER NOT NULL DEFAULT 0,
    depth                  INTEGER NOT NULL DEFAULT 1,
    requester              TEXT NOT NULL DEFAULT '',
    status                 TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'done', 'failed', 'cancelled')),
    report                 TEXT NOT NULL DEFAULT '',
    error                  TEXT NOT NULL DEFAULT '',
    report_file            TEXT NOT NULL DEFAULT '',
    created                INTEGER NOT NULL,
    started                INTEGER NOT NULL DEFAULT 0,
    ended                  INTEGER NOT NULL DEFAULT 0,
    input_tokens           INTEGER NOT NULL DEFAULT 0,
    output_tokens          INTEGER NOT NULL DEFAULT 0,
    cached_tokens          INTEGER NOT NULL DEFAULT 0,
    status_post            INTEGER NOT NULL DEFAULT 0 -- outbox id of the status line
) STRICT;

-- A conversation's tasks (/tasks, the parked Agent call's lookup).
CREATE INDEX tasks_by_parent ON tasks(parent_conversation_id, parent_tool_call_id);
-- An agent's unfinished tasks (max_tasks admission, the queued ones' turn).
CREATE INDEX tasks_open_by_agent ON tasks(agent_id, status, created) WHERE status IN ('queued', 'running', 'waiting');

ALTER TABLE approvals ADD COLUMN task_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN task_type TEXT NOT NULL DEFAULT '';
