// Package filecache is an open-file cache: a read-only largo.Store in
// front of another that keeps, for the small files read most recently,
// what serving them again costs: their metadata (largo.Info, the ETag of
// the version kept) and their bytes. A file kept is answered with no
// system call on the file (no open, stat, read or close), and its reader
// may keep what it derives from the version once (Memo: the answer's
// headers, computed once per version rather than per request).
//
// What is kept is never served stale past a known bound:
//   - a change made through the server is seen at once: the write
//     pipeline tells Changed of each commit, removal and move
//     (ingest.Changes) before the write that made it is answered, and
//     from then on every file kept is looked at again (one Stat of the
//     store, its ETag compared) before it is next served, so that no
//     name that reaches it (a symbolic link on a folder's way) is
//     missed;
//   - on a folder, a change made behind the server (another program
//     writing in it) is seen at once, with no look at the file per
//     answer: a Watcher (disk.Watcher, inotify) watches the folders on
//     the way to each file kept, and is asked before each answer whether
//     anything changed in them since the file was last found current
//     (one read of its queue, empty most of the time); the kernel queues
//     a change's notice before the call that made it returns. After any
//     change in the folders watched, every file kept is looked at again,
//     once; and what was derived from a version is derived again every
//     MemoLife, without a look. A file
//     of more than one name (a hard link elsewhere, whose changes its own
//     folder is not told of), and any file where the Watcher cannot
//     watch, is looked at as without a Watcher;
//   - without a Watcher (on a bucket, another instance writing to it) a
//     change behind the server is seen within the Window: a file kept is
//     looked at again once the Window has passed since it was last
//     looked at (on a bucket, the look is a HEAD, and its ETag decides).
//     A Window of zero looks at it before every answer: one stat on a
//     folder, in place of the open, stat, read and close it saves.
//
// A version is kept whole or not at all: bytes read while the file
// changed under the reader (its size or time after the read differ from
// before) are not kept, and the file is opened again and served as it
// is.
//
// It is bounded: at most MaxBytes of files' bytes and MaxFiles files,
// the least recently used forgotten first (package internal/lru); only
// files of at most MaxFile bytes are kept; a descriptor is held only
// while a file is read in, never kept open, so the cache holds none.
//
// A file is kept the second time it is asked for within a while, not
// the first: the first time it is opened in the store and returned as
// the store opens it (with sendfile from a folder), and only its name's
// fingerprint is remembered, in a table of twice MaxFiles slots. So a
// scan of more files than the cache holds (each asked for once in a
// while) costs what it costs without the cache, instead of reading every
// file into memory to push out one that was not asked for again either.
//
// Access is not its business: it is asked for the physical names the
// access gate decided (a gate.Store over it), on every request, for the
// request's principal. It keeps files, never a decision.
//
// A Store is safe for concurrent use.
package filecache

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"iter"
	"sync/atomic"
	"time"

	"largo"
	"largo/internal/lru"
)

// The defaults of Options.
const (
	// DefaultMaxBytes is what the bytes of the files kept weigh at most.
	DefaultMaxBytes = 16 << 20
	// DefaultMaxFile is the largest file kept: larger ones are sent from
	// the store (with sendfile, from a folder) as they would be without
	// the cache.
	DefaultMaxFile = 64 << 10
	// DefaultMaxFiles is how many files are kept at most.
	DefaultMaxFiles = 4096
	// BucketWindow is how long a file of a bucket kept is served before
	// it is looked at again (a HEAD), as largo serve sets it by default:
	// the most a change made by another instance stays unseen. A
	// folder's files are looked at before every answer (Window zero).
	BucketWindow = time.Second
)

// Options bounds a Store. The zero value of each field but Window means
// its default.
type Options struct {
	// MaxBytes bounds the bytes of the files kept, in all.
	MaxBytes int64
	// MaxFile is the largest file kept, in bytes.
	MaxFile int64
	// MaxFiles bounds the number of files kept.
	MaxFiles int
	// Window is how long a file kept is served before it is looked at
	// again (Stat of the store, its ETag compared); zero, before every
	// answer.
	Window time.Duration
	// Watch, when set, tells of changes in the store's folders (on a
	// folder, disk.Watcher): a file kept whose folders it watches is
	// served with no look at it, Window or not, until a change is told
	// in any of them.
	Watch Watcher
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Watcher tells of the changes made in a store's folders by anyone
// (disk.Watcher, with inotify).
type Watcher interface {
	// Watch watches the folders on the way to the physical name, and
	// returns the count of changes as Drain does, read once they are
	// watched, and whether all of them are.
	Watch(name string) (changes uint64, ok bool)
	// Drain returns the count of changes told so far in the folders
	// watched, changes lost counted as well: while it stays the same,
	// nothing watched changed.
	Drain() uint64
}

// Store keeps the small files of the store it wraps. Make one with New.
type Store struct {
	inner largo.Store
	opt   Options
	files *lru.Cache[string, *entry]
	// gen counts the changes told (Changed): a file is served as kept
	// only while no change was told since it was last looked at.
	gen atomic.Uint64
	// seen holds the fingerprints of names asked for once and not kept
	// (see admit), at the slot their hash names.
	seen []atomic.Uint32
	seed maphash.Seed
}

var _ largo.Store = (*Store)(nil)

// entryWeight is what an entry weighs besides its bytes and its name:
// the entry, its stamp, the cache's list element and map slot.
const entryWeight = 256

// New returns a Store that keeps the small files of inner.
func New(inner largo.Store, opt Options) *Store {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.MaxFile <= 0 {
		opt.MaxFile = DefaultMaxFile
	}
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxFiles
	}
	opt.Window = max(opt.Window, 0)
	if opt.Now == nil {
		opt.Now = time.Now
	}
	weigh := func(e *entry) int64 { return int64(len(e.body)+len(e.name)) + entryWeight }
	return &Store{
		inner: inner, opt: opt,
		files: lru.NewSized[string](opt.MaxFiles, opt.MaxBytes, weigh),
		seen:  make([]atomic.Uint32, 2*opt.MaxFiles),
		seed:  maphash.MakeSeed(),
	}
}

