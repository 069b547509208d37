package slicecache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/internal/poll"
)

// testSlice is the slice size of the tests: small, so that objects of a
// few hundred bytes have many slices.
const testSlice = 64

// remote is a store of objects for fills, counting what it is asked.
type remote struct {
	mu    sync.Mutex
	objs  map[string][]byte // by key
	fills map[string]int    // by "key@off"
	gate  chan struct{}     // when set, each fill waits for it to close
	short bool              // answer one byte short
}

func newRemote() *remote {
	return &remote{objs: map[string][]byte{}, fills: map[string]int{}}
}

func (m *remote) put(key string, b []byte) Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = b
	return Object{Key: key, Version: fmt.Sprintf("v%x", len(b)+int(b[0])), Size: int64(len(b))}
}

func (m *remote) fill(key string) Fill {
	return func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		m.mu.Lock()
		m.fills[fmt.Sprintf("%s@%d", key, off)]++
		b, gate, short := m.objs[key], m.gate, m.short
		m.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if short {
			n--
		}
		return io.NopCloser(bytes.NewReader(b[off : off+n])), nil
	}
}

func (m *remote) count(key string, off int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fills[fmt.Sprintf("%s@%d", key, off)]
}

func newCache(t *testing.T, dir string, max int64) *Cache {
	t.Helper()
	c, err := New(Config{Dir: dir, Max: max, SliceSize: testSlice})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func readAll(t *testing.T, r *Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadAcrossSlices reads objects whose sizes fall on, before and past
// slice boundaries, whole and from offsets, and again from the folder.
func TestReadAcrossSlices(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	for _, size := range []int{1, testSlice - 1, testSlice, testSlice + 1, 5*testSlice + 17} {
		key := fmt.Sprintf("obj%d", size)
		want := random(size, uint64(size))
		obj := m.put(key, want)
		for range 2 {
			r := c.Open(context.Background(), obj, m.fill(key))
			if got := readAll(t, r); !bytes.Equal(got, want) {
				t.Fatalf("size %d: read %d bytes, not the object's", size, len(got))
			}
			for _, off := range []int64{0, 1, testSlice - 1, testSlice, int64(size) - 1, int64(size), int64(size) + 5} {
				if _, err := r.Seek(off, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				got := readAll(t, r)
				if off >= int64(size) {
					if len(got) != 0 {
						t.Fatalf("size %d, from %d: %d bytes past the end", size, off, len(got))
					}
					continue
				}
				if !bytes.Equal(got, want[off:]) {
					t.Fatalf("size %d, from %d: wrong bytes", size, off)
				}
			}
			r.Close()
		}
		for off := int64(0); off < int64(size); off += testSlice {
			if n := m.count(key, off); n != 1 {
				t.Errorf("size %d: slice at %d fetched %d times, want once", size, off, n)
			}
		}
	}
}

// TestOneFillForMany has twenty readers ask for one slice at once: the
// store is asked once, and each gets the bytes.
func TestOneFillForMany(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	want := random(3*testSlice, 1)
	obj := m.put("hot", want)
	m.gate = make(chan struct{})
	const readers = 20
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			r := c.Open(context.Background(), obj, m.fill("hot"))
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, want) {
				err = errors.New("wrong bytes")
			}
			errs <- err
		})
	}
	first := sliceName(objectID(obj, testSlice), 0)
	poll.Wait(t, 10*time.Second, "every reader waiting for the first slice", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		fl := c.fills[first]
		return fl != nil && fl.waiters == readers
	})
	close(m.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for off := int64(0); off < obj.Size; off += testSlice {
		if n := m.count("hot", off); n != 1 {
			t.Errorf("slice at %d fetched %d times by %d readers, want once", off, n, readers)
		}
	}
}

// TestNewVersion checks that a changed object (another version) is read
// from the store again, never from the slices of the one before.
func TestNewVersion(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	old := m.put("f", bytes.Repeat([]byte("a"), 2*testSlice))
	r := c.Open(context.Background(), old, m.fill("f"))
	readAll(t, r)
	r.Close()
	now := m.put("f", bytes.Repeat([]byte("b"), 2*testSlice))
	if old.Version == now.Version {
		t.Fatal("the test's versions are alike")
	}
	r = c.Open(context.Background(), now, m.fill("f"))
	if got := readAll(t, r); !bytes.Equal(got, bytes.Repeat([]byte("b"), 2*testSlice)) {
		t.Fatalf("the new version read %q", got[:8])
	}
	r.Close()
	if n := m.count("f", 0); n != 2 {
		t.Errorf("the first slice fetched %d times for two versions, want 2", n)
	}
}

