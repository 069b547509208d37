package client_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"largo/client"
	"largo/disk"
	"largo/serve"
)

// writeRandom writes size seeded pseudo-random bytes to path and returns
// their sha256 in hex.
func writeRandom(t testing.TB, path string, size int64, seed byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.NewChaCha8([32]byte{seed}), size); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func fileSHA(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil))
}

// faults wraps a handler with the failures a bad link or an odd server
// causes. Its fields may be changed between requests.
type faults struct {
	h http.Handler

	mu       sync.Mutex
	cuts     int           // how many of the next responses are cut...
	cutAfter int64         // ...after this many body bytes
	stall    time.Duration // a cut response stalls this long before the cut
	noRanges bool          // drop Range and If-Range: a server without ranges
	digest   string        // when set, sent as Repr-Digest

	sent     atomic.Int64 // body bytes sent in all
	requests atomic.Int64
	ranged   atomic.Int64 // requests that carried a Range
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	cut := f.cuts > 0 && r.Method == http.MethodGet
	if cut {
		f.cuts--
	}
	after, stall, noRanges, dg := f.cutAfter, f.stall, f.noRanges, f.digest
	f.mu.Unlock()
	if r.Header.Get("Range") != "" {
		f.ranged.Add(1)
	}
	if noRanges {
		r.Header.Del("Range")
		r.Header.Del("If-Range")
	}
	if dg != "" {
		w.Header().Set("Repr-Digest", dg)
	}
	cw := &cutWriter{ResponseWriter: w, f: f, left: -1, stall: stall}
	if cut {
		cw.left = after
	}
	if noRanges {
		w.Header().Set("Accept-Ranges", "none")
	}
	f.h.ServeHTTP(cw, r)
}

// cutWriter counts body bytes and, with left set, aborts the connection
// once that many have gone.
type cutWriter struct {
	http.ResponseWriter
	f     *faults
	left  int64
	stall time.Duration
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.left < 0 {
		n, err := c.ResponseWriter.Write(p)
		c.f.sent.Add(int64(n))
		return n, err
	}
	if int64(len(p)) <= c.left {
		n, err := c.ResponseWriter.Write(p)
		c.left -= int64(n)
		c.f.sent.Add(int64(n))
		return n, err
	}
	n, _ := c.ResponseWriter.Write(p[:c.left])
	c.f.sent.Add(int64(n))
	http.NewResponseController(c.ResponseWriter).Flush()
	time.Sleep(c.stall)
	panic(http.ErrAbortHandler)
}

// largoServer serves dir with largo's own handler behind faults.
func largoServer(t testing.TB, dir string) (*httptest.Server, *faults) {
	t.Helper()
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &faults{h: serve.New(serve.Config{Store: st})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, f
}

// reprDigest is the Repr-Digest of a sha256 given in hex.
func reprDigest(hexSum string) string {
	b, _ := hex.DecodeString(hexSum)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(b) + ":"
}

// logs collects a client's notices.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// newClient is a client with quick retries whose notices go to l.
func newClient(l *logs, retries int) *client.Client {
	return &client.Client{Retries: retries, Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, StallTimeout: 5 * time.Second, Logf: l.logf}
}

// countProgress counts what a transfer reports.
type countProgress struct {
	begins atomic.Int64
	first  atomic.Int64 // done at the last Begin
	added  atomic.Int64
}

func (p *countProgress) Begin(_ string, _, done int64) { p.begins.Add(1); p.first.Store(done) }
func (p *countProgress) Add(n int64)                   { p.added.Add(n) }
func (p *countProgress) End()                          {}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func httpServer(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
