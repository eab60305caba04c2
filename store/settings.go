package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// settingsCheckEvery is how often the settings cache asks whether any
// setting changed (settings_version, kept by triggers): a write through
// another handle or process is seen within it, one through this DB at
// once.
const settingsCheckEvery = time.Second

// maxCachedScopes bounds the settings cache; when it is full, the scopes
// read longest ago go first.
const maxCachedScopes = 2048

// settingsCache holds the scopes read since settings last changed. A
// write through this DB drops its scope (after it committed); a change
// seen in settings_version drops them all. Either bumps the epoch, so a
// read that began before it does not fill the cache with what it read.
// Scopes not read for settingsIdle are dropped (sweep).
type settingsCache struct {
	mu      sync.Mutex
	epoch   uint64
	version int64     // settings_version at the last check
	checked time.Time // when it was last checked
	m       map[string]cachedScope
}

type cachedScope struct {
	vals map[string]string
	used time.Time
}

// due reports whether settings_version should be read again now, and
// marks it read, so that concurrent callers do not all read it.
func (c *settingsCache) due(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.checked) < settingsCheckEvery && !c.checked.IsZero() {
		return false
	}
	c.checked = now
	return true
}

// saw records the settings_version just read; a change drops every scope.
func (c *settingsCache) saw(version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		c.version = version
		c.epoch++
		clear(c.m)
	}
}

func (c *settingsCache) get(scope string, now time.Time) (map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[scope]
	if !ok {
		return nil, false
	}
	e.used = now
	c.m[scope] = e
	return maps.Clone(e.vals), true
}

func (c *settingsCache) current() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

func (c *settingsCache) put(scope string, vals map[string]string, epoch uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if c.m == nil {
		c.m = map[string]cachedScope{}
	}
	if len(c.m) >= maxCachedScopes {
		c.evictLocked(maxCachedScopes / 2)
	}
	c.m[scope] = cachedScope{vals: vals, used: now}
}

// evictLocked drops the scopes read longest ago until keep are left.
func (c *settingsCache) evictLocked(keep int) {
	if len(c.m) <= keep {
		return
	}
	used := make([]time.Time, 0, len(c.m))
	for _, e := range c.m {
		used = append(used, e.used)
	}
	slices.SortFunc(used, func(a, b time.Time) int { return b.Compare(a) })
	cut := used[keep-1]
	for k, e := range c.m {
		if e.used.Before(cut) {
			delete(c.m, k)
		}
	}
}

// sweep drops the scopes not read since before.
func (c *settingsCache) sweep(before time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if e.used.Before(before) {
			delete(c.m, k)
		}
	}
	if len(c.m) == 0 {
		c.m = nil // a map keeps its buckets after clear
	}
}

func (c *settingsCache) drop(scopes ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, s := range scopes {
		delete(c.m, s)
	}
}

// Settings returns every key of a scope (agentcore.Settings, and the
// gateway's per-location settings). Reads are cached (a turn reads three
// scopes) until settings change: a write through this DB is seen at once,
// one by another process within settingsCheckEvery.
func (db *DB) Settings(ctx context.Context, scope string) (map[string]string, error) {
	now := time.Now()
	if db.settingsCache.due(now) {
		var v int64
		if err := db.stmts.settingsVersion.QueryRowContext(pointRead(ctx)).Scan(&v); err != nil {
			return nil, fmt.Errorf("settings of %s: read settings_version: %w", scope, err)
		}
		db.settingsCache.saw(v)
	}
	if vals, ok := db.settingsCache.get(scope, now); ok {
		return vals, nil
	}
	epoch := db.settingsCache.current()
	vals, err := db.readSettings(ctx, scope)
	if err != nil {
		return nil, err
	}
	db.settingsCache.put(scope, vals, epoch, now)
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
		_, err := db.txStmt(ctx, tx, db.stmts.deleteSetting).ExecContext(ctx, scope, key)
		return err
	}
	_, err := db.txStmt(ctx, tx, db.stmts.upsertSetting).ExecContext(ctx, scope, key, value, nanos(t))
	return err
}

const qUpsertSetting = `INSERT INTO settings (scope, key, value, updated) VALUES (?, ?, ?, ?)
	ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated = excluded.updated`
