package slicecache

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
)

// Reader reads one version of an object through the cache: an
// io.ReadSeekCloser, and a largo.SliceFile's Slice, whose slices a
// transfer hands to the kernel. It holds at most one descriptor, of the
// slice at its offset.
type Reader struct {
	c    *Cache
	ctx  context.Context
	obj  Object
	fill Fill
	id   string // names the object's slices (objectID)

	mu sync.Mutex // for Seek(0, io.SeekCurrent) while a slice is sent
	// cur is the slice at the offset, opened, or nil; its descriptor's
	// offset is the reader's (less start), which the kernel moves as it
	// sends, so that it is the truth about where the reader is.
	cur        *os.File
	start, end int64 // the object's offsets of cur's first byte and just past its last
	pos        int64 // the offset, while cur is nil
	last       int64 // the index of the slice loaded before cur, or -1
	closed     bool
}

// readAhead is how many slices past the one loaded a reader that reads
// on from slice to slice has fetched ahead: fills of the bucket at once
// that keep a fast client from waiting on one fetch at a time. A reader
// that starts (a range, a resume) has the next one fetched only, so that
// a probe of a few bytes costs the bucket two slices at most.
const readAhead = 3

// Open returns a reader of the version obj of an object, whose slices
// missing from the folder fill fetches. Waiting for a fill ends with ctx
// (the request's). Nothing is fetched before the first read.
func (c *Cache) Open(ctx context.Context, obj Object, fill Fill) *Reader {
	return &Reader{c: c, ctx: ctx, obj: obj, fill: fill, id: objectID(obj, c.slice), last: -1}
}

// sliceName is the name of slice i.
func (r *Reader) sliceName(i int64) string { return sliceName(r.id, i) }

// sliceLen is the length of slice i.
func (r *Reader) sliceLen(i int64) int64 {
	return min(r.c.slice, r.obj.Size-i*r.c.slice)
}

// offset returns where the reader is. r.mu is held.
func (r *Reader) offset() (int64, error) {
	if r.cur == nil {
		return r.pos, nil
	}
	off, err := r.cur.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	return r.start + off, nil
}

// drop closes cur, leaving the reader at pos. r.mu is held.
func (r *Reader) drop(pos int64) {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
	r.pos = pos
}

// load opens the slice that holds pos (< the object's size) as cur, at
// pos, and starts fetching the next one, or the next readAhead when the
// reader came from the slice before. r.mu is held, and released while
// the slice is waited for; cur is nil meanwhile.
func (r *Reader) load(pos int64) error {
	i := pos / r.c.slice
	ahead := int64(1)
	if i > 0 && r.last == i-1 {
		ahead = readAhead
	}
	r.mu.Unlock()
	f, err := r.c.open(r.ctx, r, i)
	for j := i + 1; err == nil && j <= i+ahead && j*r.c.slice < r.obj.Size; j++ {
		r.c.prefetch(r, j)
	}
	r.mu.Lock()
	if err != nil {
		return fmt.Errorf("%s: %w", r.obj.Key, err)
	}
	if r.closed {
		f.Close()
		return os.ErrClosed
	}
	start := i * r.c.slice
	if pos > start {
		if _, err := f.Seek(pos-start, io.SeekStart); err != nil {
			f.Close()
			return err
		}
	}
	r.cur, r.start, r.end, r.last = f, start, start+r.sliceLen(i), i
	return nil
}

// Read implements io.Reader: from the slice at the offset, fetched first
// if the folder does not hold it. It returns at most what that slice
// holds from there.
func (r *Reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, os.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if r.cur == nil {
			if r.pos >= r.obj.Size {
				return 0, io.EOF
			}
			if err := r.load(r.pos); err != nil {
				return 0, err
			}
		}
		n, err := r.cur.Read(p)
		switch {
		case n > 0:
			return n, nil
		case err == io.EOF:
			r.drop(r.end) // on to the next slice
		case err == nil:
			return 0, io.ErrNoProgress
		default:
			return 0, err
		}
	}
}

// Slice implements largo.SliceFile: the slice at the offset, positioned
// there, fetched first if the folder does not hold it.
func (r *Reader) Slice() (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, os.ErrClosed
	}
	for {
		pos, err := r.offset()
		if err != nil {
			return nil, err
		}
		if r.cur != nil && pos < r.end {
			return r.cur, nil
		}
		r.drop(pos)
		if pos >= r.obj.Size {
			return nil, io.EOF
		}
		if err := r.load(pos); err != nil {
			return nil, err
		}
	}
}

// Seek implements io.Seeker. It only moves the offset (within the slice
// open, its descriptor's); the next read fetches what it needs. Offsets
// past the end read as EOF. Seek(0, io.SeekCurrent) changes nothing, and
// may be called while a slice is being sent.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, os.ErrClosed
	}
	pos, err := r.offset()
	if err != nil {
		return 0, err
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		if offset == 0 {
			return pos, nil
		}
		offset += pos
	case io.SeekEnd:
		offset += r.obj.Size
	default:
		return 0, fmt.Errorf("%s: seek: invalid whence %d", r.obj.Key, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("%s: seek: negative offset %d", r.obj.Key, offset)
	}
	if r.cur != nil && offset >= r.start && offset < r.end {
		if _, err := r.cur.Seek(offset-r.start, io.SeekStart); err != nil {
			return 0, err
		}
		return offset, nil
	}
	r.drop(offset)
	return offset, nil
}

// Close closes the slice open. The reader cannot be used after.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.drop(0)
	return nil
}
