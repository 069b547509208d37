package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/encode"
	"largo/gate"
	"largo/sidecar"
)

// compressFixture is a served folder with a compressible file that has
// sidecars (page.js), one that has none (plain.js), and incompressible
// files with (photo.jpg, whose .gz must be ignored) and without
// (video.mp4) a would-be sidecar.
type compressFixture struct {
	h     *Handler
	dir   string
	files map[string][]byte
}

func newCompressFixture(t *testing.T, enc *encode.Encoders) *compressFixture {
	t.Helper()
	dir := t.TempDir()
	js := bytes.Repeat([]byte("function add(a, b) { return a + b; } // largo\n"), 200)
	noise := make([]byte, 8000)
	rand.NewChaCha8([32]byte{7}).Read(noise)
	fx := &compressFixture{dir: dir, files: map[string][]byte{
		"page.js": js, "plain.js": js, "photo.jpg": noise, "video.mp4": noise,
	}}
	for name, b := range fx.files {
		write(t, filepath.Join(dir, name), b)
	}
	for _, c := range encode.Codings {
		write(t, filepath.Join(dir, encode.Sidecar("page.js", c)), compress(t, c, js))
	}
	write(t, filepath.Join(dir, "photo.jpg.gz"), compress(t, encode.Gzip, noise))
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fx.h = New(Config{Store: s, Compress: enc})
	recordSidecars(t, fx.h, "page.js.gz", "page.js.br", "page.js.zst", "photo.jpg.gz")
	return fx
}

