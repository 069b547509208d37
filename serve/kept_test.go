package serve

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo/auth"
	"largo/digests"
	"largo/disk"
	"largo/filecache"
	"largo/gate"
	"largo/ingest"
	"largo/record"
)

// keptFixture serves a folder holding files under access, writes on,
// reading through an open-file cache that the write pipeline tells of
// its changes, as largo serve does; window is the cache's.
func keptFixture(t *testing.T, files map[string]string, access *auth.Access, window time.Duration) (*Handler, string, *filecache.Store) {
	t.Helper()
	_, dir := newTestHandler(t, files)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	recs := record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
	cache := filecache.New(s, filecache.Options{Window: window})
	g := gate.New(gate.Config{Access: access, Resolver: s})
	gated := g.Store(s)
	h := New(Config{
		Store:   gated,
		Cache:   cache,
		Gate:    g,
		State:   s.State(),
		Files:   recs,
		Digests: digests.New(recs, digests.Options{Store: s}),
		Writes:  ingest.New(ingest.Config{Store: gated, Files: recs, Server: asServer, Changes: cache}),
	})
	return h, dir, cache
}

// A kept file is answered as http.ServeContent answers the same file:
// the same status, headers and body, for a plain request, a HEAD, ranges
// and conditions, whatever the file's type.
func TestKeptAnswersAsServeContent(t *testing.T) {
	files := map[string]string{
		"f.bin":     body,
		"page.html": "<script>x</script>",
		"noext":     "<html><body>sniffed</body></html>",
		"empty.txt": "",
	}
	keptH, dir, cache := keptFixture(t, files, auth.New(auth.OneUser("", true), nil), time.Hour)
	// Both serve the same folder's files: the same inodes and times.
	plainS, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plainS.Close() })
	plainH := New(Config{Store: plainS})
	for name := range files {
		do(keptH, "GET", "/"+name) // seen once,
		do(keptH, "GET", "/"+name) // read in
	}
	if n, _ := cache.Len(); n != len(files) {
		t.Fatalf("%d files kept; want %d", n, len(files))
	}
	etag := do(plainH, "HEAD", "/f.bin").Header().Get("ETag")
	lastMod := do(plainH, "HEAD", "/f.bin").Header().Get("Last-Modified")
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for _, tt := range []struct {
			method string
			hdr    []string
		}{
			{"GET", nil},
			{"HEAD", nil},
			{"GET", []string{"Range", "bytes=2-5"}},
			{"GET", []string{"Range", "bytes=0-0,2-3"}},
			{"GET", []string{"If-None-Match", etag}},
			{"GET", []string{"If-Modified-Since", lastMod}},
			{"GET", []string{"If-Match", `"nope"`}},
			{"GET", []string{"Accept-Encoding", "gzip"}},
		} {
			want := do(plainH, tt.method, "/"+name, tt.hdr...)
			got := do(keptH, tt.method, "/"+name, tt.hdr...)
			what := tt.method + " " + name + " " + strings.Join(tt.hdr, ": ")
			if got.Code != want.Code || noBoundary(got) != noBoundary(want) {
				t.Errorf("%s: %d with %d bytes; want %d with %d", what, got.Code, got.Body.Len(), want.Code, want.Body.Len())
			}
			gh, wh := got.Header().Clone(), want.Header().Clone()
			gh.Del("Date")
			wh.Del("Date")
			if !sameHeader(gh, wh) {
				t.Errorf("%s: header\n%v\nwant\n%v", what, gh, wh)
			}
		}
	}
}

// noBoundary returns the body of rec, a multipart one's boundary replaced
// by a fixed string.
func noBoundary(rec *httptest.ResponseRecorder) string {
	_, b, ok := strings.Cut(rec.Header().Get("Content-Type"), "boundary=")
	if !ok {
		return rec.Body.String()
	}
	return strings.ReplaceAll(rec.Body.String(), b, "BOUNDARY")
}

// sameHeader compares two headers' fields, the order of a field's values
// included, whatever the boundary strings of multipart answers.
func sameHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv := b[k]
		if k == "Content-Type" && len(av) == 1 && len(bv) == 1 && strings.HasPrefix(av[0], "multipart/byteranges") {
			continue
		}
		if !slices.Equal(av, bv) {
			return false
		}
	}
	return true
}

