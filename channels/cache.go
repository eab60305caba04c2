package channels

import (
	"container/list"
	"sync"
	"time"
)

// Cache is a bounded map whose entries also expire, for what adapters
// remember about chats and users (channel facts, DM channels): it never
// holds more than its capacity, least recently used first out, and an
// entry not put again within its TTL is gone. Safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	cap   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // front = most recently used
	items map[K]*list.Element
}

type cacheEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

// NewCache returns a cache of at most capacity entries that live ttl; now
// nil means time.Now.
func NewCache[K comparable, V any](capacity int, ttl time.Duration, now func() time.Time) *Cache[K, V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[K, V]{cap: max(capacity, 1), ttl: ttl, now: now, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the live entry for k (and marks it used).
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*cacheEntry[K, V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Has reports whether k has a live entry (and marks it used).
func (c *Cache[K, V]) Has(k K) bool {
	_, ok := c.Get(k)
	return ok
}

// Put stores v for k for the cache's TTL, evicting the least recently used
// entries over capacity (expired ones at the back go first anyway).
func (c *Cache[K, V]) Put(k K, v V) { c.PutFor(k, v, c.ttl) }

// PutFor is Put with a TTL of its own for this entry (a short-lived
// negative answer, say).
func (c *Cache[K, V]) PutFor(k K, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*cacheEntry[K, V])
		e.val, e.expires = v, exp
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&cacheEntry[K, V]{key: k, val: v, expires: exp})
	for c.order.Len() > c.cap {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*cacheEntry[K, V]).key)
	}
}

// Delete forgets k.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// Len is the number of entries held, expired ones not yet dropped
// included.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