// recordSidecars records the files names of h's store as sidecars of
// their originals (the names without the coding's extension), as largo
// precompress does when it writes them.
func recordSidecars(t testing.TB, h *Handler, names ...string) {
	t.Helper()
	ctx := gate.With(context.Background(), gate.Server())
	st := h.cfg.Files
	for _, name := range names {
		base, _, ok := encode.SidecarBase(name)
		if !ok {
			t.Fatalf("%s: not a sidecar's name", name)
		}
		sin, err := h.cfg.Store.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		orig, err := h.cfg.Store.Stat(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		if err := sidecar.Put(ctx, st, name, sin, orig.ETag); err != nil {
			t.Fatal(err)
		}
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func compress(t *testing.T, c encode.Coding, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := encode.NewWriter(&out, c, encode.Max)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func decodeBody(t *testing.T, c string, b []byte) []byte {
	t.Helper()
	r, err := encode.NewReader(bytes.NewReader(b), encode.Coding(c))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", c, err)
	}
	return out
}

func newEncoders(t testing.TB, max int) *encode.Encoders {
	t.Helper()
	e, err := encode.NewEncoders(encode.Config{MaxStreams: max})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCompressMatrix is the policy's matrix over HTTP: compressible and
// incompressible files, with and without sidecars, for each
// Accept-Encoding, with and without a Range, checking the status, the
// Content-Encoding, Vary, the ETag and the decoded body.
func TestCompressMatrix(t *testing.T) {
	fx := newCompressFixture(t, newEncoders(t, 8))
	identityTag := map[string]string{}
	for name := range fx.files {
		identityTag[name] = do(fx.h, "HEAD", "/"+name).Header().Get("ETag")
	}
	// The coding expected for a compressible file, with sidecars and
	// without; "" is identity.
	accepts := []struct {
		header      []string // nil: no Accept-Encoding
		sidecar, dy string
	}{
		{nil, "", ""},
		{[]string{""}, "", ""},
		{[]string{"gzip"}, "gzip", "gzip"},
		{[]string{"x-gzip"}, "gzip", "gzip"},
		{[]string{"br"}, "br", "br"},
		{[]string{"zstd"}, "zstd", "zstd"},
		{[]string{"gzip, deflate, br, zstd"}, "zstd", "zstd"},
		{[]string{"br;q=0.5, gzip;q=0.8"}, "gzip", "gzip"},
		{[]string{"gzip;q=0"}, "", ""},
		{[]string{"deflate"}, "", ""},
		{[]string{"identity;q=0"}, "", ""},
		{[]string{"br, identity;q=0"}, "br", "br"},
		{[]string{"*"}, "zstd", "zstd"},
		{[]string{"*;q=0"}, "", ""},
		{[]string{"gzip", "br;q=0.9"}, "gzip", "gzip"},
	}
	for _, name := range []string{"page.js", "plain.js", "photo.jpg", "video.mp4"} {
		compressible := strings.HasSuffix(name, ".js")
		for _, ae := range accepts {
			for _, withRange := range []bool{false, true} {
				want := ""
				switch {
				case !compressible || withRange:
				case name == "page.js":
					want = ae.sidecar
				default:
					want = ae.dy
				}
				hdr := []string{}
				if withRange {
					hdr = append(hdr, "Range", "bytes=10-109")
				}
				req := httptest.NewRequest("GET", "/"+name, nil)
				for k := 0; k+1 < len(hdr); k += 2 {
					req.Header.Set(hdr[k], hdr[k+1])
				}
				for _, v := range ae.header {
					req.Header.Add("Accept-Encoding", v)
				}
				rec := httptest.NewRecorder()
				fx.h.ServeHTTP(rec, req)
				what := fmt.Sprintf("%s, Accept-Encoding %q, range %v", name, ae.header, withRange)
				checkEncoded(t, what, rec, want, compressible, name == "page.js", withRange, identityTag[name], fx.files[name])
			}
		}
	}
}

// checkEncoded checks one response of the matrix.
func checkEncoded(t *testing.T, what string, rec *httptest.ResponseRecorder, want string, vary, sidecar, withRange bool, identityTag string, content []byte) {
	t.Helper()
	h := rec.Header()
	if got := h.Get("Content-Encoding"); got != want {
		t.Errorf("%s: Content-Encoding %q; want %q", what, got, want)
		return
	}
	if got := strings.Contains(h.Get("Vary"), "Accept-Encoding"); got != vary {
		t.Errorf("%s: Vary %q; want Accept-Encoding: %v", what, h.Get("Vary"), vary)
	}
	etag := h.Get("ETag")
	switch {
	case want == "" && etag != identityTag:
		t.Errorf("%s: ETag %s; want the file's %s", what, etag, identityTag)
	case want != "" && sidecar && (strings.HasPrefix(etag, "W/") || !strings.HasSuffix(etag, "-"+want+`"`)):
		t.Errorf("%s: ETag %s; want a strong ETag of the %s sidecar", what, etag, want)
	case want != "" && !sidecar && (!strings.HasPrefix(etag, "W/") || !strings.HasSuffix(etag, "-"+want+`"`)):
		t.Errorf("%s: ETag %s; want a weak ETag for dynamic %s", what, etag, want)
	}
	wantStatus, wantBody := 200, content
	if withRange {
		wantStatus, wantBody = 206, content[10:110]
	}
	if rec.Code != wantStatus {
		t.Errorf("%s: status %d; want %d", what, rec.Code, wantStatus)
	}
	if got := decodeBody(t, want, rec.Body.Bytes()); !bytes.Equal(got, wantBody) {
		t.Errorf("%s: decoded body of %d bytes differs from the %d expected", what, len(got), len(wantBody))
	}
}

func TestSidecarServing(t *testing.T) {
	fx := newCompressFixture(t, nil) // dynamic compression off: sidecars still served
	gz := compress(t, encode.Gzip, fx.files["page.js"])
	rec := do(fx.h, "GET", "/page.js", "Accept-Encoding", "gzip")
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || !bytes.Equal(rec.Body.Bytes(), gz) ||
		rec.Header().Get("Content-Length") != fmt.Sprint(len(gz)) || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("sidecar: %d %v", rec.Code, rec.Header())
	}
	tag := rec.Header().Get("ETag")
	// Off: no sidecar, no dynamic compression.
	if rec := do(fx.h, "GET", "/plain.js", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("--compress off compressed plain.js")
	}

	// A Range tied to the sidecar by If-Range: bytes of the encoded file.
	rec = do(fx.h, "GET", "/page.js", "Accept-Encoding", "gzip", "Range", "bytes=5-14", "If-Range", tag)
	if rec.Code != 206 || rec.Header().Get("Content-Encoding") != "gzip" || !bytes.Equal(rec.Body.Bytes(), gz[5:15]) ||
		rec.Header().Get("Content-Range") != fmt.Sprintf("bytes 5-14/%d", len(gz)) {
		t.Errorf("range on the sidecar: %d %v", rec.Code, rec.Header())
	}
	// 304 per encoding: the sidecar's ETag matches only its encoding.
	if rec := do(fx.h, "GET", "/page.js", "Accept-Encoding", "gzip", "If-None-Match", tag); rec.Code != 304 || rec.Header().Get("ETag") != tag {
		t.Errorf("If-None-Match with the gzip ETag: %d %v", rec.Code, rec.Header())
	}
	if rec := do(fx.h, "GET", "/page.js", "Accept-Encoding", "br", "If-None-Match", tag); rec.Code != 200 || rec.Header().Get("Content-Encoding") != "br" {
		t.Errorf("If-None-Match with the gzip ETag, asking for br: %d %v", rec.Code, rec.Header())
	}
	if rec := do(fx.h, "GET", "/page.js", "If-None-Match", tag); rec.Code != 200 || rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("If-None-Match with the gzip ETag, asking for identity: %d %v", rec.Code, rec.Header())
	}

	// HEAD answers the GET's headers.
	head := do(fx.h, "HEAD", "/page.js", "Accept-Encoding", "gzip")
	for _, k := range []string{"Content-Encoding", "Content-Length", "ETag", "Vary", "Content-Type", "Last-Modified"} {
		if head.Header().Get(k) != do(fx.h, "GET", "/page.js", "Accept-Encoding", "gzip").Header().Get(k) {
			t.Errorf("HEAD %s %q differs from GET's", k, head.Header().Get(k))
		}
	}

	// A sidecar older than the original is ignored.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(fx.dir, "page.js.gz"), old, old)
	if rec := do(fx.h, "GET", "/page.js", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "" || !bytes.Equal(rec.Body.Bytes(), fx.files["page.js"]) {
		t.Errorf("stale sidecar served: %v", rec.Header())
	}
	// A direct GET of a sidecar is a file like any other.
	if rec := do(fx.h, "GET", "/page.js.br", "Accept-Encoding", "br"); rec.Code != 200 || rec.Header().Get("Content-Encoding") != "" || rec.Body.Len() == 0 {
		t.Errorf("GET page.js.br: %d %v", rec.Code, rec.Header())
	}
}

// compressionCounts counts compression events by coding and source.
type compressionCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *compressionCounts) Compressed(coding, source string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[coding+" "+source]++
}

func TestDynamicCompression(t *testing.T) {
	fx := newCompressFixture(t, newEncoders(t, 1))
	counts := &compressionCounts{n: map[string]int{}}
	fx.h.comp = counts
	rec := do(fx.h, "GET", "/plain.js", "Accept-Encoding", "br")
	tag := rec.Header().Get("ETag")
	if rec.Header().Get("Content-Encoding") != "br" || rec.Header().Get("Content-Length") != "" && rec.Header().Get("Content-Length") == fmt.Sprint(len(fx.files["plain.js"])) {
		t.Fatalf("dynamic br: %v", rec.Header())
	}
	if rec := do(fx.h, "GET", "/plain.js", "Accept-Encoding", "br", "If-None-Match", tag); rec.Code != 304 || rec.Header().Get("ETag") != tag || rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("If-None-Match with the dynamic ETag: %d %v", rec.Code, rec.Header())
	}
	if rec := do(fx.h, "GET", "/plain.js", "Accept-Encoding", "gzip", "If-None-Match", tag); rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("br ETag matched a gzip response: %d %v", rec.Code, rec.Header())
	}
	head := do(fx.h, "HEAD", "/plain.js", "Accept-Encoding", "br")
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Encoding") != "br" || head.Header().Get("ETag") != tag || head.Header().Get("Content-Length") != "" {
		t.Errorf("HEAD: %d %v", head.Code, head.Header())
	}
	// Every slot taken: identity at once, never a wait.
	hold, ok := fx.h.cfg.Compress.Start(httptest.NewRecorder(), encode.Gzip, 0)
	if !ok {
		t.Fatal("slot not free")
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(fx.h, "GET", "/plain.js", "Accept-Encoding", "gzip") }()
	select {
	case rec := <-done:
		if rec.Header().Get("Content-Encoding") != "" || !bytes.Equal(rec.Body.Bytes(), fx.files["plain.js"]) || !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
			t.Errorf("beyond the slots: %v", rec.Header())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a response waited for a compression slot")
	}
	hold.Close()
	if rec := do(fx.h, "GET", "/plain.js", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("slot not given back: %v", rec.Header())
	}
	do(fx.h, "GET", "/page.js", "Accept-Encoding", "zstd")
	want := map[string]int{"br dynamic": 3, // GET, 304 and HEAD
		"gzip dynamic": 2, "gzip refused": 1, "zstd sidecar": 1}
	if fmt.Sprint(counts.n) != fmt.Sprint(want) {
		t.Errorf("compression events %v; want %v", counts.n, want)
	}
}

