// Package record is the one home of the server's own records: what largo
// keeps about its files, links, locks, uploads and queues, in a store's
// state area (largo.State: .largo/ in a folder, keys under the prefix's
// .largo/ on a bucket), where every instance serving the store reads the
// same.
//
// A Table holds the records of one kind: each a JSON document of a Go
// type under a key of the table's prefix. It reads through one bounded
// cache (package internal/lru: the least recently used answer goes when
// it is full, never all of them) that keeps the absence of a record for a
// short NegativeTTL, so that a record written by another instance is
// found soon after; it changes a record only as it was read (Update:
// compare-and-swap, a bounded number of tries with jittered waits), lists
// its records in key order a page at a time (Page), and sweeps the
// records whose subject is gone (Sweep). A Lease is the record that lets
// one instance at a time do a job (send the hooks, append to an upload):
// created only where none is, renewed while it is held, taken over when
// its holder stopped renewing it or is a process of this machine that is
// gone.
//
// Compare-and-swap needs a state with conditional writes
// (largo.StateCreator and largo.StateSwapper: every store of largo's has
// them); on one without, or on one that refuses them (largo.ErrUnsupported:
// a bucket whose server ignores conditions), a Store serialises its own
// changes with a lock, which is enough for one instance.
//
// A Store and its Tables and Leases are safe for concurrent use.
package record

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/big"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"largo"
	"largo/internal/lru"
)

// ErrConflict is an Update whose record other writers kept changing
// through all of its tries.
var ErrConflict = errors.New("the record kept changing under other writers")

// ErrDamaged is a record that is not the JSON of its table's type.
var ErrDamaged = errors.New("damaged")

// Options tune a Store; the zero value means the defaults.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is a state area as the record layer uses it. Make one with New.
type Store struct {
	st  largo.State
	cr  largo.StateCreator // nil: emulated under mu
	sw  largo.StateSwapper // nil: emulated under mu
	pg  largo.StatePager   // nil: a page is a sorted listing
	now func() time.Time
	mu  sync.Mutex // the changes of this process, where the state cannot compare
	// keys: the updates of this process, one at a time per key, where
	// the state cannot compare.
	keys keyLocks
	// refused: the state refused a conditional write (largo.ErrUnsupported);
	// its changes are made under mu from then on.
	refused atomic.Bool

	// Who this process is, in the leases it holds.
	holder, host string
	pid          int
}

// New returns the Store of the state area st.
func New(st largo.State, opt Options) *Store {
	s := &Store{st: st, now: opt.Now, pid: os.Getpid()}
	s.cr, _ = st.(largo.StateCreator)
	s.sw, _ = st.(largo.StateSwapper)
	s.pg, _ = st.(largo.StatePager)
	if s.now == nil {
		s.now = time.Now
	}
	var b [12]byte
	rand.Read(b[:])
	s.holder = hex.EncodeToString(b[:])
	s.host, _ = os.Hostname()
	return s
}

// State returns the state area itself.
func (s *Store) State() largo.State { return s.st }

// Now returns the Store's clock's time.
func (s *Store) Now() time.Time { return s.now() }

// Conditional reports whether the state applies conditions to its
// writes, so that instances sharing it agree (CAS, leases); without, only
// the changes of this process are serialised.
func (s *Store) Conditional() bool { return s.cr != nil && s.sw != nil && !s.refused.Load() }

// swaps reports whether changes go through the state's StateSwapper.
func (s *Store) swaps() bool { return s.sw != nil && !s.refused.Load() }

// refusedBy reports whether err is the state's refusal of conditional
// writes, and if so makes every later change under s.mu.
func (s *Store) refusedBy(err error) bool {
	if errors.Is(err, largo.ErrUnsupported) {
		s.refused.Store(true)
		return true
	}
	return false
}