// TestCap fills more than the cap holds: the least recently used slices
// go, the folder keeps to the cap, and a slice used again stays.
func TestCap(t *testing.T) {
	m := newRemote()
	dir := t.TempDir()
	const max = MinSlices * testSlice
	c := newCache(t, dir, max)
	keep := m.put("keep", random(testSlice, 7))
	read := func(obj Object, key string) {
		r := c.Open(context.Background(), obj, m.fill(key))
		readAll(t, r)
		r.Close()
	}
	read(keep, "keep")
	for i := range 3 * MinSlices {
		key := fmt.Sprintf("o%d", i)
		read(m.put(key, random(testSlice, uint64(i+10))), key)
		read(keep, "keep") // used again: the most recent
	}
	st := c.Stats()
	if st.Bytes > max || st.Slices != MinSlices || st.Evicted == 0 {
		t.Fatalf("stats %+v: want %d slices, at most %d bytes, some evicted", st, MinSlices, max)
	}
	if n := m.count("keep", 0); n != 1 {
		t.Errorf("a slice used all along fetched %d times, want once", n)
	}
	if n := m.count("o0", 0); n != 1 {
		t.Fatalf("o0 fetched %d times", n)
	}
	read(m.put("o0", random(testSlice, 10)), "o0")
	if n := m.count("o0", 0); n != 2 {
		t.Errorf("a slice pushed out long ago fetched %d times in all, want 2", n)
	}
	if n := slicesIn(t, dir); n != MinSlices {
		t.Errorf("the folder holds %d slices, want %d", n, MinSlices)
	}
}

// slicesIn counts the slice files in the cache's folder dir.
func slicesIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isSlice(d.Name()) {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRestart closes a cache and opens its folder again: the slices are
// served without the store, a fill's temporary file left by a crash is
// removed, and a folder with a stranger in it is refused.
func TestRestart(t *testing.T) {
	m := newRemote()
	dir := t.TempDir()
	c := newCache(t, dir, 1<<20)
	obj := m.put("f", random(2*testSlice+3, 3))
	r := c.Open(context.Background(), obj, m.fill("f"))
	want := readAll(t, r)
	r.Close()
	if _, err := New(Config{Dir: dir, Max: 1 << 20, SliceSize: testSlice}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second cache on the folder: %v", err)
	}
	c.Close()

	id := objectID(obj, testSlice)
	tmp := filepath.Join(dir, id[:2], tmpPrefix+"123")
	if err := os.WriteFile(tmp, []byte("half a slice"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = newCache(t, dir, 1<<20)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a crashed fill's temporary file is still there: %v", err)
	}
	r = c.Open(context.Background(), obj, func(context.Context, int64, int64) (io.ReadCloser, error) {
		return nil, errors.New("the store was asked")
	})
	if got := readAll(t, r); !bytes.Equal(got, want) {
		t.Fatal("wrong bytes after a restart")
	}
	r.Close()
	if st := c.Stats(); st.Slices != 3 || st.Hits != 3 {
		t.Errorf("after a restart: %+v, want 3 slices held and opened", st)
	}
	c.Close()

	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir, Max: 1 << 20, SliceSize: testSlice}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("a folder holding a stranger: %v", err)
	}
}

// TestDamaged truncates a slice behind the cache's back: it is fetched
// again rather than served short.
func TestDamaged(t *testing.T) {
	m := newRemote()
	dir := t.TempDir()
	c := newCache(t, dir, 1<<20)
	want := random(2*testSlice, 4)
	obj := m.put("f", want)
	r := c.Open(context.Background(), obj, m.fill("f"))
	readAll(t, r)
	r.Close()
	if err := os.Truncate(filepath.Join(dir, sliceName(objectID(obj, testSlice), 1)), 10); err != nil {
		t.Fatal(err)
	}
	r = c.Open(context.Background(), obj, m.fill("f"))
	if got := readAll(t, r); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the object's", len(got))
	}
	r.Close()
	if n := m.count("f", testSlice); n != 2 {
		t.Errorf("the damaged slice fetched %d times in all, want 2", n)
	}
}