func TestSniffedTextCompressed(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"README": strings.Repeat("plain words of a readme\n", 100)})
	h.cfg.Compress = newEncoders(t, 1)
	rec := do(h, "GET", "/README", "Accept-Encoding", "gzip")
	if rec.Header().Get("Content-Encoding") != "gzip" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("extensionless text: %v", rec.Header())
	}
}

func TestListingHidesSidecars(t *testing.T) {
	big := strings.Repeat("x", 2000)
	h, _ := newTestHandler(t, map[string]string{
		"app.js": big, "app.js.gz": "gz", "app.js.br": "br", "app.js.zst": "zst",
		"backup.tar.gz": "lone", "small.txt": "tiny", "small.txt.gz": "kept: its file is too small to be compressed",
		"photo.png": big, "photo.png.gz": "kept: png is never compressed",
		"data.json.br": "lone too",
	})
	recordSidecars(t, h, "app.js.gz", "app.js.br", "app.js.zst", "small.txt.gz", "photo.png.gz")
	rec := do(h, "GET", "/", "Accept", "application/json")
	var names []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if _, n, ok := strings.Cut(line, `"name":"`); ok {
			n, _, _ = strings.Cut(n, `"`)
			names = append(names, n)
		}
	}
	if got := strings.Join(names, " "); got != "app.js backup.tar.gz data.json.br photo.png photo.png.gz small.txt small.txt.gz" {
		t.Errorf("listing: %s", got)
	}
}

