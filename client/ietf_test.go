package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"largo/client"
	"largo/resumable"
	"largo/serve"
)

// ietfServer is largo's handler with both resumable front ends on a
// folder; in front of it, a cut of the next PUT's body, as a dropped
// connection.
type ietfServer struct {
	*httptest.Server
	dir      string
	cutAfter atomic.Int64 // cut the next PUT body after this many bytes
	received atomic.Int64

	mu       sync.Mutex
	requests []string // method, Upload-Complete, Content-Length, and whether it had Repr-Digest
}

func newIETFServer(t testing.TB, ietf bool) *ietfServer {
	t.Helper()
	s := &ietfServer{dir: t.TempDir()}
	s.cutAfter.Store(-1)
	cfg, rh := writable(t, s.dir, false)
	if ietf {
		var err error
		if cfg.Resumer, err = rh.IETF(resumable.IETFConfig{BasePath: serve.ResumerPrefix}); err != nil {
			t.Fatal(err)
		}
	}
	h := serve.New(cfg)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut || r.Method == http.MethodPatch {
			s.mu.Lock()
			s.requests = append(s.requests, strings.Join([]string{r.Method, r.Header.Get("Upload-Complete"), r.Header.Get("Content-Length"), boolText(r.Header.Get("Repr-Digest") != "")}, " "))
			s.mu.Unlock()
		}
		cb := &cutBody{r: r.Body, left: -1, n: &s.received}
		if r.Method == http.MethodPut {
			cb.left = s.cutAfter.Swap(-1)
		}
		r.Body = cb
		if cb.left >= 0 {
			// The 104 reaches the client, then its connection drops.
			h.ServeHTTP(interimOnly{w}, r)
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func boolText(b bool) string {
	if b {
		return "digest"
	}
	return "-"
}

func (s *ietfServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.requests, "; ")
}

// interimOnly passes the interim responses on, and drops the final one.
type interimOnly struct{ http.ResponseWriter }

func (i interimOnly) WriteHeader(code int) {
	if code < 200 {
		i.ResponseWriter.WriteHeader(code)
	}
}
func (i interimOnly) Write(p []byte) (int, error) { return len(p), nil }
func (i interimOnly) Unwrap() http.ResponseWriter { return i.ResponseWriter }

// TestPutIETF: the file goes to its own URL, all but its last 4 MiB in
// the creating PUT, the rest with its digest in the PATCH that completes
// the upload.
func TestPutIETF(t *testing.T) {
	s := newIETFServer(t, true)
	file := filepath.Join(t.TempDir(), "up.bin")
	const size = 9<<20 + 3
	want := writeRandom(t, file, size, 30)
	var l logs
	c := tusClient(t, &l, 0)
	d, err := c.DiscoverIETF(s.URL + "/files/")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "files", "up.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if res.Moved != size || res.Verified != reprDigest(want) || res.Resumed {
		t.Errorf("result %+v", res)
	}
	if got, want := s.log(), "PUT ?0 5242883 -; PATCH ?1 4194304 digest"; got != want {
		t.Errorf("requests %q; want %q", got, want)
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 0 {
		t.Errorf("%d upload states left after the upload ended", len(states))
	}

	// A small file goes whole, with its digest, in one PUT.
	small := filepath.Join(t.TempDir(), "small.txt")
	os.WriteFile(small, []byte("small"), 0o644)
	if _, err := c.Put(context.Background(), small, d, ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.dir, "files", "small.txt")); string(b) != "small" {
		t.Errorf("small.txt holds %q", b)
	}
	if got := s.log(); !strings.HasSuffix(got, "; PUT ?1 5 digest") {
		t.Errorf("requests %q", got)
	}
}

// TestPutIETFResume cuts the creating PUT after the 104: the next run
// asks the upload resource for its offset and sends only the rest; a run
// with retries does the same by itself.
func TestPutIETFResume(t *testing.T) {
	s := newIETFServer(t, true)
	file := filepath.Join(t.TempDir(), "up.bin")
	const size, cut = 12 << 20, 3 << 20
	want := writeRandom(t, file, size, 31)
	s.cutAfter.Store(cut)
	var l logs
	c := tusClient(t, &l, 0)
	d, _ := c.DiscoverIETF(s.URL + "/files/")
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
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "files", "up.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if !res.Resumed || res.Moved != size-cut || p.first.Load() != cut {
		t.Fatalf("resume: %+v, progress began at %d", res, p.first.Load())
	}

	// Within one run, with retries.
	s.cutAfter.Store(cut)
	c = tusClient(t, &l, 2)
	os.Remove(filepath.Join(s.dir, "files", "up.bin"))
	if _, err = c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatalf("with retries: %v", err)
	}
	if got := fileSHA(t, filepath.Join(s.dir, "files", "up.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	// Each upload was sent once, the bytes before its cut counted twice
	// at most (those in flight when the connection dropped).
	if s.received.Load() > 2*size+2*cut {
		t.Errorf("the server received %d bytes for two uploads of %d", s.received.Load(), size)
	}
}

// TestPutIETFCancel: --cancel removes the remembered upload on the server.
func TestPutIETFCancel(t *testing.T) {
	s := newIETFServer(t, true)
	file := filepath.Join(t.TempDir(), "up.bin")
	writeRandom(t, file, 6<<20, 32)
	s.cutAfter.Store(1 << 20)
	var l logs
	c := tusClient(t, &l, 0)
	d, _ := c.DiscoverIETF(s.URL + "/")
	if _, err := c.Put(context.Background(), file, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatalf("cut upload: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.dir, ".largo", "tus")); len(ents) == 0 {
		t.Fatal("no upload on the server")
	}
	found, err := c.Cancel(context.Background(), file, d, "")
	if !found || err != nil {
		t.Fatalf("Cancel = %v, %v", found, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files left after the cancellation", len(ents))
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 0 {
		t.Errorf("%d upload states left", len(states))
	}
}

// TestPutIETFUnsupported: a server that does not make the PUT resumable
// refuses a part; the client says so and stores nothing.
func TestPutIETFUnsupported(t *testing.T) {
	s := newIETFServer(t, false)
	file := filepath.Join(t.TempDir(), "up.bin")
	writeRandom(t, file, 5<<20, 33)
	var l logs
	c := tusClient(t, &l, 0)
	d, _ := c.DiscoverIETF(s.URL + "/")
	_, err := c.Put(context.Background(), file, d, "")
	var se *client.StatusError
	if !errors.As(err, &se) || se.Code != 400 || errors.Is(err, client.ErrResumable) {
		t.Fatalf("Put = %v", err)
	}
	if exists(filepath.Join(s.dir, "up.bin")) {
		t.Error("a part was stored")
	}
}
