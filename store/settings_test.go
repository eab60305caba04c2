package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestSettingsCache: a write through this handle is read back at once;
// one through another handle (another process) within settingsCheckEvery.
func TestSettingsCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	a, b := openTemp(t, path), openTemp(t, path)
	ctx := context.Background()
	read := func(db *DB) string {
		t.Helper()
		vals, err := db.Settings(ctx, "agent:main")
		if err != nil {
			t.Fatal(err)
		}
		return vals["mode"]
	}
	if got := read(a); got != "" {
		t.Fatalf("mode = %q before any write", got)
	}
	if err := a.SetSetting(ctx, "agent:main", "mode", "strict"); err != nil {
		t.Fatal(err)
	}
	if got := read(a); got != "strict" {
		t.Fatalf("mode = %q right after this handle wrote it, want strict", got)
	}
	vals, _ := a.Settings(ctx, "agent:main")
	vals["mode"] = "mutated"
	if got := read(a); got != "strict" {
		t.Fatalf("a caller's change to the returned map reached the cache: %q", got)
	}
	_ = read(b) // cache b's view
	if err := a.SetSetting(ctx, "agent:main", "mode", "unrestricted"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(settingsCheckEvery + 5*time.Second)
	for read(b) != "unrestricted" {
		if time.Now().After(deadline) {
			t.Fatalf("the other handle still reads %q after %v", read(b), settingsCheckEvery+5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