// panicky is a folder whose files panic when read, as a bug in a store
// would.
type panicky struct{ largo.Store }

type panickyFile struct{ largo.File }

func (p panicky) Open(ctx context.Context, name string) (largo.File, error) {
	f, err := p.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return panickyFile{f}, nil
}
func (panickyFile) Read([]byte) (int, error) { panic("a bug below") }

// TestPanicFreesCompressionSlot: a response that panics while compressed
// gives its slot back; with one slot, the next response is compressed.
func TestPanicFreesCompressionSlot(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"app.js": strings.Repeat("let x = 1;\n", 500)})
	good := h.cfg.Store
	h.cfg.Store = panicky{good}
	h.cfg.Compress = newEncoders(t, 1)
	h = New(h.cfg)
	func() {
		defer func() {
			// The status line was out: the connection is cut.
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("a panicking read: %v; want the connection cut", v)
			}
		}()
		do(h, "GET", "/app.js", "Accept-Encoding", "gzip")
	}()
	h.cfg.Store = good
	h = New(h.cfg)
	if rec := do(h, "GET", "/app.js", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("after a panic, the next response went out uncompressed: the slot was kept")
	}
}

// TestUploadedFileIsNoSidecar uploads data.csv, then a data.csv.gz of its
// own, newer: a gzip client asking for data.csv gets data.csv's bytes,
// the listing shows data.csv.gz, and deleting data.csv leaves it.
func TestUploadedFileIsNoSidecar(t *testing.T) {
	csv := strings.Repeat("id,name,value\n1,largo,42\n", 200)
	own := compress(t, encode.Gzip, []byte(strings.Repeat("another table\n", 300)))
	h, dir, _ := newWriteHandler(t, nil, Config{})
	for _, f := range []struct{ name, body string }{{"/data.csv", csv}, {"/data.csv.gz", string(own)}} {
		rec := send(h, "PUT", f.name, strings.NewReader(f.body), int64(len(f.body)), "Authorization", "Bearer "+token)
		if rec.Code != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", f.name, rec.Code, rec.Body)
		}
	}
	// Newer than data.csv, as a sidecar would be.
	later := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, "data.csv.gz"), later, later)

	rec := do(h, "GET", "/data.csv", "Accept-Encoding", "gzip")
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != csv {
		t.Errorf("GET data.csv for gzip: %d %v, %d bytes; want data.csv's own %d", rec.Code, rec.Header(), rec.Body.Len(), len(csv))
	}
	rec = do(h, "GET", "/", "Accept", "application/json")
	if !strings.Contains(rec.Body.String(), `"name":"data.csv.gz"`) {
		t.Errorf("the listing hides data.csv.gz:\n%s", rec.Body)
	}
	rec = send(h, "DELETE", "/data.csv", nil, 0, "Authorization", "Bearer "+token)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE data.csv: %d", rec.Code)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data.csv.gz")); err != nil || !bytes.Equal(b, own) {
		t.Errorf("data.csv.gz after DELETE of data.csv: %v", err)
	}
}

