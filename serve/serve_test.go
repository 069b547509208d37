package serve

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo"
	"largo/disk"
	"largo/limit"
	"largo/listing"
	"largo/pageapi"
	"largo/resumable"
)

// newTestHandler serves a temporary folder holding files.
func newTestHandler(t testing.TB, files map[string]string) (*Handler, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return New(Config{Store: s}), dir
}

// withPage mounts the page's API (package pageapi) in cfg, over its gate,
// store, pipeline and listings' budget, as largo serve does.
func withPage(cfg Config) Config {
	if cfg.Listing.Budget == nil {
		cfg.Listing.Budget = limit.NewBudget(listing.DefaultBudget, 0)
	}
	if cfg.Archives == nil {
		cfg.Archives = NewArchives("", nil, cfg.Compress)
	}
	cfg.Page = pageapi.New(pageapi.Config{
		Gate: cfg.Gate, Store: cfg.Store, Writes: cfg.Writes, Listing: cfg.Listing,
		Archives: cfg.Archives, CORSOrigins: cfg.CORSOrigins, Now: cfg.Now,
	})
	return cfg
}

// newPageHandler serves a temporary folder holding files, open to
// everyone, with the page's API mounted.
func newPageHandler(t testing.TB, files map[string]string) *Handler {
	t.Helper()
	h, _ := newTestHandler(t, files)
	cfg := h.cfg // its store already behind the handler's own gate
	cfg.Gate = h.gate
	return New(withPage(cfg))
}

func do(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", nil)
	req.URL.Path = target // as the server decodes it, unnormalised
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var body = strings.Repeat("0123456789", 100)

func TestDownload(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"f.bin": body, "page.html": "<script>x</script>"})
	rec := do(h, "GET", "/f.bin")
	etag := rec.Header().Get("ETag")
	if rec.Code != 200 || rec.Body.String() != body || etag == "" || rec.Header().Get("Last-Modified") == "" || rec.Header().Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET: %d %d bytes %v", rec.Code, rec.Body.Len(), rec.Header())
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no nosniff")
	}
	if h := do(h, "GET", "/page.html").Header(); h.Get("Content-Security-Policy") != "sandbox" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Errorf("HTML file headers %v", h)
	}
	tests := []struct {
		name   string
		hdr    []string
		code   int
		body   string
		cr     string
		method string
	}{
		{"range", []string{"Range", "bytes=10-19"}, 206, body[10:20], "bytes 10-19/1000", ""},
		{"suffix", []string{"Range", "bytes=-5"}, 206, body[995:], "bytes 995-999/1000", ""},
		{"open", []string{"Range", "bytes=990-"}, 206, body[990:], "bytes 990-999/1000", ""},
		{"past end", []string{"Range", "bytes=1000-"}, 416, "invalid range: failed to overlap\n", "bytes */1000", ""},
		{"empty suffix", []string{"Range", "bytes=-0"}, 416, "invalid range: failed to overlap\n", "bytes */1000", ""},
		{"empty suffixes", []string{"Range", "bytes=-00, -0"}, 416, "invalid range: failed to overlap\n", "bytes */1000", ""},
		{"empty suffix and a range", []string{"Range", "bytes=-0, 10-19"}, 206, body[10:20], "bytes 10-19/1000", ""},
		{"a suffix past int64", []string{"Range", "bytes=-99999999999999999999"}, 206, body, "bytes 0-999/1000", ""},
		{"a last position past int64", []string{"Range", "bytes=10-99999999999999999999"}, 206, body[10:], "bytes 10-999/1000", ""},
		{"a first position past int64", []string{"Range", "bytes=99999999999999999999-"}, 416, "invalid range: failed to overlap\n", "bytes */1000", ""},
		{"if-range current", []string{"Range", "bytes=0-1", "If-Range", etag}, 206, body[:2], "bytes 0-1/1000", ""},
		{"if-range stale", []string{"Range", "bytes=0-1", "If-Range", `"stale"`}, 200, body, "", ""},
		{"if-none-match", []string{"If-None-Match", etag}, 304, "", "", ""},
		{"if-none-match other", []string{"If-None-Match", `"x"`}, 200, body, "", ""},
		{"if-modified-since", []string{"If-Modified-Since", rec.Header().Get("Last-Modified")}, 304, "", "", ""},
		{"head", nil, 200, "", "", "HEAD"},
		{"too many ranges", []string{"Range", "bytes=" + strings.Repeat("0-0,", 100) + "0-0"}, 200, body, "", ""},
	}
	for _, tt := range tests {
		m := tt.method
		if m == "" {
			m = "GET"
		}
		rec := do(h, m, "/f.bin", tt.hdr...)
		if rec.Code != tt.code || rec.Body.String() != tt.body || rec.Header().Get("Content-Range") != tt.cr {
			t.Errorf("%s: %d %q Content-Range %q", tt.name, rec.Code, rec.Body.String(), rec.Header().Get("Content-Range"))
		}
	}
	rec = do(h, "GET", "/f.bin", "Range", "bytes=0-1,5-6")
	if rec.Code != 206 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "multipart/byteranges") {
		t.Errorf("multiple ranges: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
}

func TestPathPolicy(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"ok.txt": "ok", ".env": "SECRET", "d/.git/config": "SECRET", ".largo/tmp/x": "SECRET"})
	for path, want := range map[string]int{
		"/ok.txt":         200,
		"/.env":           404,
		"/d/.git/config":  404,
		"/.largo/tmp/x":   404,
		"/.largo/":        404,
		"/_largo":         404,
		"/_largo/nothing": 404,
		"/../ok.txt":      400,
		"/d/../ok.txt":    400,
		"/./ok.txt":       400,
		"//ok.txt":        400,
		"/ok.txt\x00":     400,
		"/d\\..\\ok.txt":  400,
		"/missing":        404,
		"/ok.txt/":        404,
		"/_largo/../.env": 400,
	} {
		rec := do(h, "GET", path)
		if rec.Code != want || strings.Contains(rec.Body.String(), "SECRET") {
			t.Errorf("GET %q = %d %q; want %d", path, rec.Code, rec.Body.String(), want)
		}
	}
}

