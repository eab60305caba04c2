package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database to path, which must not
// exist yet. It is safe while other processes (a running serve) write the
// same file: VACUUM INTO reads one snapshot of the WAL-mode database in a
// single read transaction, so the copy holds exactly the transactions
// committed before it started, and writers are not blocked meanwhile.
//
// The copy is written to a temporary file beside path and renamed into
// place only when complete, so a failed or interrupted backup never leaves
// a half-written file under the final name. Leases are dropped from the
// copy: they belong to processes of the live data directory, and a
// restored copy must not make its first process wait for owners that do
// not exist there. Queue items, approvals and outbox records are kept, so
// a restored serve goes on with what was pending.
func (db *DB) Backup(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("back up database to %s: %w", path, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return fmt.Errorf("back up database to %s: the file exists; choose a new path", abs)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("back up database to %s: %w", abs, err)
	}
	tmp := abs + ".partial"
	if err := removeDBFiles(tmp); err != nil {
		return fmt.Errorf("back up database to %s: remove a leftover partial copy: %w", abs, err)
	}
	if err := db.vacuumInto(ctx, tmp); err != nil {
		_ = removeDBFiles(tmp)
		return fmt.Errorf("back up database to %s: %w", abs, err)
	}
	if err := finishCopy(ctx, tmp); err != nil {
		_ = removeDBFiles(tmp)
		return fmt.Errorf("back up database to %s: %w", abs, err)
	}
	if err := os.Rename(tmp, abs); err != nil {
		_ = removeDBFiles(tmp)
		return fmt.Errorf("back up database to %s: %w", abs, err)
	}
	return nil
}

// vacuumInto runs VACUUM INTO on a connection of its own: the read pool's
// connections are query_only, and the writer's one connection must stay
// free for the writer loop.
func (db *DB) vacuumInto(ctx context.Context, dst string) error {
	c, err := sql.Open("sqlite", dsn(db.path, false))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("vacuum into %s: %w", dst, err)
	}
	return os.Chmod(dst, 0o600)
}

// finishCopy drops the leases of the copy and checks it.
func finishCopy(ctx context.Context, path string) error {
	// No journal_mode pragma: the copy stays in the mode VACUUM INTO gave
	// it, and closing the last connection leaves no -wal or -shm file.
	u := url.URL{Scheme: "file", Path: path, RawQuery: url.Values{"_pragma": {fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS)}}.Encode()}
	c, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	c.SetMaxOpenConns(1)
	if _, err := c.ExecContext(ctx, `DELETE FROM leases`); err != nil {
		c.Close()
		return fmt.Errorf("drop leases from the copy: %w", err)
	}
	var res string
	if err := c.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		c.Close()
		return fmt.Errorf("check the copy: %w", err)
	}
	if err := c.Close(); err != nil {
		return err
	}
	if res != "ok" {
		return fmt.Errorf("the copy failed its integrity check: %s", res)
	}
	return nil
}

// removeDBFiles removes a database file and its -wal, -shm and -journal
// companions; missing files are fine.
func removeDBFiles(path string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
