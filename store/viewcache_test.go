package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
)

func textMessage(role agentcore.Role, text string) agentcore.Message {
	return agentcore.Message{Role: role, Parts: []agentcore.Part{{Type: agentcore.PartText, Text: text}}}
}

// viewTexts is the first part's text of each message of the view.
func viewTexts(t *testing.T, db *DB, conv string) []string {
	t.Helper()
	view, err := db.View(context.Background(), conv)
	if err != nil {
		t.Fatalf("View(%s): %v", conv, err)
	}
	out := make([]string, len(view))
	for i, m := range view {
		out[i] = m.Parts[0].Text
	}
	return out
}

// TestViewCacheAgreesWithTheDatabase: a handle that keeps views in memory
// reads the same view as a fresh handle after every kind of change, made
// through itself or through another handle (another process): appends,
// a replaced view (compaction), and rows deleted by hand.
func TestViewCacheAgreesWithTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	a, b := openTemp(t, path), openTemp(t, path)
	ctx := context.Background()
	if err := a.CreateConversation(ctx, agentcore.Conversation{ID: "c", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		fresh := openTemp(t, path)
		want := viewTexts(t, fresh, "c")
		fresh.Close()
		for name, db := range map[string]*DB{"a": a, "b": b} {
			if got := viewTexts(t, db, "c"); !slices.Equal(got, want) {
				t.Errorf("%s: handle %s reads view %q, the database holds %q", step, name, got, want)
			}
		}
	}
	check("empty")
	appendText := func(db *DB, texts ...string) []agentcore.Message {
		t.Helper()
		var msgs []agentcore.Message
		for i, s := range texts {
			msgs = append(msgs, textMessage([]agentcore.Role{agentcore.RoleUser, agentcore.RoleAssistant}[i%2], s))
		}
		out, err := db.Append(ctx, "c", msgs...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := appendText(a, "one", "two")
	check("first append")
	appendText(a, "three", "four")
	check("append through the same handle")
	appendText(b, "five")
	check("append through another handle")
	// Compaction through the other handle: a view no longer than the
	// cached one, at positions the cache already holds.
	if err := b.ReplaceView(ctx, "c", []string{first[1].ID}); err != nil {
		t.Fatal(err)
	}
	check("view replaced by another handle")
	appendText(a, "six")
	check("append after the replacement")
	if err := a.ReplaceView(ctx, "c", []string{first[0].ID, first[1].ID}); err != nil {
		t.Fatal(err)
	}
	check("view replaced by the same handle")
	// A row deleted by hand (sqlite3 on the file): the trigger marks it.
	if _, err := b.w.ExecContext(ctx, `DELETE FROM view WHERE conversation_id = 'c' AND position = 0`); err != nil {
		t.Fatal(err)
	}
	check("row deleted outside the store's methods")
	// A row moved by hand to a later position.
	appendText(b, "seven")
	if _, err := b.w.ExecContext(ctx, `UPDATE view SET position = position + 10 WHERE conversation_id = 'c' AND position = 1`); err != nil {
		t.Fatal(err)
	}
	check("row changed outside the store's methods")
}

// TestViewCacheIsNotTheCallers: changing a returned view does not change
// what the next read returns.
func TestViewCacheIsNotTheCallers(t *testing.T) {
	db := openTemp(t, "")
	ctx := context.Background()
	if err := db.CreateConversation(ctx, agentcore.Conversation{ID: "c", AgentID: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Append(ctx, "c", textMessage(agentcore.RoleUser, "hi"), textMessage(agentcore.RoleAssistant, "hello")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second read is served from the cache
		view, err := db.View(ctx, "c")
		if err != nil {
			t.Fatal(err)
		}
		view[0] = agentcore.Message{ID: "changed"}
		_ = append(view[:1], agentcore.Message{ID: "appended"})
	}
	if got := viewTexts(t, db, "c"); !slices.Equal(got, []string{"hi", "hello"}) {
		t.Fatalf("view after the caller changed its copies: %q", got)
	}
	if _, err := db.View(ctx, "missing"); err == nil {
		t.Fatal("View of a conversation that does not exist succeeded")
	}
}

// TestViewCacheIsBounded: the cache holds at most maxViewEntries views,
// and drops the ones not used for viewIdle.
func TestViewCacheIsBounded(t *testing.T) {
	var c viewCache
	now := time.Now()
	for i := range maxViewEntries + 10 {
		c.put(cachedView{conv: fmt.Sprint("c", i), msgs: make([]agentcore.Message, 1), bytes: 300, used: now.Add(time.Duration(i) * time.Millisecond)})
	}
	if c.lru.Len() != maxViewEntries || len(c.m) != maxViewEntries {
		t.Fatalf("%d views cached (%d in the map), want the bound %d", c.lru.Len(), len(c.m), maxViewEntries)
	}
	if _, ok := c.get("c0"); ok {
		t.Error("the view used longest ago was kept past the bound")
	}
	c.put(cachedView{conv: "big", msgs: make([]agentcore.Message, 1), bytes: maxViewBytes})
	if _, ok := c.get("big"); ok {
		t.Error("a view of more than a quarter of maxViewBytes was cached")
	}
	if c.bytes > maxViewBytes {
		t.Errorf("%d bytes cached, over maxViewBytes", c.bytes)
	}
	c.sweep(now.Add(time.Duration(maxViewEntries) * time.Millisecond))
	if c.lru.Len() != 10 {
		t.Fatalf("%d views left after the sweep, want the 10 used since", c.lru.Len())
	}
	c.sweep(now.Add(time.Hour))
	if c.lru.Len() != 0 || c.m != nil || c.bytes != 0 {
		t.Fatalf("after sweeping everything: %d views, map %v, %d bytes", c.lru.Len(), c.m != nil, c.bytes)
	}
}
