package client_test

import (
	"context"
	"errors"
	"net"
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
	"largo/gate"
	"largo/ingest"
	"largo/internal/poll"
	"largo/resumable"
	"largo/serve"
)

// parallelServer is largo's tus handler on a folder; in front of it, a
// cut of one PATCH's body after some bytes, as a dropped connection, and
// a count of the requests. The requests come from one anonymous user who
// may write everything.
type parallelServer struct {
	*httptest.Server
	dir      string
	cutPatch atomic.Int64 // cut the PATCH of this number (1, 2...): 0 for none
	cutAfter int64
	patches  atomic.Int64
	received atomic.Int64
	inflight atomic.Int64 // requests being answered
	dialled  atomic.Int64 // connections its clients (client) dialled
	accepted atomic.Int64 // connections it accepted
	open     sync.Map     // net.Conn -> true: accepted, not yet closed
	skew     atomic.Int64 // how far the server's clock is ahead, in ns
	rh       *resumable.Handler

	mu       sync.Mutex
	partials int
	finals   []string // the Upload-Concat of each final request
}

func newParallelServer(t testing.TB) *parallelServer {
	t.Helper()
	s := &parallelServer{dir: t.TempDir()}
	st, err := disk.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	_, gated := gate.Open(st)
	writes := ingest.New(ingest.Config{Store: gated})
	now := func() time.Time { return time.Now().Add(time.Duration(s.skew.Load())) }
	rh, err := resumable.New(resumable.Config{Writes: writes, State: st.State(), Staging: mustStaging(t, st), BasePath: serve.ResumablePrefix, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	s.rh = rh
	mux := http.NewServeMux()
	mux.Handle(serve.ResumablePrefix, rh)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r.WithContext(gate.With(r.Context(), gate.Anonymous())))
	})
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		switch c := r.Header.Get("Upload-Concat"); {
		case r.Method == http.MethodPost && c == "partial":
			s.mu.Lock()
			s.partials++
			s.mu.Unlock()
		case r.Method == http.MethodPost && strings.HasPrefix(c, "final;"):
			s.mu.Lock()
			s.finals = append(s.finals, c)
			s.mu.Unlock()
		}
		if r.Method == http.MethodPatch {
			cb := &cutBody{r: r.Body, left: -1, n: &s.received}
			if s.patches.Add(1) == s.cutPatch.Load() {
				cb.left = s.cutAfter
			}
			r.Body = cb
			if cb.left >= 0 {
				h.ServeHTTP(discard{}, r)
				panic(http.ErrAbortHandler)
			}
		}
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.accepted.Add(1)
			s.open.Store(c, true)
		case http.StateClosed, http.StateHijacked:
			s.open.Delete(c)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// client returns a client of s (parallelClient) whose connections s
// counts, and a function that closes the ones it keeps idle.
func (s *parallelServer) client(t *testing.T, l *logs, retries, n int) (*client.Client, func()) {
	c := parallelClient(t, l, retries, n)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			s.dialled.Add(1)
		}
		return conn, err
	}
	c.HTTP = &http.Client{Transport: tr}
	return c, tr.CloseIdleConnections
}

// settle waits until what a stopped client sent has all been taken: its
// idle connections closed (closeIdle), every connection it dialled
// accepted and closed, every request answered. A request the client gave
// up on may still sit in the server's socket, its handler not yet
// started, and be stored then: waiting for the handlers alone missed it.
func (s *parallelServer) settle(t *testing.T, closeIdle func()) {
	t.Helper()
	closeIdle()
	idle := func() bool {
		open := false
		s.open.Range(func(any, any) bool { open = true; return false })
		return !open && s.accepted.Load() == s.dialled.Load() && s.inflight.Load() == 0
	}
	if !poll.Until(10*time.Second, 5*time.Millisecond, idle) {
		t.Fatalf("connections still open 10 s after the client stopped: %d dialled, %d accepted", s.dialled.Load(), s.accepted.Load())
	}
}

func mustStaging(t testing.TB, st *disk.Store) resumable.Staging {
	staging, err := resumable.StagingFor(st)
	if err != nil {
		t.Fatal(err)
	}
	return staging
}

// parallelClient sends files of at least 1 byte in pieces of 1 MiB, n at
// once.
func parallelClient(t *testing.T, l *logs, retries, n int) *client.Client {
	c := tusClient(t, l, retries)
	c.Parallel, c.ParallelMin, c.PieceSize = n, 1, 1<<20
	return c
}

// staged lists what the server keeps of unfinished uploads.
func (s *parallelServer) staged(t *testing.T) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(s.dir, ".largo", "tus"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestPutParallel: a file goes in pieces over several connections and is
// joined by one final request that the server answers with the file's
// digest.
func TestPutParallel(t *testing.T) {
	s := newParallelServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	const size = 5<<20 + 3
	want := writeRandom(t, file, size, 40)
	var l logs
	c := parallelClient(t, &l, 0, 3)
	d, err := c.Discover(context.Background(), s.URL+"/in/", false)
	if err != nil {
		t.Fatal(err)
	}
	p := &countProgress{}
	c.Progress = func() client.Progress { return p }
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "in", "up.bin")); got != want {
		t.Fatalf("stored %s; want %s", got, want)
	}
	if res.Verified != reprDigest(want) || res.Joined <= 0 || res.Moved != size || res.Resumed || p.added.Load() != size {
		t.Errorf("result %+v, progress %d", res, p.added.Load())
	}
	if s.partials != 6 || len(s.finals) != 1 {
		t.Errorf("%d partials, %d finals; want 6 and 1", s.partials, len(s.finals))
	}
	if left := s.staged(t); len(left) != 0 {
		t.Errorf("staged on the server: %v", left)
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 0 {
		t.Errorf("%d upload states left", len(states))
	}
}