// TestAnySidecars serves hand-made sidecars, as nginx's gzip_static does,
// when told to: a fresh one without a record is sent, a stale one is not,
// and the listing hides only the fresh one.
func TestAnySidecars(t *testing.T) {
	js := strings.Repeat("function add(a, b) { return a + b; }\n", 100)
	h, dir := newTestHandler(t, map[string]string{"app.js": js, "old.js": js})
	write(t, filepath.Join(dir, "app.js.gz"), compress(t, encode.Gzip, []byte(js)))
	write(t, filepath.Join(dir, "old.js.gz"), compress(t, encode.Gzip, []byte(js)))
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "old.js.gz"), past, past)
	for _, anySidecar := range []bool{false, true} {
		h := New(Config{Store: h.cfg.Store, Sidecars: sidecar.NewPolicy(nil, anySidecar, ContentType)})
		rec := do(h, "GET", "/app.js", "Accept-Encoding", "gzip")
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != anySidecar {
			t.Errorf("any %v: hand-made sidecar served %v", anySidecar, got)
		}
		if rec := do(h, "GET", "/old.js", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != js {
			t.Errorf("any %v: a stale sidecar was served", anySidecar)
		}
		listed := do(h, "GET", "/", "Accept", "application/json").Body.String()
		if strings.Contains(listed, `"app.js.gz"`) == anySidecar || !strings.Contains(listed, `"old.js.gz"`) {
			t.Errorf("any %v: listing %s", anySidecar, listed)
		}
	}
}

// TestStaleRecordedSidecar: once data.csv is uploaded again, its recorded
// data.csv.gz is no longer sent as its encoding, but it is still largo's
// sidecar, not a user's file: hidden from the listing, and removed with
// data.csv.
func TestStaleRecordedSidecar(t *testing.T) {
	csv := strings.Repeat("id,name\n1,largo\n", 200)
	h, dir, _ := newWriteHandler(t, map[string]string{"data.csv": csv}, Config{})
	write(t, filepath.Join(dir, "data.csv.gz"), compress(t, encode.Gzip, []byte(csv)))
	recordSidecars(t, h, "data.csv.gz")
	if rec := do(h, "GET", "/data.csv", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("the recorded sidecar is not served: %v", rec.Header())
	}
	newer := strings.Repeat("id,name\n2,other\n", 200)
	if rec := send(h, "PUT", "/data.csv", strings.NewReader(newer), int64(len(newer)), "Authorization", "Bearer "+token); rec.Code != http.StatusNoContent {
		t.Fatalf("PUT data.csv again: %d", rec.Code)
	}
	if rec := do(h, "GET", "/data.csv", "Accept-Encoding", "gzip"); rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != newer {
		t.Errorf("a sidecar of the old data.csv was served for the new one: %v", rec.Header())
	}
	if l := do(h, "GET", "/", "Accept", "application/json").Body.String(); strings.Contains(l, "data.csv.gz") {
		t.Errorf("the stale sidecar is listed:\n%s", l)
	}
	if rec := send(h, "DELETE", "/data.csv", nil, 0, "Authorization", "Bearer "+token); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE data.csv: %d", rec.Code)
	}
	if _, err := os.Stat(filepath.Join(dir, "data.csv.gz")); !os.IsNotExist(err) {
		t.Errorf("the stale sidecar outlived its file: %v", err)
	}
	if _, err := h.cfg.Files.Get(context.Background(), "data.csv.gz"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the record of the removed sidecar: %v", err)
	}
}
