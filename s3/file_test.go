package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"largo"
	"largo/s3/s3test"
)

// wire is a RoundTripper that records the requests a store sends and
// counts the body bytes it reads back, over the real transport.
type wire struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	reqs []string // "METHOD Range"
	read atomic.Int64
	open atomic.Int64 // bodies not yet closed
}

func newWire() *wire { return &wire{rt: http.DefaultTransport.(*http.Transport).Clone()} }

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.reqs = append(w.reqs, r.Method+" "+r.Header.Get("Range"))
	w.mu.Unlock()
	resp, err := w.rt.RoundTrip(r)
	if err == nil {
		w.open.Add(1)
		resp.Body = &countedBody{ReadCloser: resp.Body, w: w}
	}
	return resp, err
}

// requests returns the requests sent so far and forgets them.
func (w *wire) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.reqs
	w.reqs = nil
	return r
}

type countedBody struct {
	io.ReadCloser
	w      *wire
	closed atomic.Bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.read.Add(int64(n))
	return n, err
}

func (b *countedBody) Close() error {
	if !b.closed.Swap(true) {
		b.w.open.Add(-1)
	}
	return b.ReadCloser.Close()
}

// wiredStore returns a store on srv's bucket whose traffic w records.
func wiredStore(t *testing.T, srv *s3test.Server, w *wire) *Store {
	t.Helper()
	s, err := New(context.Background(), Config{
		Bucket:    srv.Bucket,
		Endpoint:  srv.Endpoint,
		Region:    srv.Region,
		AccessKey: srv.AccessKey,
		SecretKey: srv.SecretKey,
		Transport: w,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.requests()
	return s
}

// openWired puts an object of size random bytes and opens it, with ctx,
// on a store whose traffic the returned wire records. The file is closed
// when the test ends.
func openWired(t *testing.T, ctx context.Context, size int) (*wire, largo.File) {
	t.Helper()
	srv := s3test.Start(t, s3test.Options{})
	srv.Put(t, "obj", randomBytes(size, uint64(size)))
	w := newWire()
	s := wiredStore(t, srv, w)
	f, err := s.Open(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return w, f
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	r.Read(b)
	return b
}

// TestLazyReads checks what a file fetches: nothing at Open but one HEAD,
// a window per GET that starts small and grows, each conditional on the
// ETag, and no more bytes off the wire than a window beyond what was read.
func TestLazyReads(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	data := randomBytes(5<<20+123, 1)
	srv.Put(t, "big.bin", data)
	w := newWire()
	s := wiredStore(t, srv, w)
	ctx := context.Background()

	f, err := s.Open(ctx, "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := w.requests(); len(got) != 1 || got[0] != "HEAD " {
		t.Fatalf("Open sent %q; want one HEAD", got)
	}
	in := f.Info()
	if in.Size != int64(len(data)) || in.ETag == "" || in.ETag[0] != '"' || in.ModTime.IsZero() {
		t.Fatalf("Info = %+v", in)
	}

	// A short read in the middle: one GET of the first window from there.
	const at = 3 << 20
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got := w.requests(); len(got) != 0 {
		t.Fatalf("Seek sent %q", got)
	}
	buf := make([]byte, 100)
	if _, err := io.ReadFull(f, buf); err != nil || !bytes.Equal(buf, data[at:at+100]) {
		t.Fatalf("read at %d: %v", at, err)
	}
	want := fmt.Sprintf("GET bytes=%d-%d", at, at+firstWindow-1)
	if got := w.requests(); len(got) != 1 || got[0] != want {
		t.Fatalf("read sent %q; want %q", got, want)
	}
	if r := w.read.Load(); r > firstWindow {
		t.Fatalf("%d bytes came off the wire for a 100-byte read", r)
	}

	// Reading on to the end: windows double, and the bytes match.
	rest, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(rest, data[at+100:]) {
		t.Fatalf("read to the end: %d bytes, %v", len(rest), err)
	}
	reqs := w.requests()
	wantReqs := []string{
		fmt.Sprintf("GET bytes=%d-%d", at+firstWindow, at+3*firstWindow-1),
		fmt.Sprintf("GET bytes=%d-%d", at+3*firstWindow, len(data)-1),
	}
	if fmt.Sprint(reqs) != fmt.Sprint(wantReqs) {
		t.Fatalf("reading on sent %q; want %q", reqs, wantReqs)
	}

	// Back to the start: a whole read, and the sha matches.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("whole read: %d bytes, %v", len(all), err)
	}
	if n, _ := f.Read(buf); n != 0 {
		t.Fatal("read past the end returned bytes")
	}
	if open := w.open.Load(); open != 0 {
		t.Fatalf("%d response bodies left open after reading to the end", open)
	}
}

// TestSmallSkip seeks a little ahead inside the window: no new request.
func TestSmallSkip(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	data := randomBytes(1<<20, 2)
	srv.Put(t, "f", data)
	w := newWire()
	s := wiredStore(t, srv, w)
	f, err := s.Open(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 10)
	for _, off := range []int64{0, 1000, 60000, 500, 600000} {
		f.Seek(off, io.SeekStart)
		if _, err := io.ReadFull(f, buf); err != nil || !bytes.Equal(buf, data[off:off+10]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	// 0: a GET; 1000 and 60000: skipped to; 500: backwards, a GET;
	// 600000: past the window, a GET.
	if got := w.requests(); len(got) != 4 {
		t.Fatalf("sent %q; want 4 requests", got)
	}
}

// TestReplacedWhileReading replaces an object between two windows of a
// read: the next GET must fail (If-Match) instead of returning bytes of the
// new version, and a new Open sees the new version.
func TestReplacedWhileReading(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	old := bytes.Repeat([]byte("old!"), 1<<18) // 1 MiB
	srv.Put(t, "v", old)
	s := newStore(t, srv, srv.Bucket, "")
	ctx := context.Background()
	f, err := s.Open(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := make([]byte, firstWindow)
	if _, err := io.ReadFull(f, first); err != nil || !bytes.Equal(first, old[:firstWindow]) {
		t.Fatalf("first window: %v", err)
	}
	srv.Put(t, "v", bytes.Repeat([]byte("NEW!"), 1<<18))
	n, err := f.Read(first)
	if !errors.Is(err, largo.ErrPrecondition) {
		t.Fatalf("read after the replace: %d bytes, %v; want ErrPrecondition", n, err)
	}
	g, err := s.Open(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Info().ETag == f.Info().ETag {
		t.Fatalf("ETag unchanged after the replace: %s", g.Info().ETag)
	}
	b, err := io.ReadAll(g)
	if err != nil || !bytes.HasPrefix(b, []byte("NEW!")) {
		t.Fatalf("new version: %v", err)
	}
}

// TestCancel cancels the context a file was opened with while a GET is in
// flight: the read ends at once and the body is closed.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w, f := openWired(t, ctx, 4<<20)
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(f, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	start := time.Now()
	var rerr error
	for rerr == nil && time.Since(start) < 5*time.Second {
		_, rerr = f.Read(buf)
	}
	if !errors.Is(rerr, context.Canceled) {
		t.Fatalf("read after cancel: %v; want context.Canceled", rerr)
	}
	if w.read.Load() > 2*firstWindow {
		t.Fatalf("%d bytes fetched", w.read.Load())
	}
	f.Close()
	if open := w.open.Load(); open != 0 {
		t.Fatalf("%d response bodies left open after Close", open)
	}
}

// TestCloseMidWindow closes a file half-way through a window.
func TestCloseMidWindow(t *testing.T) {
	w, f := openWired(t, context.Background(), 2<<20)
	buf := make([]byte, 1000)
	io.ReadFull(f, buf)
	if w.open.Load() != 1 {
		t.Fatalf("%d bodies open during the read; want 1", w.open.Load())
	}
	f.Close()
	if w.open.Load() != 0 {
		t.Fatalf("%d bodies open after Close", w.open.Load())
	}
	if _, err := f.Read(buf); err == nil {
		t.Fatal("read after Close succeeded")
	}
}
