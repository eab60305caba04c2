package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Settings returns every key of a scope (agentcore.Settings, and the
// gateway's per-location settings).
func (db *DB) Settings(ctx context.Context, scope string) (map[string]string, error) {
	rows, err := db.stmts.settings.QueryContext(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("settings of %s: %w", scope, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("settings of %s: %w", scope, err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("settings of %s: %w", scope, err)
	}
	return out, nil
}

// SetSetting stores one setting; an empty value deletes it.
func (db *DB) SetSetting(ctx context.Context, scope, key, value string) error {
	if scope == "" || key == "" {
		return fmt.Errorf("set setting: scope (%q) and key (%q) are required", scope, key)
	}
	err := db.write(ctx, "SetSetting", func(tx *sql.Tx) error {
		return db.setSettingTx(ctx, tx, scope, key, value, now())
	})
	if err != nil {
		return fmt.Errorf("set %s %s: %w", scope, key, err)
	}
	return nil
}

func (db *DB) setSettingTx(ctx context.Context, tx *sql.Tx, scope, key, value string, t time.Time) error {
	if value == "" {
		_, err := tx.StmtContext(ctx, db.stmts.deleteSetting).ExecContext(ctx, scope, key)
		return err
	}
	_, err := tx.StmtContext(ctx, db.stmts.upsertSetting).ExecContext(ctx, scope, key, value, nanos(t))
	return err
}

const qUpsertSetting = `INSERT INTO settings (scope, key, value, updated) VALUES (?, ?, ?, ?)
	ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated = excluded.updated`