// admit reports whether name, not kept, is to be kept now: when it was
// asked for once already since its slot last changed hands. Otherwise its
// fingerprint takes the slot, and it is served from the store.
func (s *Store) admit(name string) bool {
	h := maphash.String(s.seed, name)
	slot := &s.seen[h%uint64(len(s.seen))]
	fp := uint32(h>>32) | 1 // never 0, the empty slot
	if slot.Load() == fp {
		slot.Store(0)
		return true
	}
	slot.Store(fp)
	return false
}

// Window returns how long a file kept is served before it is looked at
// again.
func (s *Store) Window() time.Duration { return s.opt.Window }

// entry is one version of a file kept.
type entry struct {
	name  string
	info  largo.Info
	body  []byte // the file's bytes; never written once kept
	stamp atomic.Pointer[stamp]
	// single is set for a file with one name only: one whose changes
	// a Watcher of its folders is told of, not through a hard link
	// elsewhere.
	single bool
}

// stamp is when an entry was last found current: the changes told by
// then (Store.gen, and the Watcher's when watched), the time, and what
// its reader derived (memo) since born.
type stamp struct {
	gen     uint64
	watched bool   // its folders are watched, and it is single
	wgen    uint64 // the Watcher's count of changes then
	at      time.Time
	born    time.Time
	memo    *Memo
}

// MemoLife is the longest a Memo is kept: what was derived from a
// version besides its bytes (the Repr-Digest a background hash records
// behind the server's writes) shows within it.
const MemoLife = time.Second

// Memo holds one value derived from a version of a file kept, for its
// reader to derive it once (package serve: the answer's headers). It is
// forgotten, and derived again, after a change told (Changed), when the
// file is found changed, and at the latest MemoLife after it was made,
// so that what it was derived from besides the file's bytes (a digest
// recorded meanwhile) is never older than that. A Memo is safe for
// concurrent use; every value stored in one must be of the same type.
type Memo struct{ v atomic.Value }

// Load returns the value stored, nil for none.
func (m *Memo) Load() any { return m.v.Load() }

// Store keeps v.
func (m *Memo) Store(v any) { m.v.Store(v) }

// Stat implements largo.Store: the store's own answer.
func (s *Store) Stat(ctx context.Context, name string) (largo.Info, error) {
	return s.inner.Stat(ctx, name)
}

// List implements largo.Store: the store's own listing.
func (s *Store) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return s.inner.List(ctx, name)
}

// Open implements largo.Store: a file kept and current is a *File over
// its bytes; any other is opened in the store, kept when it may be, and
// otherwise returned as the store opened it.
func (s *Store) Open(ctx context.Context, name string) (largo.File, error) {
	e, kept := s.files.Get(name)
	if kept {
		if st := s.current(ctx, e); st != nil {
			return &File{e: e, memo: st.memo}, nil
		}
	}
	// A file kept until now, changed, is kept again at once: it is
	// asked for.
	return s.fill(ctx, name, kept)
}

// current returns the entry's stamp when it may be served as kept: no
// change told since it was found current, and its folders watched or it
// looked at within the Window; otherwise it looks at the file again, and
// returns a new stamp when the version kept is still the store's, or nil
// (and forgets the entry) when it is not.
func (s *Store) current(ctx context.Context, e *entry) *stamp {
	st := e.stamp.Load()
	now := s.opt.Now()
	gen := s.gen.Load()
	if st.watched && st.gen == gen && s.opt.Watch.Drain() == st.wgen && now.Sub(st.at) < MemoLife {
		// Nothing told since the last look, which was less than
		// MemoLife ago. Past it the file is looked at again even so:
		// a name made for it meanwhile in a folder not watched (a hard
		// link) is told to no folder of its, and the look finds the
		// second name, and the file served, from then on, as one with
		// two.
		return st
	}
	if !st.watched && st.gen == gen && now.Sub(st.at) < s.opt.Window {
		return st
	}
	wgen, watched := s.watch(e.name)
	in, err := s.inner.Stat(ctx, e.name)
	if err != nil || in.ETag != e.info.ETag || in.Size != e.info.Size || in.IsDir {
		s.forget(e)
		return nil
	}
	watched = watched && e.single && s.oneName(ctx, e.name)
	if st.gen == gen && now.Sub(st.born) < MemoLife {
		// The same version, and no change told: what was derived from
		// it stays, and with no Window nor watch there is no time to
		// move on.
		if s.opt.Window == 0 && !watched && !st.watched {
			return st
		}
		fresh := &stamp{gen: gen, watched: watched, wgen: wgen, at: now, born: st.born, memo: st.memo}
		e.stamp.Store(fresh)
		return fresh
	}
	fresh := newStamp(gen, now)
	fresh.watched, fresh.wgen = watched, wgen
	e.stamp.Store(fresh)
	return fresh
}

