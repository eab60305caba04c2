package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrationFiles holds the schema migrations, named NNNN_name.sql. A
// migration is never edited once released; a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
	// step, when set, runs after sql in the same transaction: data moves
	// that SQL alone cannot make (hashing, say).
	step func(ctx context.Context, tx *sql.Tx) error
}

// goStep is a migration's Go step, by file name without the number (so
// renumbering a migration keeps its step); nil when it has none.
func goStep(name string) func(ctx context.Context, tx *sql.Tx) error {
	switch name {
	case "prompts.sql":
		return movePrompts
	}
	return nil
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", name)
		}
		body, err := fs.ReadFile(migrationFiles, path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		_, rest, _ := strings.Cut(name, "_")
		ms = append(ms, migration{version: v, name: name, sql: string(body), step: goStep(rest)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := range ms {
		if ms[i].version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d (versions must be contiguous)", ms[i].name, i+1)
		}
	}
	return ms, nil
}

// migrate applies every pending migration, each in its own IMMEDIATE
// transaction that first re-reads the applied version: when two processes
// open a fresh file at once, the second waits for the first's lock and then
// finds the migration already applied.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// Fast path for the common reopen: nothing to apply, no write lock.
	var current int
	err = db.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current)
	if err == nil && current == len(ms) {
		return nil
	}
	for _, m := range ms {
		err := db.write(ctx, "migrate", func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version INTEGER PRIMARY KEY,
				name    TEXT NOT NULL,
				applied INTEGER NOT NULL
			) STRICT`); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			var current int
			if err := tx.QueryRowContext(ctx,
				`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if current > len(ms) {
				return fmt.Errorf("database schema version %d is newer than this program knows (%d): upgrade switchboard", current, len(ms))
			}
			if current >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			if m.step != nil {
				if err := m.step(ctx, tx); err != nil {
					return fmt.Errorf("apply migration %s: %w", m.name, err)
				}
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)`,
				m.version, m.name, nanos(now())); err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersion returns the highest migration applied to the database.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := db.r.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
