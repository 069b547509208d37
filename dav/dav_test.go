package dav

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"largo"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
)

// counting is a store that counts the look-ups and opens made of it.
type counting struct {
	*disk.Store
	stats, opens atomic.Int64
}

func (c *counting) Stat(ctx context.Context, name string) (largo.Info, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, name)
}

func (c *counting) Open(ctx context.Context, name string) (largo.File, error) {
	c.opens.Add(1)
	return c.Store.Open(ctx, name)
}

// newServer serves dir's store through a Handler, with the pipeline
// guarded by its locks, as package serve would (without its access
// rules).
func newServer(t testing.TB, dir string) (*httptest.Server, *counting, *Locks) {
	t.Helper()
	return newServerWith(t, dir, ingest.Config{})
}

// newServerWith is newServer with the pipeline configured by cfg (its
// Store and Guard set here).
func newServerWith(t testing.TB, dir string, cfg ingest.Config) (*httptest.Server, *counting, *Locks) {
	t.Helper()
	h, view, locks := newHandler(t, dir, cfg)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeDAV(w, asUser(r), view, "/", "", nil)
	}))
	t.Cleanup(srv.Close)
	return srv, view, locks
}

// newHandler returns a Handler on dir's store, with the pipeline
// configured by cfg and guarded by its locks, and the view that counts
// the look-ups made through it.
func newHandler(t testing.TB, dir string, cfg ingest.Config) (*Handler, *counting, *Locks) {
	t.Helper()
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	locks, err := NewLocks(s.State(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Guard = s, locks
	writes := ingest.New(cfg)
	return New(Config{Store: s, Writes: writes, Locks: locks}), &counting{Store: s}, locks
}

// userHeader names the user a request of the test servers acts for;
// without it, "tester".
const userHeader = "X-Test-User"

// asUser returns r carrying the principal userHeader names, as package
// serve's guard would.
func asUser(r *http.Request) *http.Request {
	u := r.Header.Get(userHeader)
	if u == "" {
		u = "tester"
	}
	return r.WithContext(gate.With(r.Context(), gate.User(u)))
}

// answered is a response with its body read.
type answered struct {
	*http.Response
	text string
}

// newRequest returns a request with the header fields hdr (name, value,
// ...).
func newRequest(t *testing.T, method, url, body string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// send sends req and reads its answer.
func send(t *testing.T, req *http.Request) answered {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answered{resp, string(b)}
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	a := send(t, newRequest(t, method, url, body, hdr...))
	return a.StatusCode, a.text
}

func TestPropfindDepth(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, view, _ := newServer(t, dir)
	for _, depth := range []string{"", "infinity", " infinity"} {
		code, body := do(t, "PROPFIND", srv.URL+"/", "", "Depth", depth)
		if code != 403 || !strings.Contains(body, "<D:propfind-finite-depth/>") {
			t.Errorf("PROPFIND Depth %q: %d %s; want 403 propfind-finite-depth", depth, code, body)
		}
	}
	if code, _ := do(t, "PROPPATCH", srv.URL+"/f007.txt", `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:tag xmlns:Z="urn:t">seven</Z:tag></D:prop></D:set></D:propertyupdate>`); code != 207 {
		t.Fatalf("PROPPATCH: %d", code)
	}
	view.stats.Store(0)
	code, body := do(t, "PROPFIND", srv.URL+"/", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`, "Depth", "1")
	if code != 207 {
		t.Fatalf("PROPFIND Depth 1: %d", code)
	}
	if got := strings.Count(body, "<D:response>"); got != n+1 {
		t.Errorf("%d responses; want %d", got, n+1)
	}
	if !strings.Contains(body, ">seven<") {
		t.Errorf("the dead property of f007.txt is missing")
	}
	// The walk looks entries up in the listing: a few look-ups of the
	// folder, none per entry, and no file opened.
	if s, o := view.stats.Load(), view.opens.Load(); s > 5 || o != 0 {
		t.Errorf("PROPFIND Depth 1 of %d entries: %d look-ups, %d opens; want a few (at most 5) and none", n, s, o)
	}
}

func TestCopyMoveProps(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	data := strings.Repeat("payload ", 100000)
	os.WriteFile(filepath.Join(dir, "src", "a.bin"), []byte(data), 0o644)
	srv, view, locks := newServer(t, dir)
	prop := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:color xmlns:Z="urn:t">blue</Z:color></D:prop></D:set></D:propertyupdate>`
	if code, _ := do(t, "PROPPATCH", srv.URL+"/src/a.bin", prop); code != 207 {
		t.Fatalf("PROPPATCH: %d", code)
	}
	if code, body := do(t, "COPY", srv.URL+"/src/a.bin", "", "Destination", srv.URL+"/copy.bin"); code != 201 {
		t.Fatalf("COPY: %d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "copy.bin")); string(b) != data {
		t.Errorf("the copy holds %d bytes; want %d", len(b), len(data))
	}
	// The store copied it (largo.Copier): the handler opened nothing.
	if n := view.opens.Load(); n != 0 {
		t.Errorf("COPY opened %d files through the handler; want the store's own copy", n)
	}
	if code, body := do(t, "COPY", srv.URL+"/src/a.bin", "", "Destination", srv.URL+"/missing/copy.bin"); code != 409 {
		t.Errorf("COPY into a missing folder: %d %s; want 409", code, body)
	}
	if code, _ := do(t, "MOVE", srv.URL+"/src", "", "Destination", srv.URL+"/dst"); code != 201 {
		t.Fatalf("MOVE: %d", code)
	}
	find := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><Z:color xmlns:Z="urn:t"/></D:prop></D:propfind>`
	for _, p := range []string{"/dst/a.bin", "/copy.bin"} {
		if _, body := do(t, "PROPFIND", srv.URL+p, find, "Depth", "0"); !strings.Contains(body, ">blue<") {
			t.Errorf("%s lacks the property copied or moved with it:\n%s", p, body)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "src")); !os.IsNotExist(err) {
		t.Errorf("the source of the move is still there: %v", err)
	}
	// A removal by any protocol drops the properties (serve's DELETE
	// calls Forget).
	locks.Forget(context.Background(), "dst")
	if _, body := do(t, "PROPFIND", srv.URL+"/dst/a.bin", find, "Depth", "0"); strings.Contains(body, ">blue<") {
		t.Errorf("the properties outlived Forget")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "dav", "props"))
	if len(ents) != 1 {
		t.Errorf("%d property records left; want 1 (copy.bin's)", len(ents))
	}
}

func TestDiscards(t *testing.T) {
	for name, want := range map[string]bool{"._a.jpg": true, "d/._a": true, ".DS_Store": true, "d/.DS_Store": true, "a._b": false, ".git": false, "DS_Store": false} {
		if Discards(name) != want {
			t.Errorf("Discards(%q) = %v", name, !want)
		}
	}
}

// TestLockTimeoutAnswered: a LOCK answers the timeout the lock was
// granted, not the one asked for, and a malformed one is refused.
func TestLockTimeoutAnswered(t *testing.T) {
	srv, _, _ := newServer(t, t.TempDir())
	lock := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	for i, tt := range []struct {
		asked string
		code  int
		want  string
	}{
		{"", 201, "Second-3600"},
		{"Infinite", 201, "Second-3600"},
		{"Infinite, Second-60", 201, "Second-3600"},
		{"Second-0", 201, "Second-3600"},
		{"Second-3601", 201, "Second-3600"},
		{"Second-4294967295", 201, "Second-3600"},
		{"Second-60", 201, "Second-60"},
		{" Second-3600 ", 201, "Second-3600"},
		{"Second-60, Infinite", 201, "Second-60"},
		{"Second-", 400, ""},
		{"Second-4294967296", 400, ""},
		{"soon", 400, ""},
	} {
		hdr := []string{"Depth", "0"}
		if tt.asked != "" {
			hdr = append(hdr, "Timeout", tt.asked)
		}
		code, body := do(t, "LOCK", fmt.Sprintf("%s/f%d.txt", srv.URL, i), lock, hdr...)
		if code != tt.code || tt.want != "" && !strings.Contains(body, "<D:timeout>"+tt.want+"</D:timeout>") {
			t.Errorf("LOCK with Timeout %q: %d\n%s\nwant %d and %s", tt.asked, code, body, tt.code, tt.want)
		}
	}
}
