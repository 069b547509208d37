// Package keylock serialises work by key within one process: commits and
// removals of one name, the placing of one upload. A lock exists only
// while someone holds or waits for it, so a Set's memory follows the keys
// in use, not all the keys ever used.
package keylock

import "sync"

// Set is a set of locks, one per key. The zero value is ready to use; a
// Set is safe for concurrent use and must not be copied.
type Set struct {
	mu sync.Mutex
	m  map[string]*lock
}

type lock struct {
	sync.Mutex
	refs int // holders and waiters
}

// Lock locks key and returns the function that unlocks it.
func (s *Set) Lock(key string) (unlock func()) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[string]*lock)
	}
	l := s.m[key]
	if l == nil {
		l = &lock{}
		s.m[key] = l
	}
	l.refs++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.m, key)
		}
		s.mu.Unlock()
	}
}

// Len returns the number of keys locked or waited for.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