// getVersion reads key with its version: the state's, or the bytes' own
// where it has none (a change is then made under s.mu).
func (s *Store) getVersion(ctx context.Context, key string) ([]byte, string, error) {
	if s.swaps() {
		return s.sw.GetVersion(ctx, key)
	}
	b, err := s.st.Get(ctx, key)
	return b, string(b), err
}

// swap replaces key, still at version, with b; ErrPrecondition when it
// changed, or when the state just refused the condition (the version
// read is then the state's, which the next read replaces by the bytes').
func (s *Store) swap(ctx context.Context, key string, b []byte, version string) (string, error) {
	if s.swaps() {
		v, err := s.sw.Swap(ctx, key, b, version)
		if s.refusedBy(err) {
			return "", fmt.Errorf("record %s: read again: %w", key, largo.ErrPrecondition)
		}
		return v, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.st.Get(ctx, key)
	if err != nil || string(old) != version {
		return "", fmt.Errorf("record %s changed: %w", key, largo.ErrPrecondition)
	}
	return string(b), s.st.Put(ctx, key, b)
}

// create writes key where none is; ErrExist otherwise.
func (s *Store) create(ctx context.Context, key string, b []byte) error {
	if s.cr != nil && !s.refused.Load() {
		if err := s.cr.Create(ctx, key, b); !s.refusedBy(err) {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.st.Get(ctx, key); err == nil {
		return fmt.Errorf("record %s: %w", key, largo.ErrExist)
	} else if !errors.Is(err, largo.ErrNotFound) {
		return err
	}
	return s.st.Put(ctx, key, b)
}

// deleteIf removes key if it is still at version.
func (s *Store) deleteIf(ctx context.Context, key, version string) error {
	if s.swaps() {
		err := s.sw.DeleteIf(ctx, key, version)
		if s.refusedBy(err) {
			return fmt.Errorf("record %s: read again: %w", key, largo.ErrPrecondition)
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.st.Get(ctx, key)
	if errors.Is(err, largo.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if string(old) != version {
		return fmt.Errorf("record %s changed: %w", key, largo.ErrPrecondition)
	}
	return s.st.Delete(ctx, key)
}

// MaxTries bounds the tries of an Update, and of a lease's taking, whose
// record other writers keep changing.
const MaxTries = 12

// pause waits before the try-th retry of a change that lost a race: a
// few milliseconds growing with the tries, jittered so that writers that
// collided do not collide again in step.
func (s *Store) pause(ctx context.Context, try int) error {
	base := time.Duration(1<<min(try, 6)) * 2 * time.Millisecond
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(base)))
	t := time.NewTimer(base/2 + time.Duration(n.Int64())/2)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// TableOptions tune a Table; the zero value caches nothing.
type TableOptions struct {
	// CacheSize bounds the answers kept in memory; zero keeps none, and
	// every Get reads the state.
	CacheSize int
	// NegativeTTL is how long the absence of a record is believed;
	// zero believes it not at all.
	NegativeTTL time.Duration
	// TTL is how long a record read is believed before it is read
	// again (another instance may have changed it); zero believes it
	// until this process changes it.
	TTL time.Duration
}

// Table is the records of one kind T, under one prefix of the state
// area. Make one with NewTable.
type Table[T any] struct {
	s      *Store
	prefix string
	opt    TableOptions
	cache  *lru.Cache[string, cached[T]] // nil: none
	reads  singleflight.Group
}

// cached is a Get's answer kept.
type cached[T any] struct {
	v  T
	ok bool // false: no record
	at time.Time
}

// NewTable returns the table of records under prefix (a folder's, such
// as "links/").
func NewTable[T any](s *Store, prefix string, opt TableOptions) *Table[T] {
	t := &Table[T]{s: s, prefix: prefix, opt: opt}
	if opt.CacheSize > 0 {
		t.cache = lru.New[string, cached[T]](opt.CacheSize)
	}
	return t
}

// Prefix returns the table's prefix.
func (t *Table[T]) Prefix() string { return t.prefix }

// Entry is a record with its key.
type Entry[T any] struct {
	Key   string
	Value T
	// ModTime is when the record was last written.
	ModTime time.Time
}

// decode reads a record's bytes.
func (t *Table[T]) decode(key string, b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("record %s%s: %w: %v", t.prefix, key, ErrDamaged, err)
	}
	return v, nil
}

// Get returns the record key, or an error wrapping largo.ErrNotFound,
// from the cache while it may be believed. Concurrent misses of one key
// share one read.
func (t *Table[T]) Get(ctx context.Context, key string) (T, error) {
	if c, ok := t.fresh(key); ok {
		if !c.ok {
			var zero T
			return zero, fmt.Errorf("record %s%s: %w", t.prefix, key, largo.ErrNotFound)
		}
		return c.v, nil
	}
	v, err, _ := t.reads.Do(key, func() (any, error) {
		at := t.s.now()
		b, err := t.s.st.Get(ctx, t.prefix+key)
		if errors.Is(err, largo.ErrNotFound) {
			t.keep(key, cached[T]{at: at})
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		v, err := t.decode(key, b)
		if err != nil {
			return nil, err
		}
		t.keep(key, cached[T]{v: v, ok: true, at: at})
		return v, nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// Recent is Get for a record that the cache may hold in a version the
// caller knows is not the latest (a file's record of another version than
// the file now has): one cached more than age ago is read again.
func (t *Table[T]) Recent(ctx context.Context, key string, age time.Duration) (T, error) {
	if t.cache != nil {
		if c, ok := t.cache.Peek(key); ok && t.s.now().Sub(c.at) >= age {
			t.cache.Remove(key)
		}
	}
	return t.Get(ctx, key)
}

// Peek is Get for a walk through many records: it answers from the
// cache when it can, and otherwise reads the record without keeping the
// answer, so that a walk does not push out what requests use.
func (t *Table[T]) Peek(ctx context.Context, key string) (T, error) {
	if c, ok := t.fresh(key); ok {
		if !c.ok {
			var zero T
			return zero, fmt.Errorf("record %s%s: %w", t.prefix, key, largo.ErrNotFound)
		}
		return c.v, nil
	}
	b, err := t.s.st.Get(ctx, t.prefix+key)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.decode(key, b)
}

// fresh returns the cached answer for key while it may be believed.
func (t *Table[T]) fresh(key string) (cached[T], bool) {
	if t.cache == nil {
		return cached[T]{}, false
	}
	c, ok := t.cache.Get(key)
	if !ok {
		return c, false
	}
	age := t.s.now().Sub(c.at)
	switch {
	case !c.ok && age >= t.opt.NegativeTTL:
		return c, false
	case c.ok && t.opt.TTL > 0 && age >= t.opt.TTL:
		return c, false
	}
	return c, true
}

// keep caches an answer for key.
func (t *Table[T]) keep(key string, c cached[T]) {
	if t.cache != nil {
		t.cache.Add(key, c)
	}
}

// Forget drops what the cache knows of key: another writer (a process
// that writes the state directly) changed it.
func (t *Table[T]) Forget(key string) {
	if t.cache != nil {
		t.cache.Remove(key)
	}
}

// ForgetAll drops what the cache knows of every key f reports.
func (t *Table[T]) ForgetAll(f func(key string) bool) {
	if t.cache != nil {
		t.cache.RemoveFunc(func(k string, _ cached[T]) bool { return f(k) })
	}
}

// Put writes the record key, replacing any.
func (t *Table[T]) Put(ctx context.Context, key string, v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := t.s.st.Put(ctx, t.prefix+key, b); err != nil {
		t.Forget(key)
		return err
	}
	t.keep(key, cached[T]{v: v, ok: true, at: t.s.now()})
	return nil
}

// Create writes the record key where none is; an error wrapping
// largo.ErrExist otherwise. Of two instances creating one key at once,
// exactly one succeeds.
func (t *Table[T]) Create(ctx context.Context, key string, v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := t.s.create(ctx, t.prefix+key, b); err != nil {
		t.Forget(key)
		return err
	}
	t.keep(key, cached[T]{v: v, ok: true, at: t.s.now()})
	return nil
}

// Delete removes the record key; a missing one is no error.
func (t *Table[T]) Delete(ctx context.Context, key string) error {
	err := t.s.st.Delete(ctx, t.prefix+key)
	if err != nil {
		t.Forget(key)
		return err
	}
	t.keep(key, cached[T]{at: t.s.now()})
	return nil
}

// Change is what an Update's function decides.
type Change int

// What an Update does with the record.
const (
	// Write writes the record as the function left it.
	Write Change = iota
	// Keep leaves the record as it was: nothing to change.
	Keep
	// Remove removes the record.
	Remove
)

// Update changes the record key by f, only as it was read: f gets the
// record (the zero T when there is none, exists false), changes it in
// place and says what to do with it; if another writer changed the
// record meanwhile, it is read again and f asked again, up to MaxTries
// times, with jittered waits between (ErrConflict after). An error of
// f's ends the update and is returned. It returns the record as it is
// after the update.
func (t *Table[T]) Update(ctx context.Context, key string, f func(v *T, exists bool) (Change, error)) (T, error) {
	full := t.prefix + key
	for try := 0; try < MaxTries; try++ {
		if try > 0 {
			if err := t.s.pause(ctx, try); err != nil {
				var zero T
				return zero, err
			}
		}
		v, done, err := t.updateOnce(ctx, key, full, f)
		if done {
			return v, err
		}
		// Another writer was first: read it again.
	}
	t.Forget(key)
	var zero T
	return zero, fmt.Errorf("record %s: %w", full, ErrConflict)
}

// updateOnce is one try of Update: done false when another writer was
// first. Where the state cannot compare, the try holds the key's lock of
// this process from the read to the write, so that the writers of one
// process never make each other try again (they cannot be told apart
// from another process's, which the state then cannot stop either: one
// instance per such state, see docs/buckets.md).
func (t *Table[T]) updateOnce(ctx context.Context, key, full string, f func(v *T, exists bool) (Change, error)) (T, bool, error) {
	if !t.s.swaps() {
		defer t.s.keys.lock(full)()
	}
	var v T
	b, ver, err := t.s.getVersion(ctx, full)
	exists := err == nil
	if err != nil && !errors.Is(err, largo.ErrNotFound) {
		return v, true, err
	}
	if exists {
		if v, err = t.decode(key, b); err != nil {
			return v, true, err
		}
	}
	change, err := f(&v, exists)
	if err != nil {
		return v, true, err
	}
	switch {
	case change == Keep:
		return v, true, nil
	case change == Remove && !exists:
		t.keep(key, cached[T]{at: t.s.now()})
		return v, true, nil
	case change == Remove:
		err = t.s.deleteIf(ctx, full, ver)
		if err == nil {
			t.keep(key, cached[T]{at: t.s.now()})
			var zero T
			return zero, true, nil
		}
	default:
		nb, merr := json.Marshal(v)
		if merr != nil {
			return v, true, merr
		}
		if exists {
			_, err = t.s.swap(ctx, full, nb, ver)
		} else {
			err = t.s.create(ctx, full, nb)
		}
		if err == nil {
			t.keep(key, cached[T]{v: v, ok: true, at: t.s.now()})
			return v, true, nil
		}
	}
	if !errors.Is(err, largo.ErrPrecondition) && !errors.Is(err, largo.ErrExist) {
		t.Forget(key)
		return v, true, err
	}
	return v, false, nil
}

// Keys yields the keys of the table's records, in no particular order,
// without reading them.
func (t *Table[T]) Keys(ctx context.Context) iter.Seq2[largo.Record, error] {
	return func(yield func(largo.Record, error) bool) {
		for rec, err := range t.s.st.List(ctx, t.prefix) {
			if err == nil {
				rec.Key = rec.Key[len(t.prefix):]
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// All yields the table's records, in no particular order, each read as
// it comes (not cached): a record removed meanwhile is passed over, a
// damaged one yielded as an error that does not end the walk.
func (t *Table[T]) All(ctx context.Context) iter.Seq2[Entry[T], error] {
	return func(yield func(Entry[T], error) bool) {
		for rec, err := range t.Keys(ctx) {
			if err != nil {
				yield(Entry[T]{}, err)
				return
			}
			e, err := t.read(ctx, rec)
			if errors.Is(err, largo.ErrNotFound) {
				continue
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// read reads the record rec lists.
func (t *Table[T]) read(ctx context.Context, rec largo.Record) (Entry[T], error) {
	b, err := t.s.st.Get(ctx, t.prefix+rec.Key)
	if err != nil {
		return Entry[T]{Key: rec.Key}, err
	}
	v, err := t.decode(rec.Key, b)
	return Entry[T]{Key: rec.Key, Value: v, ModTime: rec.ModTime}, err
}

// Page returns at most limit records whose keys sort after after ("":
// from the first), in key order: a queue read oldest first (keys that
// sort by time) without holding more than a page. Fewer than limit means
// the end was reached. Records removed meanwhile are passed over; a
// damaged one is returned with its zero value and counted in the error.
func (t *Table[T]) Page(ctx context.Context, after string, limit int) ([]Entry[T], error) {
	recs, err := t.pageKeys(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Entry[T], 0, len(recs))
	var errs []error
	for _, rec := range recs {
		e, err := t.read(ctx, rec)
		switch {
		case errors.Is(err, largo.ErrNotFound):
			continue
		case err != nil:
			errs = append(errs, err)
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}

// PageKeys is Page without reading the records: at most limit keys
// (with their times) after after, in key order; fewer than limit means
// the end was reached.
func (t *Table[T]) PageKeys(ctx context.Context, after string, limit int) ([]largo.Record, error) {
	return t.pageKeys(ctx, after, limit)
}

// pageKeys returns a page of keys after after.
func (t *Table[T]) pageKeys(ctx context.Context, after string, limit int) ([]largo.Record, error) {
	if t.s.pg != nil {
		recs, err := t.s.pg.Page(ctx, t.prefix, t.prefix+after, limit)
		for i := range recs {
			recs[i].Key = recs[i].Key[len(t.prefix):]
		}
		return recs, err
	}
	var recs []largo.Record
	for rec, err := range t.Keys(ctx) {
		if err != nil {
			return nil, err
		}
		if rec.Key > after {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b largo.Record) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return recs[:min(len(recs), limit)], nil
}

// Sweep removes the records for which orphan reports true (their
// subject is gone: a file removed, a link expired), each only as it was
// read, and returns how many it removed. A record that cannot be read
// is left for the next sweep.
func (t *Table[T]) Sweep(ctx context.Context, orphan func(ctx context.Context, e Entry[T]) bool) (int, error) {
	n := 0
	for rec, err := range t.Keys(ctx) {
		if err != nil {
			return n, err
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		full := t.prefix + rec.Key
		b, ver, err := t.s.getVersion(ctx, full)
		if err != nil {
			continue
		}
		v, err := t.decode(rec.Key, b)
		if err != nil || !orphan(ctx, Entry[T]{Key: rec.Key, Value: v, ModTime: rec.ModTime}) {
			continue
		}
		if t.s.deleteIf(ctx, full, ver) == nil {
			t.keep(rec.Key, cached[T]{at: t.s.now()})
			n++
		}
	}
	return n, nil
}

// keyLocks is a lock per key, made while it is wanted.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	sync.Mutex
	waiters int
}

// lock takes the lock of key and returns what releases it.
func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.waiters++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