func TestMethods(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"f": "x"})
	rec := do(h, "DELETE", "/f")
	if rec.Code != 405 || rec.Header().Get("Allow") == "" {
		t.Errorf("DELETE: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := do(h, "OPTIONS", "/f"); rec.Code != 204 {
		t.Errorf("OPTIONS: %d", rec.Code)
	}
}

func TestListing(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"<b>.txt": "1", "sub/x": "2", ".hidden": "3", "a b": "4"})
	rec := do(h, "GET", "/sub")
	if rec.Code != 301 || rec.Header().Get("Location") != "/sub/" {
		t.Errorf("folder without slash: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	rec = do(h, "GET", "/", "Accept", "application/json")
	var l Listing
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != 200 {
		t.Fatalf("JSON listing: %d %v %s", rec.Code, err, rec.Body)
	}
	var names []string
	for _, e := range l.Entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, "|") != "sub|<b>.txt|a b" {
		t.Errorf("listing order %q; want folders first, then by name, no hidden", names)
	}
	rec = do(h, "GET", "/")
	if b := rec.Body.String(); strings.Contains(b, "<b>") || !strings.Contains(b, "&lt;b&gt;.txt") || strings.Contains(b, ".hidden") || !strings.Contains(b, `href="./a%20b"`) {
		t.Errorf("HTML listing not escaped or leaks hidden names:\n%s", b)
	}
}

func TestOwnEndpoints(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics") })
	s, _ := disk.Open(t.TempDir())
	defer s.Close()
	h := New(Config{Store: s, Metrics: metrics})
	if rec := do(h, "GET", "/_largo/healthz"); rec.Code != 200 {
		t.Errorf("healthz %d", rec.Code)
	}
	if rec := do(h, "GET", "/_largo/readyz"); rec.Code != 200 {
		t.Errorf("readyz %d", rec.Code)
	}
	// The metrics are the operator's: no rule names them here.
	if rec := do(h, "GET", "/_largo/metrics"); rec.Code != 401 || !strings.Contains(rec.Body.String(), "--admin-listen") || rec.Header().Get("WWW-Authenticate") == "" {
		t.Errorf("metrics to an anonymous client: %d %q; want 401 with a challenge and the reason", rec.Code, rec.Body)
	}
	h.Drain()
	if rec := do(h, "GET", "/_largo/readyz"); rec.Code != 503 {
		t.Errorf("readyz while draining %d", rec.Code)
	}
	if rec := do(New(Config{Store: s}), "GET", "/_largo/metrics"); rec.Code != 404 {
		t.Errorf("metrics without handler %d", rec.Code)
	}
}

