//go:build unix && !linux

package disk

import "errors"

// Watcher is inotify's, which this system has not: a cache of the
// folder's files looks at each file before it serves it instead.
type Watcher struct{ changes uint64 }

// NewWatcher returns an error: there is nothing to watch with here.
func (s *Store) NewWatcher(int) (*Watcher, error) {
	return nil, errors.New("no inotify on this system")
}

// Close does nothing.
func (w *Watcher) Close() error { return nil }

// Watch reports that nothing is watched.
func (w *Watcher) Watch(string) (uint64, bool) { return w.Drain(), false }

// Drain counts a change each time: nothing is known.
func (w *Watcher) Drain() uint64 {
	w.changes++
	return w.changes
}