// watch has the folders on the way to name watched, if the Store has a
// Watcher, and returns its count of changes from then on: a look at the
// file after it sees every change made before, and the count moves with
// every change after. watched is false when the folders are not all
// watched.
func (s *Store) watch(name string) (wgen uint64, watched bool) {
	if s.opt.Watch == nil {
		return 0, false
	}
	return s.opt.Watch.Watch(name)
}

// newStamp is the stamp of an entry found current at at, with the
// changes told by then, and an empty memo.
func newStamp(gen uint64, at time.Time) *stamp {
	return &stamp{gen: gen, at: at, born: at, memo: new(Memo)}
}

// forget drops e, unless another version took its place meanwhile.
func (s *Store) forget(e *entry) {
	s.files.Update(e.name, func(old *entry, ok bool) (*entry, bool) {
		return old, ok && old != e
	})
}

// fill opens name in the store, and keeps it when it is small, has an
// ETag, is asked for the second time (admit) or was admitted already,
// did not change while it was read, and no change was told meanwhile.
func (s *Store) fill(ctx context.Context, name string, admitted bool) (largo.File, error) {
	gen, at := s.gen.Load(), s.opt.Now()
	f, err := s.inner.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	in := f.Info()
	if in.ETag == "" || in.Size > s.opt.MaxFile || in.IsDir || !admitted && !s.admit(name) {
		return f, nil
	}
	// Watched from before the read: a change made from now on is told,
	// and one made before is seen by the look at the name below.
	wgen, watched := s.watch(name)
	body := make([]byte, in.Size)
	_, rerr := io.ReadFull(f, body)
	var single bool
	if rerr == nil {
		single, rerr = unchanged(f, in)
	}
	if rerr == nil && watched {
		// The file opened is still the one the name reaches: it was not
		// replaced before its folders were watched.
		if now, err := s.inner.Stat(ctx, name); err != nil || now.ETag != in.ETag {
			rerr = errChanged
		}
	}
	if rerr != nil {
		// Read while it changed, or not read at all: served as the
		// store opens it now, and not kept.
		f.Close()
		return s.inner.Open(ctx, name)
	}
	f.Close()
	e := &entry{name: name, info: in, body: body, single: single}
	st := newStamp(gen, at)
	st.watched, st.wgen = watched && single, wgen
	e.stamp.Store(st)
	if s.gen.Load() == gen {
		s.files.Add(name, e)
	}
	return &File{e: e, memo: st.memo}, nil
}

// oneName reports whether the file name reaches has one name only, as
// its descriptor says: false where that cannot be told.
func (s *Store) oneName(ctx context.Context, name string) bool {
	f, err := s.inner.Open(ctx, name)
	if err != nil {
		return false
	}
	defer f.Close()
	single, err := unchanged(f, f.Info())
	return err == nil && single
}

// errChanged is a file that changed while it was read in.
var errChanged = errors.New("changed while read")

// unchanged checks, for a file of the operating system, that its size
// and time after it was read are those it was opened with: a version
// read while it was written is not one to keep. An object of a bucket
// is one version, however long its read. single reports a file of the
// operating system with one name only (one link).
func unchanged(f largo.File, in largo.Info) (single bool, err error) {
	of, ok := f.(largo.OSFile)
	if !ok {
		return false, nil
	}
	fi, err := of.OSFile().Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() != in.Size || !fi.ModTime().Equal(in.ModTime) {
		return false, errChanged
	}
	return oneLink(fi), nil
}

// Changed tells the cache that name (a file, or a folder with all below
// it) was changed through the server: written, removed or moved. From
// now on every file kept is looked at again before it is next served,
// whatever name reached it. It is quick and safe for concurrent use:
// the write pipeline calls it (ingest.Changes) before it answers.
func (s *Store) Changed(name string) {
	s.gen.Add(1)
	s.files.Remove(name)
}

// Keeps reports whether the file name is kept now, without looking at
// it: a hint that a request for it is answered from memory.
func (s *Store) Keeps(name string) bool {
	_, ok := s.files.Peek(name)
	return ok
}

// Len returns the number of files kept, and what they weigh (their bytes
// and what keeping each costs besides).
func (s *Store) Len() (files int, bytes int64) {
	return s.files.Len(), s.files.Weight()
}
