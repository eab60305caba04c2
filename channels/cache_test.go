package channels

import (
	"sync"
	"testing"
	"time"
)

func TestCacheBoundAndExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := NewCache[string, int](3, time.Hour, clock)
	for i, k := range []string{"a", "b", "c"} {
		c.Put(k, i)
	}
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.Put("d", 3) // evicts b, the least recently used
	if _, ok := c.Get("b"); ok {
		t.Error("b survived eviction")
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
	advance(59 * time.Minute)
	c.Put("c", 9) // put again: lives on
	advance(2 * time.Minute)
	if _, ok := c.Get("a"); ok {
		t.Error("a outlived its TTL")
	}
	if v, ok := c.Get("c"); !ok || v != 9 {
		t.Errorf("c = %d, %v; want 9, true", v, ok)
	}
	c.Delete("c")
	if _, ok := c.Get("c"); ok {
		t.Error("c survived Delete")
	}
}

func TestCachePutForHasItsOwnTTL(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c := NewCache[string, int](10, time.Hour, func() time.Time { return now })
	c.Put("long", 1)
	c.PutFor("short", 2, time.Minute)
	now = now.Add(2 * time.Minute)
	if c.Has("short") {
		t.Error("an entry put for a minute outlived it")
	}
	if !c.Has("long") {
		t.Error("an entry put for the cache's TTL expired early")
	}
}
