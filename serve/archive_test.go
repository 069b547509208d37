package serve

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// archiveFixture serves a folder d/ of files of odd sizes, with the
// CRC-32 of every file known when crcs is set, as a kept record would
// give it.
func archiveFixture(t *testing.T, crcs bool) (*Handler, string) {
	t.Helper()
	files := map[string]string{
		"d/a.txt":                       "alpha",
		"d/empty":                       "",
		"d/b512":                        strings.Repeat("b", 512),
		"d/sub/c.bin":                   strings.Repeat("0123456789", 3000),
		"d/" + strings.Repeat("n", 150): "a long name",
	}
	_, dir := newTestHandler(t, files)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := Config{Store: s}
	if crcs {
		cfg.Archives = NewArchives("", func(_ context.Context, name, _ string) (uint32, bool) {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
			return crc32.ChecksumIEEE(b), err == nil
		}, nil)
	}
	return New(cfg), dir
}

// TestArchiveRanges: a tar (and a zip whose CRC-32s are known) answers
// Range with the same bytes as the whole archive's, under If-Range,
// If-Match and If-None-Match, one range or several as one span.
func TestArchiveRanges(t *testing.T) {
	for _, format := range []string{"tar", "zip"} {
		t.Run(format, func(t *testing.T) {
			h, _ := archiveFixture(t, true)
			u := "/d/?archive=" + format
			whole := doArchive(h, "GET", u)
			etag := whole.Header().Get("ETag")
			all := whole.Body.String()
			size := int64(len(all))
			if whole.Code != 200 || !strings.HasPrefix(etag, `"`+format+"-") || whole.Header().Get("Accept-Ranges") != "bytes" || whole.Header().Get("Content-Length") != itoa(size) {
				t.Fatalf("GET: %d, %v", whole.Code, whole.Header())
			}
			for _, c := range []struct {
				hdr        []string
				code       int
				start, end int64 // the bytes of a 206, [start, end]
			}{
				{[]string{"Range", "bytes=0-0"}, 206, 0, 0},
				{[]string{"Range", "bytes=513-2000"}, 206, 513, 2000},
				{[]string{"Range", "bytes=1000-"}, 206, 1000, size - 1},
				{[]string{"Range", "bytes=-700"}, 206, size - 700, size - 1},
				{[]string{"Range", "bytes=-99999999"}, 206, 0, size - 1},
				{[]string{"Range", "bytes=10-20, 500-600,30-40"}, 206, 10, 600},
				{[]string{"Range", "bytes=0-10,99999999-"}, 206, 0, 10},
				{[]string{"Range", "bytes=5-" + itoa(size+100)}, 206, 5, size - 1},
				{[]string{"Range", "bytes=100-", "If-Range", etag}, 206, 100, size - 1},
				{[]string{"Range", "bytes=100-", "If-Range", `"tar-other"`}, 200, 0, 0},
				{[]string{"Range", "bytes=100-", "If-Range", "W/" + etag}, 200, 0, 0},
				{[]string{"Range", "bytes=100-", "If-Range", "Mon, 02 Jan 2006 15:04:05 GMT"}, 200, 0, 0},
				{[]string{"Range", "bytes=x-y"}, 200, 0, 0},
				{[]string{"Range", "lines=1-2"}, 200, 0, 0},
				{[]string{"Range", "bytes=20-10"}, 200, 0, 0},
				{[]string{"Range", "bytes=" + itoa(size) + "-"}, 416, 0, 0},
				{[]string{"Range", "bytes=-0"}, 416, 0, 0},
				{[]string{"If-Match", etag}, 200, 0, 0},
				{[]string{"If-Match", `"x", ` + etag}, 200, 0, 0},
				{[]string{"If-Match", "*"}, 200, 0, 0},
				{[]string{"If-Match", `"other"`, "Range", "bytes=0-10"}, 412, 0, 0},
				{[]string{"If-Match", "W/" + etag}, 412, 0, 0},
				{[]string{"If-None-Match", "W/" + etag}, 304, 0, 0},
				{[]string{"If-None-Match", `"other"`}, 200, 0, 0},
			} {
				rec := doArchive(h, "GET", u, c.hdr...)
				if rec.Code != c.code {
					t.Errorf("%q: %d; want %d (%s)", c.hdr, rec.Code, c.code, rec.Body.String())
					continue
				}
				switch c.code {
				case 206:
					want := all[c.start : c.end+1]
					cr := "bytes " + itoa(c.start) + "-" + itoa(c.end) + "/" + itoa(size)
					if rec.Body.String() != want || rec.Header().Get("Content-Range") != cr || rec.Header().Get("ETag") != etag {
						t.Errorf("%q: %d bytes, Content-Range %q (want %q)", c.hdr, rec.Body.Len(), rec.Header().Get("Content-Range"), cr)
					}
				case 200:
					if rec.Body.String() != all {
						t.Errorf("%q: 200 of %d bytes; want the whole archive", c.hdr, rec.Body.Len())
					}
				case 416:
					if rec.Header().Get("Content-Range") != "bytes */"+itoa(size) {
						t.Errorf("%q: Content-Range %q", c.hdr, rec.Header().Get("Content-Range"))
					}
				}
			}
			head := doArchive(h, "HEAD", u, "Range", "bytes=100-199")
			if head.Code != 206 || head.Header().Get("Content-Length") != "100" || head.Body.Len() != 0 {
				t.Errorf("HEAD with a range: %d, %v, %d bytes", head.Code, head.Header(), head.Body.Len())
			}
		})
	}
}

