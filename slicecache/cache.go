// Package slicecache keeps slices of remote objects (a bucket's) in a
// folder of the local disk, so that an object many clients read at once
// is fetched from its store about once and then sent from local files by
// sendfile, as a folder's files are.
//
// An object is cut into slices of a fixed size (its last one may be
// shorter), each a file of its own, named after the object's key, its
// version (an ETag: a changed object is another object, never served from
// the slices of the one before), its size and the slice size. A slice is
// fetched whole the first time a reader needs a byte of it, and once
// however many readers need it at that moment: one fill, which the others
// wait for. While a reader sends a slice, the next one is fetched, so that
// a reader that keeps up meets no wait. A fill writes a temporary file
// that is synced and then renamed to the slice's name: a crash never
// leaves part of a slice under a slice's name, and the temporary files it
// leaves are removed at the next start, when the slices already there are
// taken up again, the most recently filled first.
//
// The slices held are bounded by a byte cap: past it, the least recently
// used ones are removed. A reader that has such a slice open reads it to
// its end; the disk space comes back when it closes it, so the folder
// may hold up to one slice per reader more than the cap, and one per fill
// in flight. The cache keeps no descriptor of a slice open between reads:
// a Reader holds one, of the slice it reads, and a fill one, of the slice
// it writes, so descriptors are bounded by the readers. One process at a
// time uses a folder (a lock file in it); a folder holding anything but
// the cache's own files is refused, so that nothing else is ever removed.
//
// A Cache is safe for concurrent use. A Reader is used by one goroutine,
// except as largo.SliceFile allows.
package slicecache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// DefaultSliceSize is the size of the slices unless Config says otherwise:
// large enough that a long download costs few requests to the store and
// few files, small enough that a short range (a player's probe) costs
// little more than itself.
const DefaultSliceSize = 8 << 20

// MinSlices is how many slices the cap must hold at least: with fewer,
// slices being read at once would push each other out.
const MinSlices = 8

// Config says where a Cache keeps its slices and how many. Dir and Max
// are required.
type Config struct {
	// Dir is the folder of the slices, made (0700) when missing. It may
	// hold only what a Cache put there.
	Dir string
	// Max is the most bytes of slices held; at least MinSlices slices.
	Max int64
	// SliceSize is the size of every slice but an object's last; zero
	// means DefaultSliceSize. A changed size leaves the slices of the
	// size before to be removed as the least recently used.
	SliceSize int64
	// Log receives what the cache cannot do with its folder (a slice it
	// cannot remove); nil discards it.
	Log *slog.Logger
}

// Object is one version of a remote object.
type Object struct {
	// Key names the object among all those the cache holds (a bucket's
	// name and the object's key, say).
	Key string
	// Version tells this version from every other of the object (its
	// ETag): slices are never shared between versions.
	Version string
	// Size is the object's length in bytes.
	Size int64
}

// Fill fetches n bytes of an object from offset off (a ranged GET), the
// whole answer's body being those bytes. The cache reads the body to its
// n-th byte and closes it; a body that ends before is a failed fill.
type Fill func(ctx context.Context, off, n int64) (io.ReadCloser, error)

// ErrClosed is the error of a reader's call after its cache was closed.
var ErrClosed = errors.New("slice cache closed")

// Cache holds slices of objects in a folder. Make one with New.
type Cache struct {
	dir   string
	max   int64
	slice int64
	log   *slog.Logger
	lock  *os.File // the folder's lock file, held while the cache is open

	mu     sync.Mutex
	held   map[string]*list.Element // of *entry, by slice name
	lru    list.List                // of *entry, the most recently used first
	bytes  int64                    // the sizes of the slices held
	fills  map[string]*flight       // fills in flight, by slice name
	closed bool

	ctx    context.Context // the fills' own, ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the fills' goroutines

	stats struct{ hits, fills, filled, evicted atomic.Int64 }
}

// entry is a slice held.
type entry struct {
	name string // relative to the folder: SHARD/NAME
	size int64
}

// flight is a fill in flight: those who need its slice wait for done.
type flight struct {
	done    chan struct{}
	err     error // set before done is closed
	waiters int   // readers waiting; the fill ends when the last leaves
	cancel  context.CancelFunc
}

// Stats are what a Cache has done since New.
type Stats struct {
	// Hits counts slices opened from the folder; Fills those fetched,
	// and Filled their bytes; Evicted the slices removed for the cap.
	Hits, Fills, Filled, Evicted int64
	// Bytes and Slices are what the folder holds now.
	Bytes  int64
	Slices int
}

