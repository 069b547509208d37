// Package lru is the one bounded cache of the server's memory: a map of
// at most a fixed number of entries that, when full, forgets the least
// recently used one, never everything at once. The record layer's cache,
// the sign-ins verified, the failures counted and every other bounded
// map of the server are one of these.
//
// A Cache is safe for concurrent use. Its zero value is not usable: make
// one with New.
package lru

import (
	"container/list"
	"sync"
)

// Cache holds at most Max values by key.
type Cache[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	ll  list.List // of *entry[K, V], the most recently used first
	m   map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns a Cache of at most size entries (at least one).
func New[K comparable, V any](size int) *Cache[K, V] {
	return &Cache[K, V]{max: max(1, size), m: map[K]*list.Element{}}
}

// Get returns the value of key, and makes it the most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(*entry[K, V]).val, true
}

// Peek returns the value of key without making it the most recently
// used: a walk through many keys does not push out what requests use.
func (c *Cache[K, V]) Peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	return e.Value.(*entry[K, V]).val, true
}

// Add sets the value of key, the most recently used, and forgets the
// least recently used entry when the cache is full.
func (c *Cache[K, V]) Add(key K, val V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		e.Value.(*entry[K, V]).val = val
		c.ll.MoveToFront(e)
		return
	}
	c.add(key, val)
}

// add adds a new entry, forgetting the least recently used one when the
// cache is full. c.mu is held.
func (c *Cache[K, V]) add(key K, val V) {
	if len(c.m) >= c.max {
		last := c.ll.Back()
		delete(c.m, last.Value.(*entry[K, V]).key)
		c.ll.Remove(last)
	}
	c.m[key] = c.ll.PushFront(&entry[K, V]{key: key, val: val})
}

// Update sets the value of key to what f makes of its current value
// (ok false: none), as Add, all under the cache's lock (f must not use
// the cache); f returning keep false removes the entry instead.
func (c *Cache[K, V]) Update(key K, f func(old V, ok bool) (val V, keep bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	var old V
	if ok {
		old = e.Value.(*entry[K, V]).val
	}
	val, keep := f(old, ok)
	switch {
	case !keep && ok:
		delete(c.m, key)
		c.ll.Remove(e)
	case keep && ok:
		e.Value.(*entry[K, V]).val = val
		c.ll.MoveToFront(e)
	case keep:
		c.add(key, val)
	}
}

// Remove forgets key.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		delete(c.m, key)
		c.ll.Remove(e)
	}
}

// RemoveFunc forgets every entry for which f reports true (the entries
// of a folder renamed, say).
func (c *Cache[K, V]) RemoveFunc(f func(key K, val V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.ll.Front(); e != nil; {
		next := e.Next()
		if en := e.Value.(*entry[K, V]); f(en.key, en.val) {
			delete(c.m, en.key)
			c.ll.Remove(e)
		}
		e = next
	}
}

// Len returns the number of entries held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