// doArchive sends a request with headers given as name, value pairs.
func doArchive(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestArchiveWholeOnly: a zip whose CRC-32s are not known, and a tar.zst,
// answer a range with the whole archive and Accept-Ranges: none; a
// tar.zst's ETag is weak, so If-Match never holds for it.
func TestArchiveWholeOnly(t *testing.T) {
	h, _ := archiveFixture(t, false)
	whole := doArchive(h, "GET", "/d/?archive=zip")
	rec := doArchive(h, "GET", "/d/?archive=zip", "Range", "bytes=100-")
	if rec.Code != 200 || rec.Header().Get("Accept-Ranges") != "none" || rec.Body.String() != whole.Body.String() || rec.Header().Get("ETag") != whole.Header().Get("ETag") {
		t.Errorf("zip without CRC-32s, ranged: %d, %v", rec.Code, rec.Header())
	}
	zst := doArchive(h, "GET", "/d/?archive=tar.zst", "Range", "bytes=100-")
	etag := zst.Header().Get("ETag")
	if zst.Code != 200 || zst.Header().Get("Accept-Ranges") != "none" || !strings.HasPrefix(etag, `W/"tar.zst-`) || zst.Header().Get("Content-Range") != "" {
		t.Errorf("tar.zst, ranged: %d, %v", zst.Code, zst.Header())
	}
	if rec := doArchive(h, "GET", "/d/?archive=tar.zst", "If-Match", etag); rec.Code != 412 {
		t.Errorf("tar.zst, If-Match its weak ETag: %d; want 412", rec.Code)
	}
	if rec := doArchive(h, "GET", "/d/?archive=tar.zst", "If-None-Match", etag); rec.Code != 304 {
		t.Errorf("tar.zst, If-None-Match its ETag: %d; want 304", rec.Code)
	}
}

// TestArchiveOfChangedFolder: after the folder changed, an old ETag in
// If-Range gets the whole new archive (200), in If-Match a 412; and a
// folder that changes while a range is being sent cuts it short.
func TestArchiveOfChangedFolder(t *testing.T) {
	h, dir := archiveFixture(t, false)
	old := doArchive(h, "GET", "/d/?archive=tar").Header().Get("ETag")
	os.WriteFile(filepath.Join(dir, "d", "a.txt"), []byte("ALPHA"), 0o644)
	os.Chtimes(filepath.Join(dir, "d", "a.txt"), time.Unix(1, 0), time.Unix(1, 0))
	rec := doArchive(h, "GET", "/d/?archive=tar", "Range", "bytes=100-", "If-Range", old)
	if rec.Code != 200 || rec.Header().Get("ETag") == old || !strings.Contains(rec.Body.String(), "ALPHA") {
		t.Errorf("If-Range of the old version: %d, ETag %s", rec.Code, rec.Header().Get("ETag"))
	}
	if rec := doArchive(h, "GET", "/d/?archive=tar", "Range", "bytes=100-", "If-Match", old); rec.Code != 412 {
		t.Errorf("If-Match of the old version: %d; want 412", rec.Code)
	}

	// The change lands between the walk that measures and the one that
	// sends, after the range (past m.bin, long enough that the bytes
	// before the cut leave the server): the range stops short of its
	// last byte.
	whole := doArchive(h, "GET", "/d/?archive=tar").Body.String()
	at := strings.Index(whole, "ALPHA")
	cs := &changingStore{Store: h.cfg.Store, on: "d/a.txt", change: func() {
		p := filepath.Join(dir, "d", "sub", "c.bin")
		os.WriteFile(p, []byte(strings.Repeat("9876543210", 3000)), 0o644)
		os.Chtimes(p, time.Unix(2, 0), time.Unix(2, 0))
	}}
	srv := httptest.NewServer(New(Config{Store: cs}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/d/?archive=tar", nil)
	const n = 20000
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", at, at+n-1))
	// The few bytes before the cut may never leave the server's buffer:
	// the client sees no answer at all, or a short one.
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var b []byte
		if b, err = io.ReadAll(resp.Body); err == nil || resp.StatusCode != 206 || len(b) >= n {
			t.Errorf("range of a folder changed meanwhile: %d, %d bytes, %v; want a cut before the last byte", resp.StatusCode, len(b), err)
		}
	}
	if !cs.changed.Load() {
		t.Error("the folder was not changed")
	}
}

// changingStore runs change when the file on is first opened.
type changingStore struct {
	largo.Store
	on      string
	change  func()
	changed atomic.Bool
}

func (s *changingStore) Open(ctx context.Context, name string) (largo.File, error) {
	if name == s.on && !s.changed.Swap(true) {
		s.change()
	}
	return s.Store.Open(ctx, name)
}