// New opens the cache in cfg.Dir: it takes the folder's lock, removes the
// temporary files of fills a crash cut, and takes up the slices already
// there, removing the least recently filled ones beyond the cap.
func New(cfg Config) (*Cache, error) {
	if cfg.SliceSize == 0 {
		cfg.SliceSize = DefaultSliceSize
	}
	switch {
	case cfg.Dir == "":
		return nil, errors.New("slice cache: no folder")
	case cfg.SliceSize < 1:
		return nil, fmt.Errorf("slice cache: slice size %d", cfg.SliceSize)
	case cfg.Max < MinSlices*cfg.SliceSize:
		return nil, fmt.Errorf("slice cache: a cap of %d bytes holds fewer than %d slices of %d bytes", cfg.Max, MinSlices, cfg.SliceSize)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("slice cache: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("slice cache: %v", err)
	}
	c := &Cache{
		dir:   dir,
		max:   cfg.Max,
		slice: cfg.SliceSize,
		log:   cfg.Log,
		held:  map[string]*list.Element{},
		fills: map[string]*flight{},
	}
	if c.lock, err = lockDir(dir); err != nil {
		return nil, err
	}
	found, err := scan(dir)
	if err != nil {
		c.lock.Close()
		return nil, err
	}
	for _, s := range found { // the least recently filled first
		c.held[s.name] = c.lru.PushFront(&entry{name: s.name, size: s.size})
		c.bytes += s.size
	}
	c.evict()
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// SliceSize returns the size of every slice but an object's last.
func (c *Cache) SliceSize() int64 { return c.slice }

// Dir returns the cache's folder, absolute.
func (c *Cache) Dir() string { return c.dir }

// Stats returns what the cache has done and holds.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	b, n := c.bytes, len(c.held)
	c.mu.Unlock()
	return Stats{
		Hits:    c.stats.hits.Load(),
		Fills:   c.stats.fills.Load(),
		Filled:  c.stats.filled.Load(),
		Evicted: c.stats.evicted.Load(),
		Bytes:   b,
		Slices:  n,
	}
}

// Close ends the fills in flight and waits for them, and gives the
// folder's lock up; the slices stay for the next start. Readers still open
// fail their next fetch with ErrClosed; the slice they have open they may
// read to its end.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	return c.lock.Close()
}

// open returns slice i of the object r reads, opened at its start: from
// the folder, or once a fill (its own, or one in flight) has put it
// there. Waiting ends with ctx.
func (c *Cache) open(ctx context.Context, r *Reader, i int64) (*os.File, error) {
	name, n := r.sliceName(i), r.sliceLen(i)
	for tries := 0; ; tries++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if e, ok := c.held[name]; ok {
			f, err := c.openHeld(e, n)
			c.mu.Unlock()
			if err == nil {
				c.stats.hits.Add(1)
				return f, nil
			}
			continue // it was damaged, and is forgotten: fill it again
		}
		if tries >= 3 {
			// Filled, and pushed out before it could be opened, thrice:
			// the cap is far too small for the readers.
			c.mu.Unlock()
			return nil, fmt.Errorf("slice cache: %s: removed as soon as fetched; the cap (%d bytes) is too small for the readers", r.obj.Key, c.max)
		}
		fl := c.fills[name]
		if fl == nil {
			fl = c.start(r, name, i, n)
		}
		fl.waiters++
		c.mu.Unlock()
		if err := c.await(ctx, name, fl); err != nil {
			return nil, err
		}
	}
}

// openHeld opens the slice e, the most recently used from now on, and
// checks its length. A slice gone or damaged behind the cache's back (a
// length other than n) is forgotten, and an error returned. c.mu is held.
func (c *Cache) openHeld(e *list.Element, n int64) (*os.File, error) {
	en := e.Value.(*entry)
	c.lru.MoveToFront(e)
	f, err := os.Open(filepath.Join(c.dir, en.name))
	if err == nil {
		st, serr := f.Stat()
		if serr == nil && st.Size() == n {
			return f, nil
		}
		f.Close()
		err = fmt.Errorf("slice %s: %d bytes, not %d", en.name, st.Size(), n)
		if serr != nil {
			err = serr
		}
	}
	c.log.Warn("slice cache: a slice was changed behind its back; fetching it again", "slice", en.name, "err", err)
	c.remove(e)
	return nil, err
}

