package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/s3/s3test"
	"largo/slicecache"
	"largo/storetest"
)

// newSlices returns a slice cache of slices of size bytes in a new
// folder, closed when the test ends.
func newSlices(t *testing.T, size int64) *slicecache.Cache {
	t.Helper()
	c, err := slicecache.New(slicecache.Config{Dir: t.TempDir(), Max: 64 * size, SliceSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStoreSliced runs the suite on a store that reads through a slice
// cache of small slices.
func TestStoreSliced(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		bucket := srv.MakeBucket(t)
		srv.PutAll(t, bucket, "", files)
		s := newStore(t, srv, bucket, "")
		s.slices = newSlices(t, 5)
		return s
	})
}

// TestSlicedReadsOnce reads one object through five files at once, twice:
// the bucket is asked for each slice once, and every file is served from
// slices on the local disk.
func TestSlicedReadsOnce(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	const slice = 64 << 10
	data := randomBytes(5*slice+321, 9)
	srv.Put(t, "hot.bin", data)
	w := newWire()
	s := wiredStore(t, srv, w)
	s.slices = newSlices(t, slice)
	before := w.read.Load() // the start-up check's listing
	for range 2 {
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				f, err := s.Open(context.Background(), "hot.bin")
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				if _, ok := f.(largo.SliceFile); !ok {
					t.Errorf("a file of a store with slices is a %T, no largo.SliceFile", f)
				}
				got, err := io.ReadAll(f)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("read %d bytes, %v: not the object", len(got), err)
				}
			})
		}
		wg.Wait()
	}
	gets := 0
	for _, r := range w.requests() {
		if strings.HasPrefix(r, "GET ") {
			gets++
		}
	}
	if gets != 6 {
		t.Errorf("%d GETs for an object of 6 slices read ten times, want 6", gets)
	}
	if n := w.read.Load() - before; n != int64(len(data)) {
		t.Errorf("%d bytes read off the bucket for an object of %d read ten times", n, len(data))
	}
}

// TestSlicedReplaced replaces an object after a file of it was opened: the
// read fails (it never mixes slices of two versions), and a file opened
// after reads the new version.
func TestSlicedReplaced(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	s := newStore(t, srv, srv.Bucket, "")
	s.slices = newSlices(t, 1<<10)
	srv.Put(t, "f", bytes.Repeat([]byte("a"), 4<<10))
	f, err := s.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "f", bytes.Repeat([]byte("b"), 4<<10))
	// The first slice is held; the second is fetched ahead or now, from
	// the new version, on condition of the old one's ETag.
	_, err = io.ReadAll(f)
	if !errors.Is(err, largo.ErrPrecondition) {
		t.Fatalf("reading a replaced object: %v, want a failed precondition", err)
	}
	g, err := s.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	got, err := io.ReadAll(g)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("b"), 4<<10)) {
		t.Fatalf("the new version: %v, %q...", err, got[:min(8, len(got))])
	}
}
