package slack

import (
	"container/list"
	"sync"
	"time"
)

// lru is a bounded map whose entries also expire: the adapter's memories
// (display names, accepted events, threads the bot is in, the last message
// seen per thread) never grow without bound. Safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	cap   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // front = most recently put
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

func newLRU[K comparable, V any](capacity int, ttl time.Duration, now func() time.Time) *lru[K, V] {
	return &lru[K, V]{cap: capacity, ttl: ttl, now: now, order: list.New(), items: map[K]*list.Element{}}
}

// get returns the live entry for k.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[K, V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	return e.val, true
}

func (c *lru[K, V]) has(k K) bool {
	_, ok := c.get(k)
	return ok
}

// put stores v for k for the cache's ttl.
func (c *lru[K, V]) put(k K, v V) { c.putFor(k, v, c.ttl) }

// putFor stores v for k for ttl, evicting the oldest entries over capacity.
func (c *lru[K, V]) putFor(k K, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.now().Add(ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		e.val, e.expires = v, exp
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, expires: exp})
	for c.order.Len() > c.cap {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*lruEntry[K, V]).key)
	}
}
