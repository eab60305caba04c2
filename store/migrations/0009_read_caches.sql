-- 0009: version marks that let a process keep reads in memory while other
-- processes (the CLI, a second serve) write the same file. Triggers keep
-- them, so no write path can forget to.
--
-- view_epoch counts the times rows of a conversation's view were deleted
-- or changed (compaction replaces the view). Appending to a view leaves it
-- alone: a cached view stays valid as long as its epoch does, and is
-- brought up to date by reading only the positions after its last one
-- (viewcache.go).
ALTER TABLE conversations ADD COLUMN view_epoch INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER view_epoch_on_delete AFTER DELETE ON view
BEGIN
    UPDATE conversations SET view_epoch = view_epoch + 1 WHERE id = OLD.conversation_id;
END;

CREATE TRIGGER view_epoch_on_update AFTER UPDATE ON view
BEGIN
    UPDATE conversations SET view_epoch = view_epoch + 1 WHERE id = OLD.conversation_id;
    UPDATE conversations SET view_epoch = view_epoch + 1 WHERE id = NEW.conversation_id AND NEW.conversation_id <> OLD.conversation_id;
END;

-- settings_version counts every change to settings: a process keeps the
-- scopes it read until the count moves (it reads the count at most once a
-- second, settings.go).
CREATE TABLE settings_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
) STRICT;

INSERT INTO settings_version (id, n) VALUES (1, 0);

CREATE TRIGGER settings_version_on_insert AFTER INSERT ON settings
BEGIN
    UPDATE settings_version SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER settings_version_on_update AFTER UPDATE ON settings
BEGIN
    UPDATE settings_version SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER settings_version_on_delete AFTER DELETE ON settings
BEGIN
    UPDATE settings_version SET n = n + 1 WHERE id = 1;
END;