// TestPutParallelResume cuts one piece's connection: the run stops with
// its state kept, and the next sends only what the server lacks.
func TestPutParallelResume(t *testing.T) {
	s := newParallelServer(t)
	s.cutPatch.Store(3)
	s.cutAfter = 300 << 10
	file := filepath.Join(t.TempDir(), "up.bin")
	const size = 6 << 20
	want := writeRandom(t, file, size, 41)
	var l logs
	c, closeIdle := s.client(t, &l, 0, 2)
	d, _ := c.Discover(context.Background(), s.URL+"/", false)
	_, err := c.Put(context.Background(), file, d, "")
	if !errors.Is(err, client.ErrResumable) {
		t.Fatalf("cut upload: %v", err)
	}
	if states, _ := os.ReadDir(c.StateDir); len(states) != 1 {
		t.Fatalf("%d upload states after a cut; want 1", len(states))
	}
	s.settle(t, closeIdle)
	before := s.received.Load()
	res, err := c.Put(context.Background(), file, d, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "up.bin")); got != want {
		t.Fatalf("stored %s; want %s", got, want)
	}
	if !res.Resumed || res.Moved != size-before || s.received.Load() != size || res.Verified != reprDigest(want) {
		t.Errorf("resume: %+v; the first run moved %d", res, before)
	}
}

// TestPutParallelRetry: a piece cut once is resumed within the same run.
func TestPutParallelRetry(t *testing.T) {
	s := newParallelServer(t)
	s.cutPatch.Store(2)
	s.cutAfter = 100 << 10
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 4<<20+1, 42)
	var l logs
	c := parallelClient(t, &l, 2, 4)
	d, _ := c.Discover(context.Background(), s.URL+"/", false)
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "up.bin")); got != want || s.received.Load() != 4<<20+1 {
		t.Fatalf("stored %s (want %s), received %d", got, want, s.received.Load())
	}
}

// TestPutParallelTusd: tusd, the reference server, joins the pieces in
// the order listed, ignoring where they say they belong.
func TestPutParallelTusd(t *testing.T) {
	ts := newTusServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 3<<20+5, 43)
	var l logs
	c := parallelClient(t, &l, 0, 2)
	d, err := c.Discover(context.Background(), ts.URL+"/files/", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	sums, _ := ts.uploads(t)
	found := false
	for _, s := range sums {
		found = found || s == want
	}
	if !found || len(sums) != 5 {
		t.Fatalf("uploads on the server %v; want 4 partials and the final %s", sums, want)
	}
}

// TestPutParallelSmall: a file below ParallelMin goes in one stream.
func TestPutParallelSmall(t *testing.T) {
	s := newParallelServer(t)
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 2<<20, 44)
	var l logs
	c := parallelClient(t, &l, 0, 4)
	c.ParallelMin = 4 << 20
	d, _ := c.Discover(context.Background(), s.URL+"/", false)
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatal(err)
	}
	if got := fileSHA(t, filepath.Join(s.dir, "up.bin")); got != want || s.partials != 0 || len(s.finals) != 0 {
		t.Fatalf("stored %s (want %s), %d partials, %d finals", got, want, s.partials, len(s.finals))
	}
}

// TestPutParallelGone: pieces the server no longer has (expired while
// the client was away) are sent again.
func TestPutParallelGone(t *testing.T) {
	s := newParallelServer(t)
	s.cutPatch.Store(4)
	s.cutAfter = 10 << 10
	file := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, file, 4<<20, 45)
	var l logs
	c, closeIdle := s.client(t, &l, 0, 2)
	d, _ := c.Discover(context.Background(), s.URL+"/", false)
	if res, err := c.Put(context.Background(), file, d, ""); !errors.Is(err, client.ErrResumable) {
		t.Fatalf("cut upload: %v %+v %d patches %d partials\n%s", err, res, s.patches.Load(), s.partials, l.String())
	}
	// The server's clock goes a day on, once the requests the cut client
	// left have ended, and it expires everything staged.
	s.settle(t, closeIdle)
	s.skew.Store(int64(25 * time.Hour))
	if _, _, err := s.rh.Expire(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(s.dir, ".largo", "tus")); len(ents) != 0 {
		t.Fatalf("%d staged files left after the expiry", len(ents))
	}
	if _, err := c.Put(context.Background(), file, d, ""); err != nil {
		t.Fatalf("%v\n%s", err, l.String())
	}
	if got := fileSHA(t, filepath.Join(s.dir, "up.bin")); got != want {
		t.Fatalf("stored %s; want %s", got, want)
	}
}