// TestFailedFill answers a fill short: the read fails, and nothing is
// left in the folder; the next reader fetches again.
func TestFailedFill(t *testing.T) {
	m := newRemote()
	dir := t.TempDir()
	c := newCache(t, dir, 1<<20)
	want := random(testSlice, 5)
	obj := m.put("f", want)
	m.short = true
	r := c.Open(context.Background(), obj, m.fill("f"))
	if _, err := io.ReadAll(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short answer read as %v", err)
	}
	r.Close()
	if left := filesIn(t, dir); len(left) != 0 {
		t.Fatalf("a failed fill left %v", left)
	}
	m.short = false
	r = c.Open(context.Background(), obj, m.fill("f"))
	if got := readAll(t, r); !bytes.Equal(got, want) {
		t.Fatal("wrong bytes after a failed fill")
	}
	r.Close()
}

// filesIn lists the files in dir but the lock file.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != lockName {
			out = append(out, p)
		}
		return err
	})
	return out
}

// TestReaderLeaves cancels the only reader waiting for a fill: the fill
// ends with it, and a reader after starts its own.
func TestReaderLeaves(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	want := random(testSlice, 6)
	obj := m.put("f", want)
	m.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	r := c.Open(ctx, obj, m.fill("f"))
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	poll.Wait(t, 10*time.Second, "the fill to begin", func() bool { return m.count("f", 0) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a reader that left read %v", err)
	}
	r.Close()
	poll.Wait(t, 10*time.Second, "the fill to end", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.fills) == 0
	})
	close(m.gate)
	r = c.Open(context.Background(), obj, m.fill("f"))
	if got := readAll(t, r); !bytes.Equal(got, want) {
		t.Fatal("wrong bytes")
	}
	r.Close()
}

// TestSlice sends an object as a transfer does: from each slice's file,
// moving its offset behind the reader's back, with a look at the offset
// in between; the reader follows.
func TestSlice(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	want := random(3*testSlice+5, 8)
	obj := m.put("f", want)
	r := c.Open(context.Background(), obj, m.fill("f"))
	defer r.Close()
	head := make([]byte, 10)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	got := head
	for {
		f, err := r.Slice()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 2*testSlice)
		n, _ := f.Read(b) // the kernel's sendfile, in a test
		got = append(got, b[:n]...)
		if pos, err := r.Seek(0, io.SeekCurrent); err != nil || pos != int64(len(got)) {
			t.Fatalf("offset %d, %v after %d bytes", pos, err, len(got))
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("sent %d bytes, not the object's", len(got))
	}
	if n, err := r.Read(head); n != 0 || err != io.EOF {
		t.Fatalf("read at the end: %d, %v", n, err)
	}
}

// TestDescriptors reads many objects: no descriptor of the folder is left
// open but the lock's, and the next slice was fetched ahead.
func TestDescriptors(t *testing.T) {
	m := newRemote()
	dir := t.TempDir()
	c := newCache(t, dir, 1<<20)
	for i := range 20 {
		key := fmt.Sprintf("o%d", i)
		obj := m.put(key, random(4*testSlice, uint64(i+1)))
		r := c.Open(context.Background(), obj, m.fill(key))
		buf := make([]byte, 1)
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
		poll.Wait(t, 10*time.Second, "the second slice fetched ahead", func() bool { return m.count(key, testSlice) == 1 })
		r.Close()
	}
	c.Close()
	poll.Wait(t, 10*time.Second, "no descriptor of the folder open", func() bool { return openIn(t, dir) == 0 })
}

// openIn counts this process's descriptors of files under dir.
func openIn(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(p, dir+"/") {
			n++
		}
	}
	return n
}

// TestReadAhead checks what a reader has fetched ahead: the next slice
// only for a reader that starts (a probe costs two slices), and the next
// readAhead for one that reads on from slice to slice.
func TestReadAhead(t *testing.T) {
	m := newRemote()
	c := newCache(t, t.TempDir(), 1<<20)
	obj := m.put("o", random(8*testSlice, 9))
	r := c.Open(context.Background(), obj, m.fill("o"))
	defer r.Close()
	buf := make([]byte, 1)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	poll.Wait(t, 10*time.Second, "the second slice fetched ahead", func() bool { return m.count("o", testSlice) == 1 })
	if n := m.count("o", 2*testSlice); n != 0 {
		t.Errorf("a probe of one byte fetched the third slice too (%d)", n)
	}
	if _, err := r.Seek(testSlice, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	for i := int64(2); i <= 1+readAhead; i++ {
		poll.Wait(t, 10*time.Second, "a slice fetched ahead", func() bool { return m.count("o", i*testSlice) == 1 })
	}
	if n := m.count("o", (2+readAhead)*testSlice); n != 0 {
		t.Errorf("slice %d fetched %d times; want none: past the read-ahead", 2+readAhead, n)
	}
}
