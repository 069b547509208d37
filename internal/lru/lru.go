// Package lru is the one bounded cache of the server's memory: a map of
// at most a fixed number of entries that, when full, forgets the least
// recently used one, never everything at once. The record layer's cache,
// the sign-ins verified, the failures counted, the open-file cache's
// files and every other bounded map of the server are one of these. A
// cache made with NewSized is bounded by the weight of its values too
// (the bytes a value holds), and forgets as many of the least recently
// used as it takes to stay within both bounds.
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

	// weigh, when set, weighs each value; the values held weigh weight
	// in all, at most budget.
	weigh          func(V) int64
	weight, budget int64
}

type entry[K comparable, V any] struct {
	key K
	val V
	w   int64 // the value's weight, when the cache weighs them
}

// New returns a Cache of at most size entries (at least one).
func New[K comparable, V any](size int) *Cache[K, V] {
	return &Cache[K, V]{max: max(1, size), m: map[K]*list.Element{}}
}

// NewSized returns a Cache of at most size entries (at least one) whose
// values weigh at most budget in all, each weighing what weigh says
// (weigh must say the same of a value every time it is asked). A value
// heavier than the whole budget is not kept.
func NewSized[K comparable, V any](size int, budget int64, weigh func(V) int64) *Cache[K, V] {
	c := New[K, V](size)
	c.weigh, c.budget = weigh, budget
	return c
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
		c.set(e, val)
		return
	}
	c.add(key, val)
}

// add adds a new entry, forgetting the least recently used ones while
// the cache is full. c.mu is held.
func (c *Cache[K, V]) add(key K, val V) {
	en := &entry[K, V]{key: key, val: val}
	if c.weigh != nil {
		if en.w = c.weigh(val); en.w > c.budget {
			return // it would push out everything, and still not fit
		}
		c.weight += en.w
	}
	c.m[key] = c.ll.PushFront(en)
	c.trim()
}

// set gives the entry e the value val, the most recently used. c.mu is
// held.
func (c *Cache[K, V]) set(e *list.Element, val V) {
	en := e.Value.(*entry[K, V])
	en.val = val
	c.ll.MoveToFront(e)
	if c.weigh != nil {
		w := c.weigh(val)
		c.weight += w - en.w
		en.w = w
		if w > c.budget {
			c.remove(e)
			return
		}
		c.trim()
	}
}

// trim forgets the least recently used entries while there are too many,
// or they weigh too much. c.mu is held.
func (c *Cache[K, V]) trim() {
	for len(c.m) > c.max || c.weigh != nil && c.weight > c.budget {
		c.remove(c.ll.Back())
	}
}

// remove forgets the entry e. c.mu is held.
func (c *Cache[K, V]) remove(e *list.Element) {
	en := e.Value.(*entry[K, V])
	delete(c.m, en.key)
	c.ll.Remove(e)
	c.weight -= en.w
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
		c.remove(e)
	case keep && ok:
		c.set(e, val)
	case keep:
		c.add(key, val)
	}
}

// Remove forgets key.
func (c *Cache[K, V]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok {
		c.remove(e)
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
			c.remove(e)
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

// Weight returns what the values held weigh in all: zero for a cache
// made with New, which does not weigh them.
func (c *Cache[K, V]) Weight() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.weight
}
