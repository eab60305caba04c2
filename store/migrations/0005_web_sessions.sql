-- 0005: web page logins survive restarts. A session is stored by the
-- SHA-256 of its cookie value, never the value; logout deletes it; expired
-- rows are purged when sessions are created.
CREATE TABLE web_sessions (
    id      TEXT PRIMARY KEY,
    expires INTEGER NOT NULL,
    created INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
