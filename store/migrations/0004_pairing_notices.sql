-- 0004: pairing cannot be blocked by strangers. pairing_notices records
-- when a user was last sent a pairing code message, so a stranger who
-- writes again within the hour gets no second message — also when their
-- code was evicted meanwhile (a channel keeps a bounded number of pending
-- codes and evicts the oldest stranger's). Rows older than the notice
-- interval are purged by the next CreatePairing.

CREATE TABLE pairing_notices (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    sent    INTEGER NOT NULL,
    PRIMARY KEY (channel, user_id)
) STRICT, WITHOUT ROWID;

-- Serves eviction: a channel's pending codes, oldest first.
CREATE INDEX pairings_pending_by_age ON pairings(channel, created) WHERE approved = 0;