// panicStore panics on every call.
type panicStore struct{}

func (panicStore) Stat(context.Context, string) (largo.Info, error) { panic("boom") }
func (panicStore) Open(context.Context, string) (largo.File, error) { panic("boom") }
func (panicStore) List(context.Context, string) iter.Seq2[largo.Info, error] {
	panic("boom")
}

type countingObserver struct {
	nopObserver
	panics, ended int
}

func (o *countingObserver) Panicked()            { o.panics++ }
func (o *countingObserver) TransferEnded(string) { o.ended++ }

func TestPanicRecovered(t *testing.T) {
	obs := &countingObserver{}
	var log bytes.Buffer
	h := New(Config{Store: panicStore{}, Observer: obs, Logger: newTextLogger(&log)})
	rec := do(h, "GET", "/x")
	if rec.Code != 500 || obs.panics != 1 || obs.ended != 1 {
		t.Fatalf("got %d, %d panics, %d ended", rec.Code, obs.panics, obs.ended)
	}
	if !strings.Contains(log.String(), "boom") {
		t.Errorf("panic not logged: %s", log.String())
	}
}

// FuzzPath sends arbitrary paths to a folder next to a secret: no answer
// may be a 5xx or carry the secret.
func FuzzPath(f *testing.F) {
	for _, s := range []string{"/ok.txt", "/../secret", "/%2e%2e/secret", "/.env", "//secret", "/a\\..\\secret", "/_largo/../x"} {
		f.Add(s)
	}
	h, dir := newTestHandler(f, map[string]string{"ok.txt": "ok", ".env": "SECRET", "d/x": "x"})
	os.WriteFile(filepath.Join(filepath.Dir(dir), "secret"), []byte("SECRET"), 0o644)
	os.Symlink("../secret", filepath.Join(dir, "link"))
	f.Fuzz(func(t *testing.T, p string) {
		rec := do(h, "GET", p)
		if rec.Code >= 500 || strings.Contains(rec.Body.String(), "SECRET") {
			t.Fatalf("GET %q = %d %q", p, rec.Code, rec.Body.String())
		}
	})
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestArchiveLeavesSidecars checks that folder archives hold what the
// listing shows: no precompressed sidecars, but a lone .gz file.
func TestArchiveLeavesSidecars(t *testing.T) {
	text := strings.Repeat("a line of text\n", 200)
	h, _ := newTestHandler(t, map[string]string{"d/log.txt": text, "d/log.txt.gz": "gz", "d/backup.tar.gz": "gz", "d/data.csv": text, "d/data.csv.gz": "a file of its own"})
	recordSidecars(t, h, "d/log.txt.gz")
	req := httptest.NewRequest("GET", "/d/?archive=tar", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("archive: %d", rec.Code)
	}
	tr := tar.NewReader(rec.Body)
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
	}
	if got := strings.Join(names, " "); got != "d/ d/backup.tar.gz d/data.csv d/data.csv.gz d/log.txt" {
		t.Errorf("archive holds %q", got)
	}
}

// diskStaging is the staging of resumable uploads in d's state area.
func diskStaging(t testing.TB, d *disk.Store) resumable.Staging {
	t.Helper()
	st, err := resumable.StagingFor(d)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestOwnRoutesAnswerTheirOwn404: a name under the reserved prefix that no
// route has, however it is spelled, gets this server's 404, not Go's.
func TestOwnRoutesAnswerTheirOwn404(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	for _, target := range []string{"/_largo/nope", "/_largo%2fmetrics", "/_largo%2Fhealthz", "/_largo/ui%2f..%2fx"} {
		rec := do(h, "GET", target)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), "not found") || strings.Contains(rec.Body.String(), "page not found") {
			t.Errorf("GET %s: %d %q", target, rec.Code, rec.Body)
		}
	}
}