// prefetch starts the fill of slice i of what r reads, unless it is held
// or in flight already. Nobody waits for it: it runs to its end unless
// the cache closes.
func (c *Cache) prefetch(r *Reader, i int64) {
	name := r.sliceName(i)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.held[name] != nil || c.fills[name] != nil {
		return
	}
	c.start(r, name, i, r.sliceLen(i))
}

// start begins the fill of slice i (name, n bytes) of what r reads, in a
// goroutine of the cache's. c.mu is held.
func (c *Cache) start(r *Reader, name string, i, n int64) *flight {
	ctx, cancel := context.WithCancel(c.ctx)
	fl := &flight{done: make(chan struct{}), cancel: cancel}
	c.fills[name] = fl
	c.wg.Add(1)
	go c.run(ctx, fl, name, i*c.slice, n, r.fill)
	return fl
}

// await waits for the fill fl of the slice name, or for ctx. The last
// reader to give up on a fill ends it, and a reader that comes after
// starts another.
func (c *Cache) await(ctx context.Context, name string, fl *flight) error {
	select {
	case <-fl.done:
		return fl.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	fl.waiters--
	if fl.waiters == 0 {
		fl.cancel()
		if c.fills[name] == fl {
			delete(c.fills, name)
		}
	}
	c.mu.Unlock()
	return ctx.Err()
}

// run is a fill's goroutine: it writes the slice, and tells its waiters.
func (c *Cache) run(ctx context.Context, fl *flight, name string, off, n int64, fill Fill) {
	defer c.wg.Done()
	defer fl.cancel()
	err := c.write(ctx, name, off, n, fill)
	c.mu.Lock()
	if c.fills[name] == fl {
		delete(c.fills, name)
	}
	if err == nil {
		c.stats.fills.Add(1)
		c.stats.filled.Add(n)
		c.add(name, n)
	}
	fl.err = err
	close(fl.done)
	c.mu.Unlock()
}

// copyBufs are the buffers fills copy through: one per fill in flight.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// write fetches n bytes from off into a temporary file beside the slice's
// place, syncs it, and renames it into place.
func (c *Cache) write(ctx context.Context, name string, off, n int64, fill Fill) error {
	shard := filepath.Join(c.dir, filepath.Dir(name))
	if err := os.Mkdir(shard, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("slice cache: %v", err)
	}
	tmp, err := os.CreateTemp(shard, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("slice cache: %v", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	body, err := fill(ctx, off, n)
	if err != nil {
		return err
	}
	bp := copyBufs.Get().(*[]byte)
	got, err := io.CopyBuffer(onlyWriter{tmp}, io.LimitReader(body, n), *bp)
	copyBufs.Put(bp)
	body.Close()
	switch {
	case err != nil && errors.Is(err, errWrite):
		return fmt.Errorf("slice cache: %w", err)
	case err != nil:
		return err
	case got < n:
		return fmt.Errorf("the store's answer ended at %d of %d bytes from %d: %w", got, n, off, io.ErrUnexpectedEOF)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("slice cache: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("slice cache: %v", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.dir, name)); err != nil {
		return fmt.Errorf("slice cache: %v", err)
	}
	done = true
	return nil
}

// errWrite marks the errors of writing a slice's file, told apart from
// those of reading the store's answer.
var errWrite = errors.New("writing a slice")

// onlyWriter hides the file's ReadFrom, so that io.CopyBuffer copies
// through the pooled buffer, and marks its errors.
type onlyWriter struct{ f *os.File }

func (w onlyWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = fmt.Errorf("%w: %w", errWrite, err)
	}
	return n, err
}

// add takes up the slice name of n bytes just filled, the most recently
// used, and removes what the cap no longer holds. c.mu is held.
func (c *Cache) add(name string, n int64) {
	if e, ok := c.held[name]; ok { // two fills of one slice, one after the other
		c.lru.MoveToFront(e)
		return
	}
	c.held[name] = c.lru.PushFront(&entry{name: name, size: n})
	c.bytes += n
	c.evict()
}

// evict removes the least recently used slices until the cap holds the
// rest. c.mu is held (or the cache not yet shared).
func (c *Cache) evict() {
	for c.bytes > c.max && c.lru.Len() > 1 {
		c.remove(c.lru.Back())
		c.stats.evicted.Add(1)
	}
}

// remove forgets the slice e and removes its file. c.mu is held.
func (c *Cache) remove(e *list.Element) {
	en := c.lru.Remove(e).(*entry)
	delete(c.held, en.name)
	c.bytes -= en.size
	if err := os.Remove(filepath.Join(c.dir, en.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("slice cache: removing a slice", "slice", en.name, "err", err)
	}
}