// The gate decides each request for a kept file, for the request's
// principal: a file kept after one user read it is no more open to
// another than it was.
func TestKeptDecidedPerRequest(t *testing.T) {
	pol := writeAccess(t, accessFile)
	h, _, cache := keptFixture(t, map[string]string{"private/s.txt": "secret", "pub/a.txt": "a"}, auth.New(pol, nil), time.Hour)
	f := &accessFixture{h: h}
	for range 2 {
		if rec := f.req("GET", "/private/s.txt", "alice"); rec.Code != 200 || rec.Body.String() != "secret" {
			t.Fatalf("alice: %d %q", rec.Code, rec.Body)
		}
	}
	if n, _ := cache.Len(); n != 1 {
		t.Fatalf("%d kept after alice's read", n)
	}
	for _, tt := range []struct {
		user string
		code int
	}{{"", 401}, {"bob", 403}, {"alice", 200}, {"", 401}} {
		if rec := f.req("GET", "/private/s.txt", tt.user); rec.Code != tt.code || rec.Code != 200 && strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%q after the file was kept: %d %q; want %d", tt.user, rec.Code, rec.Body, tt.code)
		}
	}
}

// writeAccess loads an access file of the text given.
func writeAccess(t *testing.T, text string) *auth.Policy {
	t.Helper()
	p := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// A write through the server is served at once, its digest with it, even
// with a window of an hour; a change behind the server waits for the
// window.
func TestKeptWriteServedAtOnce(t *testing.T) {
	h, dir, _ := keptFixture(t, map[string]string{}, auth.New(auth.OneUser(token, false), nil), time.Hour)
	bearer := []string{"Authorization", "Bearer " + token}
	for _, content := range []string{"first", "second!", "third"} {
		if rec := send(h, "PUT", "/d/f.txt", strings.NewReader(content), int64(len(content)), bearer...); rec.Code/100 != 2 {
			t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
		for range 3 { // seen, read in, then kept
			rec := do(h, "GET", "/d/f.txt")
			if rec.Body.String() != content || rec.Header().Get("Repr-Digest") != digest(content) {
				t.Fatalf("after writing %q: %q, Repr-Digest %q", content, rec.Body, rec.Header().Get("Repr-Digest"))
			}
		}
	}
	if rec := send(h, "DELETE", "/d/f.txt", nil, 0, bearer...); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", rec.Code)
	}
	if rec := do(h, "GET", "/d/f.txt"); rec.Code != 404 {
		t.Fatalf("after its removal: %d %q", rec.Code, rec.Body)
	}
	// Behind the server, within the hour: the version kept.
	do(h, "GET", "/d") // the folder, for the record
	os.WriteFile(filepath.Join(dir, "g.txt"), []byte("old"), 0o644)
	do(h, "GET", "/g.txt")
	do(h, "GET", "/g.txt")
	os.WriteFile(filepath.Join(dir, "g.txt.new"), []byte("new"), 0o644)
	os.Rename(filepath.Join(dir, "g.txt.new"), filepath.Join(dir, "g.txt"))
	if rec := do(h, "GET", "/g.txt"); rec.Body.String() != "old" {
		t.Errorf("a change behind the server, within the window: %q; want the version kept", rec.Body)
	}
}

// The lane is offered a request only when its name may be read by
// anyone and is kept: a name hidden from its requester is not asked
// about, so the way its answer takes tells nothing of it; nor is a
// request with a credential.
func TestQuickOnlyWhatAnyoneMayRead(t *testing.T) {
	f := newAccessFixture(t)
	cache := filecache.New(f.d, filecache.Options{})
	for _, name := range []string{"pub/a.txt", "private/s.txt", "pub/hidden.txt"} {
		for range 2 { // seen, then kept
			file, err := cache.Open(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			file.Close()
		}
		if !cache.Keeps(name) {
			t.Fatalf("%s not kept", name)
		}
	}
	f.h.cfg.Cache = cache
	for _, tt := range []struct {
		path string
		hdr  []string
		want bool
	}{
		{"/pub/a.txt", nil, true},
		{"/pub/a.txt?x=1", nil, false},
		{"/pub/a.txt", []string{"Authorization", "Bearer alice-token-0123456789"}, false},
		{"/private/s.txt", nil, false},
		{"/pub/hidden.txt", nil, false},
		{"/pub/unlisted/u.txt", nil, false}, // not kept
	} {
		r := httptest.NewRequest("GET", "http://127.0.0.1"+tt.path, nil)
		for i := 0; i < len(tt.hdr); i += 2 {
			r.Header.Set(tt.hdr[i], tt.hdr[i+1])
		}
		if got := f.h.Quick(r); got != tt.want {
			t.Errorf("Quick(%s %v) = %v; want %v", tt.path, tt.hdr, got, tt.want)
		}
	}
}
