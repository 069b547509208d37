package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"

	"largo"
	"largo/disk"
	"largo/encode"
)

// countingStore counts the files opened through it.
type countingStore struct {
	largo.Store
	opened atomic.Int32
}

func (s *countingStore) Open(ctx context.Context, name string) (largo.File, error) {
	s.opened.Add(1)
	return s.Store.Open(ctx, name)
}

// TestArchiveHeadReadsNothing checks that the length of an archive, for a
// HEAD or before a GET, comes from the listings alone: no file is opened
// until the GET sends its bytes.
func TestArchiveHeadReadsNothing(t *testing.T) {
	_, dir := newTestHandler(t, map[string]string{"d/a.txt": "alpha", "d/sub/b.bin": body})
	ds, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	s := &countingStore{Store: ds}
	h := New(Config{Store: s})
	for _, format := range []string{"zip", "tar"} {
		req := httptest.NewRequest("HEAD", "/d/?archive="+format, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		n, _ := strconv.ParseInt(rec.Header().Get("Content-Length"), 10, 64)
		if rec.Code != 200 || n <= int64(len(body)) || s.opened.Load() != 1 { // the folder itself, by get
			t.Fatalf("HEAD %s: %d, length %d, %d opened", format, rec.Code, n, s.opened.Load())
		}
		s.opened.Store(0)
		got := doQuery(h, "/d/", "archive="+format)
		if got.Code != 200 || int64(got.Body.Len()) != n || s.opened.Load() != 3 {
			t.Fatalf("GET %s: %d, %d bytes of %d, %d opened", format, got.Code, got.Body.Len(), n, s.opened.Load())
		}
		s.opened.Store(0)
	}
}

// TestTarZstTakesACompressionSlot checks that a tar.zst counts against
// the compression streams like any compressed response: with every slot
// taken it is refused with 503 and a Retry-After, not compressed by an
// encoder beyond the bound.
func TestTarZstTakesACompressionSlot(t *testing.T) {
	_, dir := newTestHandler(t, map[string]string{"d/a.txt": "alpha"})
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	enc, _ := encode.NewEncoders(encode.Config{MaxStreams: 1})
	h := New(Config{Store: s, Compress: enc})
	held, ok := enc.Writer(io.Discard, encode.Zstd)
	if !ok {
		t.Fatal("no slot")
	}
	if rec := doQuery(h, "/d/", "archive=tar.zst"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("tar.zst with every slot taken: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	held.Abandon()
	rec := doQuery(h, "/d/", "archive=tar.zst")
	zr, err := zstd.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if b, err := io.ReadAll(zr); rec.Code != 200 || err != nil || len(b) < 1024 || enc.Active() != 0 {
		t.Fatalf("tar.zst: %d, %d bytes, %v, %d slots held after", rec.Code, len(b), err, enc.Active())
	}
}
