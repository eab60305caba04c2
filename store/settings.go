package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"sync"
	"time"
)

// settingsTTL is how long a read of a scope's settings is reused.
const settingsTTL = time.Second

// maxCachedScopes bounds the settings cache; when full, expired entries go,
// and if that is not enough, all of them.
const maxCachedScopes = 1024

// settingsCache holds recent reads of settings scopes. A write drops its
// scope (after it committed) and bumps the generation, so a read that
// raced with it does not store what it read.
type settingsCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]cachedScope
}

type cachedScope struct {
	vals map[string]string
	at   time.Time
}

func (c *settingsCache) get(scope string) (map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[scope]
	if !ok || time.Since(e.at) > settingsTTL {
		return nil, false
	}
	return maps.Clone(e.vals), true
}

func (c *settingsCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *settingsCache) put(scope string, vals map[string]string, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil {
		c.m = map[string]cachedScope{}
	}
	if len(c.m) >= maxCachedScopes {
		for k, e := range c.m {
			if time.Since(e.at) > settingsTTL {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxCachedScopes {
			clear(c.m)
		}
	}
	c.m[scope] = cachedScope{vals: vals, at: time.Now()}
}

func (c *settingsCache) drop(scopes ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, s := range scopes {
		delete(c.m, s)
	}
}

// Settings returns every key of a scope (agentcore.Settings, and the
// gateway's per-location settings). Reads are cached for settingsTTL (a
// turn reads three scopes); a write through this DB is seen at once, one
// by another process within settingsTTL.
func (db *DB) Settings(ctx context.Context, scope string) (map[string]string, error) {
	if vals, ok := db.settingsCache.get(scope); ok {
		return vals, nil
	}
	gen := db.settingsCache.generation()
	vals, err := db.readSettings(ctx, scope)
	if err != nil {
		return nil, err
	}
	db.settingsCache.put(scope, vals, gen)
	return maps.Clone(vals), nil
}

func (db *DB) readSettings(ctx context.Context, scope string) (map[string]string, error) {
	rows, err := db.stmts.settings.QueryContext(pointRead(ctx), scope)
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
	db.settingsCache.drop(scope)
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
