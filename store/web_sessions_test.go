package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/channels/web"
	"github.com/switchboard-gw/switchboard/store"
)

var _ web.SessionStore = (*store.DB)(nil)

func TestWebSessions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sb.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).UTC()
	if err := db.CreateWebSession(ctx, "h1", exp); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateWebSession(ctx, "old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Survives a reopen (a restart).
	db, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok, err := db.WebSession(ctx, "h1")
	if err != nil || !ok || !got.Equal(exp.Truncate(time.Nanosecond)) && got.Sub(exp).Abs() > time.Microsecond {
		t.Fatalf("WebSession(h1) = %v, %v, %v; want %v", got, ok, err, exp)
	}
	if _, ok, _ := db.WebSession(ctx, "nope"); ok {
		t.Error("an unknown session exists")
	}
	if err := db.DeleteWebSession(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.WebSession(ctx, "h1"); ok {
		t.Error("a deleted session still exists")
	}
}
