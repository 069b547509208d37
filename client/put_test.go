package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"golang.org/x/exp/slog"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tus/tusd/v2/pkg/filestore"
	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo/client"
)

// tusServer is tusd, the reference tus server, with its file store, at
// /files/ on a test server; in front of it the faults an upload meets.
type tusServer struct {
	*httptest.Server
	dir      string
	token    string       // when set, required as a bearer token
	cutAfter atomic.Int64 // cut the next PATCH body after this many bytes
	patches  atomic.Int64
	received atomic.Int64
	// checksum, when set, makes the front offer the checksum extension
	// with sha256 and check each PATCH; corrupt flips a byte of the next
	// checked PATCH, as a bad link would.
	checksum bool
	corrupt  atomic.Bool
	// repr and reprLen are the Repr-Digest field of the last PATCH that
	// had one, and that PATCH's length.
	repr    atomic.Value
	reprLen atomic.Int64
}

func newTusServer(t testing.TB) *tusServer {
	t.Helper()
	ts := &tusServer{dir: t.TempDir()}
	ts.cutAfter.Store(-1)
	composer := tusd.NewStoreComposer()
	filestore.New(ts.dir).UseIn(composer)
	h, err := tusd.NewHandler(tusd.Config{BasePath: "/files/", StoreComposer: composer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files/", h))
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ts.token != "" && r.Method != http.MethodOptions && r.Header.Get("Authorization") != "Bearer "+ts.token {
			http.Error(w, "a valid token is needed", http.StatusUnauthorized)
			return
		}
		if ts.checksum && r.Method == http.MethodOptions {
			w.Header().Set("Tus-Checksum-Algorithm", "sha1,sha256")
			mux.ServeHTTP(&extWriter{ResponseWriter: w}, r)
			return
		}
		if r.Method == http.MethodPatch {
			ts.patches.Add(1)
			if v := r.Header.Get("Repr-Digest"); v != "" {
				ts.repr.Store(v)
				ts.reprLen.Store(r.ContentLength)
			}
			if ts.checksum && !ts.checkChunk(w, r) {
				return
			}
			cb := &cutBody{r: r.Body, left: ts.cutAfter.Swap(-1), n: &ts.received}
			r.Body = cb
			if cb.left >= 0 {
				// tusd keeps what arrived; the client sees its connection drop.
				mux.ServeHTTP(discard{}, r)
				panic(http.ErrAbortHandler)
			}
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// checkChunk does what a server with the checksum extension does: it
// reads the chunk, compares it with Upload-Checksum and answers 460 on a
// mismatch.
func (ts *tusServer) checkChunk(w http.ResponseWriter, r *http.Request) bool {
	alg, sum, _ := strings.Cut(r.Header.Get("Upload-Checksum"), " ")
	b, err := io.ReadAll(r.Body)
	if alg != "sha256" || err != nil {
		http.Error(w, "want a sha256 Upload-Checksum", http.StatusBadRequest)
		return false
	}
	if ts.corrupt.Swap(false) && len(b) > 0 {
		b[len(b)/2] ^= 1
	}
	got := sha256.Sum256(b)
	if base64.StdEncoding.EncodeToString(got[:]) != sum {
		http.Error(w, "checksum mismatch", 460)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return true
}

// extWriter adds "checksum" to the extensions tusd announces.
type extWriter struct{ http.ResponseWriter }

func (e *extWriter) WriteHeader(code int) {
	h := e.Header()
	h.Set("Tus-Extension", h.Get("Tus-Extension")+",checksum")
	e.ResponseWriter.WriteHeader(code)
}

// discard is a ResponseWriter that drops the response.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// cutBody fails after left bytes (never when left is negative), as a
// connection that drops mid-upload.
type cutBody struct {
	r    io.ReadCloser
	left int64
	n    *atomic.Int64
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if c.left > 0 && int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	if c.left > 0 {
		c.left -= int64(n)
	}
	return n, err
}

func (c *cutBody) Close() error { return c.r.Close() }

// uploads returns the sha256 of each upload tusd holds, with its metadata.
func (ts *tusServer) uploads(t testing.TB) (sums []string, meta []string) {
	t.Helper()
	infos, _ := filepath.Glob(filepath.Join(ts.dir, "*.info"))
	for _, info := range infos {
		b, _ := os.ReadFile(info)
		meta = append(meta, string(b))
		sums = append(sums, fileSHA(t, strings.TrimSuffix(info, ".info")))
	}
	return sums, meta
}

func tusClient(t *testing.T, l *logs, retries int) *client.Client {
	c := newClient(l, retries)
	c.StateDir = t.TempDir()
	return c
}

func TestPutTus(t *testing.T) {
	ts := newTusServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 5<<20+3, 20)
	var l logs
	c := tusClient(t, &l, 0)
	d, err := c.Discover(context.Background(), ts.URL+"/files/", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatal(err)
	}
	sums, meta := ts.uploads(t)
	if len(sums) != 1 || sums[0] != want || res.Moved != 5<<20+3 {
		t.Fatalf("uploads %v (want one of %s), %+v", sums, want, res)
	}
	if !strings.Contains(meta[0], `"filename":"up.bin"`) {
		t.Errorf("metadata lacks the filename: %s", meta[0])
	}
	// The file's digest goes with its last 4 MiB, in a request of their own.
	if got, _ := ts.repr.Load().(string); got != reprDigest(want) || ts.reprLen.Load() != 4<<20 || ts.patches.Load() != 2 {
		t.Errorf("Repr-Digest %q on a PATCH of %d bytes, %d PATCHes; want %q on the last 4 MiB, 2 PATCHes", got, ts.reprLen.Load(), ts.patches.Load(), reprDigest(want))
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 0 {
		t.Errorf("%d upload states left after the upload ended", len(states))
	}
}

// TestPutTusResume cuts an upload; the next run resumes the same upload
// from the server's offset.
func TestPutTusResume(t *testing.T) {
	ts := newTusServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	const size = 12 << 20
	want := writeRandom(t, file, size, 21)
	ts.cutAfter.Store(5 << 20)
	var l logs
	c := tusClient(t, &l, 0)
	d, err := c.Discover(context.Background(), ts.URL+"/files/", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(context.Background(), file, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatalf("cut upload: %v", err)
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 1 {
		t.Fatalf("%d upload states after a cut; want 1", len(states))
	}
	p := &countProgress{}
	c.Progress = func() client.Progress { return p }
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatal(err)
	}
	sums, _ := ts.uploads(t)
	if len(sums) != 1 || sums[0] != want {
		t.Fatalf("uploads on the server: %v; want one, %s", sums, want)
	}
	if !res.Resumed || res.Moved != size-5<<20 || ts.received.Load() != size || p.first.Load() != 5<<20 {
		t.Fatalf("resume: %+v, server received %d in all, progress began at %d", res, ts.received.Load(), p.first.Load())
	}
}

// TestPutTusRetry cuts the upload once: the retry asks the server for its
// offset and goes on within the same run.
func TestPutTusRetry(t *testing.T) {
	ts := newTusServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 6<<20, 22)
	ts.cutAfter.Store(1 << 20)
	var l logs
	c := tusClient(t, &l, 2)
	d, _ := c.Discover(context.Background(), ts.URL+"/files/", false)
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if sums, _ := ts.uploads(t); len(sums) != 1 || sums[0] != want || ts.received.Load() != 6<<20 {
		t.Fatalf("%v, %d received", sums, ts.received.Load())
	}
}

// TestPutTusChecksum uploads in checked chunks; one chunk arrives corrupt
// and is sent again.
func TestPutTusChecksum(t *testing.T) {
	ts := newTusServer(t)
	ts.checksum = true
	ts.corrupt.Store(true)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 3<<20+1, 23)
	var l logs
	c := tusClient(t, &l, 2)
	c.ChunkSize = 1 << 20
	d, err := c.Discover(context.Background(), ts.URL+"/files/", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if sums, _ := ts.uploads(t); len(sums) != 1 || sums[0] != want || ts.patches.Load() != 5 || !l.has("checksum mismatch") {
		t.Fatalf("%v, %d PATCHes (want 4 chunks and one again), %+v\n%s", sums, ts.patches.Load(), res, l.String())
	}
}

func TestPutTusToken(t *testing.T) {
	ts := newTusServer(t)
	ts.token = "s3cret"
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 1000, 24)
	var l logs
	c := tusClient(t, &l, 3)
	c.Token = "wrong"
	d, _ := c.Discover(context.Background(), ts.URL+"/files/", false)
	_, err := c.Put(context.Background(), file, d, "")
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != 401 || errors.Is(err, client.ErrResumable) {
		t.Fatalf("wrong token: %v", err)
	}
	c.Token = "s3cret"
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatal(err)
	}
	if sums, _ := ts.uploads(t); len(sums) != 1 || sums[0] != want {
		t.Fatalf("%v", sums)
	}
}

// TestPutTusGone cancels the remembered upload on the server: the next
// run starts a new one.
func TestPutTusGone(t *testing.T) {
	ts := newTusServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 4<<20, 25)
	ts.cutAfter.Store(1 << 20)
	var l logs
	c := tusClient(t, &l, 0)
	d, _ := c.Discover(context.Background(), ts.URL+"/files/", false)
	if _, err := c.Put(context.Background(), file, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatal(err)
	}
	// The server forgets the upload (as when it expires).
	infos, _ := filepath.Glob(filepath.Join(ts.dir, "*"))
	for _, p := range infos {
		os.Remove(p)
	}
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatal(err)
	}
	if sums, _ := ts.uploads(t); len(sums) != 1 || sums[0] != want || !l.has("no longer has the upload") {
		t.Fatalf("%v\n%s", sums, l.String())
	}
	// Cancel terminates a remembered upload.
	ts.cutAfter.Store(1 << 20)
	file2 := filepath.Join(t.TempDir(), "two.bin")
	writeRandom(t, file2, 3<<20, 26)
	if _, err := c.Put(context.Background(), file2, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatal(err)
	}
	if found, err := c.Cancel(context.Background(), file2, d, ""); !found || err != nil {
		t.Fatalf("cancel: %v %v", found, err)
	}
	if sums, _ := ts.uploads(t); len(sums) != 1 {
		t.Fatalf("%d uploads after the cancel; want 1", len(sums))
	}
}

// putServer is a tiny server for plain PUTs: it stores bodies by path
// and checks Repr-Digest as a careful server does.
type putServer struct {
	mu    sync.Mutex
	files map[string]string // path: sha256
}

func (p *putServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "PUT only", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength < 0 {
		http.Error(w, "Content-Length needed", http.StatusLengthRequired)
		return
	}
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil || n != r.ContentLength {
		http.Error(w, "short body", http.StatusBadRequest)
		return
	}
	sum := h.Sum(nil)
	dg := "sha-256=:" + base64.StdEncoding.EncodeToString(sum) + ":"
	if r.Header.Get("Repr-Digest") != dg {
		http.Error(w, "digest mismatch", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	p.files[r.URL.Path] = hex.EncodeToString(sum)
	p.mu.Unlock()
	w.Header().Set("Repr-Digest", dg)
	w.WriteHeader(http.StatusCreated)
}

func TestPutPlain(t *testing.T) {
	ps := &putServer{files: map[string]string{}}
	srv := httpServer(t, ps)
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "a b.bin"), 2<<20, 27)
	empty := writeRandom(t, filepath.Join(dir, "sub", "empty"), 0, 28)
	var l logs
	c := tusClient(t, &l, 0)
	d, err := c.Discover(context.Background(), srv.URL+"/up/", true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Put(context.Background(), filepath.Join(dir, "a b.bin"), d, "")
	if err != nil || ps.files["/up/a b.bin"] != want || res.Verified == "" {
		t.Fatalf("%v %v %+v", err, ps.files, res)
	}
	d, _ = c.Discover(context.Background(), srv.URL+"/named.bin", true)
	if _, err := c.Put(context.Background(), filepath.Join(dir, "a b.bin"), d, ""); err != nil || ps.files["/named.bin"] != want {
		t.Fatalf("%v %v", err, ps.files)
	}
	d, _ = c.Discover(context.Background(), srv.URL+"/tree", true)
	tr, err := c.PutTree(context.Background(), dir, d)
	if err != nil || tr.Files != 2 || ps.files["/tree/sub/empty"] != empty || ps.files["/tree/a b.bin"] != want {
		t.Fatalf("%v %+v %v", err, tr, ps.files)
	}
}

func TestPutTreeTus(t *testing.T) {
	ts := newTusServer(t)
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "x.bin"), 1<<20, 29)
	writeRandom(t, filepath.Join(dir, "deep", "y.bin"), 10, 30)
	writeRandom(t, filepath.Join(dir, ".git", "config"), 10, 31)
	var l logs
	c := tusClient(t, &l, 0)
	d, _ := c.Discover(context.Background(), ts.URL+"/files/", false)
	tr, err := c.PutTree(context.Background(), dir, d)
	if err != nil || tr.Files != 2 {
		t.Fatalf("%+v %v", tr, err)
	}
	_, meta := ts.uploads(t)
	all := strings.Join(meta, "\n")
	if !strings.Contains(all, `"folder":"deep"`) || !strings.Contains(all, `"filename":"y.bin"`) || strings.Contains(all, "config") {
		t.Fatalf("metadata:\n%s", all)
	}
}

// TestDiscover finds no tus endpoint on a server without one.
func TestDiscover(t *testing.T) {
	srv, _ := largoServer(t, t.TempDir())
	var l logs
	_, err := tusClient(t, &l, 0).Discover(context.Background(), srv.URL+"/dir/", false)
	if err == nil || !strings.Contains(err.Error(), "--plain") {
		t.Fatalf("%v", err)
	}
}
