package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/record"
	"largo/sidecar"
)

const token = "t0ken"

// uploadObserver records upload events.
type uploadObserver struct {
	nopObserver
	mu       sync.Mutex
	received int64
	pending  int64
	outcomes []string
}

func (o *uploadObserver) BytesReceived(n int64) { o.mu.Lock(); o.received += n; o.mu.Unlock() }
func (o *uploadObserver) PendingBytes(n int64)  { o.mu.Lock(); o.pending += n; o.mu.Unlock() }
func (o *uploadObserver) UploadEnded(s string) {
	o.mu.Lock()
	o.outcomes = append(o.outcomes, s)
	o.mu.Unlock()
}

// newWriteHandler serves a temporary folder with writes on.
func newWriteHandler(t *testing.T, files map[string]string, cfg Config, limits ...ingest.Config) (*Handler, string, *uploadObserver) {
	t.Helper()
	_, dir := newTestHandler(t, files)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	obs := &uploadObserver{}
	var ic ingest.Config
	if len(limits) > 0 {
		ic = limits[0]
	}
	if cfg.Access == nil {
		cfg.Access = auth.New(auth.OneUser(token, false), nil)
	}
	g := gate.New(gate.Config{Access: cfg.Access, Resolver: s})
	ic.Store, ic.Observer = g.Store(s), obs
	if cfg.Files == nil {
		cfg.Files = record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
	}
	ic.Files, ic.Server = cfg.Files, asServer
	if cfg.Sidecars == nil {
		cfg.Sidecars = sidecar.NewPolicy(sidecar.NewChecker(cfg.Files), false, ContentType)
	}
	ic.Derived = sidecar.NewFollower(cfg.Sidecars, s, nil)
	cfg.Store, cfg.Gate, cfg.State, cfg.Writes, cfg.Uploads = ic.Store, g, s.State(), ingest.New(ic), obs
	t.Cleanup(func() {
		ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tmp"))
		if len(ents) != 0 {
			t.Errorf("%d temporary files left", len(ents))
		}
		if obs.pending != 0 {
			t.Errorf("pending bytes %d at the end", obs.pending)
		}
	})
	return New(cfg), dir, obs
}

// untouchable is a body that fails the test when read.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, io.EOF
}

func send(h http.Handler, method, target string, body io.Reader, size int64, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", body)
	req.URL.Path = target
	req.ContentLength = size
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

func TestWritesOff(t *testing.T) {
	h, dir := newTestHandler(t, map[string]string{"f": "x"})
	for _, m := range []string{"PUT", "POST", "DELETE"} {
		rec := send(h, m, "/f", untouchable{t}, 5, "Authorization", "Bearer "+token)
		if rec.Code != 405 || rec.Header().Get("Allow") != readMethods {
			t.Errorf("%s: %d Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "x" {
		t.Error("file changed")
	}
	if rec := do(h, "GET", ResumablePrefix); rec.Code != 404 {
		t.Errorf("resumable endpoint with writes off: %d", rec.Code)
	}
}

func TestPut(t *testing.T) {
	h, dir, obs := newWriteHandler(t, map[string]string{"old": "old"}, Config{})
	auth := []string{"Authorization", "Bearer " + token}
	rec := send(h, "PUT", "/a/b/new.txt", strings.NewReader("hello"), 5, auth...)
	if rec.Code != 201 || rec.Header().Get("ETag") == "" || rec.Header().Get("Repr-Digest") != digest("hello") || rec.Header().Get("Location") != "/a/b/new.txt" {
		t.Fatalf("PUT new: %d %v", rec.Code, rec.Header())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a/b/new.txt")); string(b) != "hello" {
		t.Fatalf("stored %q", b)
	}
	etag := do(h, "HEAD", "/a/b/new.txt").Header().Get("ETag")
	if etag != rec.Header().Get("ETag") {
		t.Errorf("ETag of PUT %s, of HEAD %s", rec.Header().Get("ETag"), etag)
	}
	// Chunked (no Content-Length), basic auth, replace.
	rec = send(h, "PUT", "/old", strings.NewReader("new content"), -1, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("me:"+token)))
	if rec.Code != 204 || rec.Header().Get("Repr-Digest") != digest("new content") {
		t.Fatalf("PUT replace: %d %v", rec.Code, rec.Header())
	}
	if obs.received != 16 || len(obs.outcomes) != 2 || obs.outcomes[0] != "complete" {
		t.Errorf("observer: received %d, outcomes %v", obs.received, obs.outcomes)
	}
	if rec := do(h, "OPTIONS", "/old"); rec.Header().Get("Allow") != writeMethods {
		t.Errorf("OPTIONS Allow %q", rec.Header().Get("Allow"))
	}
}

func TestPutRefused(t *testing.T) {
	h, dir, obs := newWriteHandler(t, map[string]string{"exists": "old", "file": "f", ".hidden/x": "x"}, Config{}, ingest.Config{MaxSize: 100})
	auth := []string{"Authorization", "Bearer " + token}
	existsETag := do(h, "HEAD", "/exists").Header().Get("ETag")
	for _, tt := range []struct {
		name   string
		path   string
		body   io.Reader
		size   int64
		hdr    []string
		code   int
		reason string
	}{
		{"no token", "/new", untouchable{t}, 5, nil, 401, "unauthorized"},
		{"wrong token", "/new", untouchable{t}, 5, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
		{"over the limit", "/new", untouchable{t}, 101, auth, 413, "too large"},
		{"chunked over the limit", "/new", strings.NewReader(strings.Repeat("x", 101)), -1, auth, 413, "too large"},
		{"if-none-match on existing", "/exists", untouchable{t}, 5, append([]string{"If-None-Match", "*"}, auth...), 412, "precondition failed"},
		{"stale if-match", "/exists", untouchable{t}, 5, append([]string{"If-Match", `"stale"`}, auth...), 412, "precondition failed"},
		{"if-match on missing", "/new", untouchable{t}, 5, append([]string{"If-Match", existsETag}, auth...), 412, "precondition failed"},
		{"if-none-match etag", "/new", untouchable{t}, 5, append([]string{"If-None-Match", `"x"`}, auth...), 400, "unsupported condition"},
		{"digest mismatch", "/new", strings.NewReader("hello"), 5, append([]string{"Content-Digest", digest("other")}, auth...), 400, "digest mismatch: computed " + digest("hello")},
		{"repr-digest mismatch", "/new", strings.NewReader("hello"), 5, append([]string{"Repr-Digest", digest("other")}, auth...), 400, "digest mismatch"},
		{"bad digest", "/new", untouchable{t}, 5, append([]string{"Content-Digest", "sha-256=nope"}, auth...), 400, "invalid Content-Digest"},
		{"escape", "/a/../../x", untouchable{t}, 5, auth, 400, "invalid path"},
		{"dotfolder", "/.hidden/x", untouchable{t}, 5, auth, 403, "hidden or reserved"},
		{"dotfile", "/.env", untouchable{t}, 5, auth, 403, "hidden or reserved"},
		{"state folder", "/.largo/tmp/x", untouchable{t}, 5, auth, 403, "hidden or reserved"},
		{"reserved prefix", "/_largofile", untouchable{t}, 5, auth, 403, "hidden or reserved"},
		{"folder path", "/dir/", untouchable{t}, 5, auth, 409, "is a folder"},
		{"under a file", "/file/x", untouchable{t}, 5, auth, 409, "a parent is a file"},
		{"not utf-8", "/\xff\xfe", untouchable{t}, 5, auth, 400, "invalid path"},
		{"content-range", "/exists", untouchable{t}, 5, append([]string{"Content-Range", "bytes 0-4/10"}, auth...), 400, "Content-Range on a PUT"},
		{"incomplete", "/new", untouchable{t}, 5, append([]string{"Upload-Complete", "?0", "Upload-Draft-Interop-Version", "6"}, auth...), 400, "the request says its body is not the whole file"},
		{"incomplete, version 3", "/new", untouchable{t}, 5, append([]string{"Upload-Incomplete", "?1", "Upload-Draft-Interop-Version", "3"}, auth...), 400, "the request says its body is not the whole file"},
	} {
		rec := send(h, "PUT", tt.path, tt.body, tt.size, tt.hdr...)
		if rec.Code != tt.code || !strings.HasPrefix(rec.Body.String(), tt.reason) {
			t.Errorf("%s: %d %q; want %d %q", tt.name, rec.Code, rec.Body.String(), tt.code, tt.reason)
		}
		if tt.code == 401 && len(rec.Header().Values("WWW-Authenticate")) == 0 {
			t.Errorf("%s: no WWW-Authenticate", tt.name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("a refused PUT left /new: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "exists")); string(b) != "old" {
		t.Errorf("a refused PUT changed /exists: %q", b)
	}
	for _, o := range obs.outcomes {
		if o != "rejected" {
			t.Errorf("outcome %s; want rejected", o)
		}
	}
	rec := send(h, "PUT", "/exists", strings.NewReader("new"), 3, append([]string{"If-Match", existsETag, "Content-Digest", digest("new")}, auth...)...)
	if rec.Code != 204 {
		t.Errorf("If-Match with the current ETag and a good digest: %d %s", rec.Code, rec.Body.String())
	}
}

func TestPutSpace(t *testing.T) {
	h, dir, _ := newWriteHandler(t, nil, Config{}, ingest.Config{Reserve: 1 << 62})
	rec := send(h, "PUT", "/f", untouchable{t}, 5, "Authorization", "Bearer "+token)
	if rec.Code != 507 {
		t.Fatalf("over the free space: %d %s", rec.Code, rec.Body.String())
	}
	rec = send(h, "PUT", "/f", strings.NewReader("chunked"), -1, "Authorization", "Bearer "+token)
	if rec.Code != 507 {
		t.Fatalf("chunked over the free space: %d %s", rec.Code, rec.Body.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !os.IsNotExist(err) {
		t.Error("file left behind")
	}
}

func TestPutNoMkdir(t *testing.T) {
	h, _, _ := newWriteHandler(t, map[string]string{"d/x": "x"}, Config{}, ingest.Config{NoMkdir: true})
	if rec := send(h, "PUT", "/missing/f", untouchable{t}, 1, "Authorization", "Bearer "+token); rec.Code != 409 {
		t.Errorf("into a missing folder: %d %s", rec.Code, rec.Body.String())
	}
	if rec := send(h, "PUT", "/d/f", strings.NewReader("y"), 1, "Authorization", "Bearer "+token); rec.Code != 201 {
		t.Errorf("into an existing folder: %d %s", rec.Code, rec.Body.String())
	}
}

func TestPostForm(t *testing.T) {
	h, dir, _ := newWriteHandler(t, nil, Config{Access: auth.New(auth.OneUser("", true), nil)})
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("note", "not a file")
	for name, content := range map[string]string{"a.txt": "aaa", "b.bin": strings.Repeat("b", 300000)} {
		fw, _ := mw.CreateFormFile("files", name)
		io.WriteString(fw, content)
	}
	mw.Close()
	rec := send(h, "POST", "/up/", &buf, int64(buf.Len()), "Content-Type", mw.FormDataContentType())
	if rec.Code != 201 {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body.String())
	}
	var got []Stored
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got) != 2 {
		t.Fatalf("answer %s: %v", rec.Body.String(), err)
	}
	for _, s := range got {
		b, err := os.ReadFile(filepath.Join(dir, "up", s.Name))
		sum := sha256.Sum256(b)
		if err != nil || int64(len(b)) != s.Size || s.Path != "/up/"+s.Name || s.SHA256 != hex.EncodeToString(sum[:]) || !s.Created {
			t.Errorf("stored %+v; file %d bytes, %v", s, len(b), err)
		}
	}
	// Hidden names, bad forms.
	buf.Reset()
	mw = multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("f", ".env")
	io.WriteString(fw, "X=1")
	mw.Close()
	if rec := send(h, "POST", "/", &buf, int64(buf.Len()), "Content-Type", mw.FormDataContentType()); rec.Code != 403 {
		t.Errorf("hidden file in a form: %d", rec.Code)
	}
	if rec := send(h, "POST", "/", strings.NewReader("x"), 1, "Content-Type", "text/plain"); rec.Code != 415 {
		t.Errorf("not a form: %d", rec.Code)
	}
	if rec := send(h, "POST", "/", strings.NewReader("--x\r\nbroken"), 12, "Content-Type", "multipart/form-data; boundary=x"); rec.Code != 400 {
		t.Errorf("broken form: %d", rec.Code)
	}
	if _, err := os.Stat(filepath.Join(dir, ".env")); !os.IsNotExist(err) {
		t.Error(".env written")
	}
}

func TestDelete(t *testing.T) {
	h, dir, _ := newWriteHandler(t, map[string]string{"f": "f", "full/a": "a", "full/sub/b": "b"}, Config{})
	auth := []string{"Authorization", "Bearer " + token}
	for _, tt := range []struct {
		path string
		hdr  []string
		code int
	}{
		{"/f", nil, 401},
		{"/f", append([]string{"If-Match", `"stale"`}, auth...), 412},
		{"/f", auth, 204},
		{"/f", auth, 404},
		{"/full", auth, 409},
		{"/.largo", auth, 403},
		{"/", auth, 403},
		{"/full?recursive=1", auth, 204},
	} {
		path, query, _ := strings.Cut(tt.path, "?")
		req := httptest.NewRequest("DELETE", "/?"+query, nil)
		req.URL.Path = path
		for i := 0; i+1 < len(tt.hdr); i += 2 {
			req.Header.Set(tt.hdr[i], tt.hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("DELETE %s: %d %s; want %d", tt.path, rec.Code, rec.Body.String(), tt.code)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "full")); !os.IsNotExist(err) {
		t.Error("folder still there")
	}
}

// TestDeleteSidecars removes a text file with its precompressed sidecars,
// and leaves a lone archive that only looks like a sidecar.
func TestDeleteSidecars(t *testing.T) {
	text := strings.Repeat("a line of text\n", 200)
	h, dir, _ := newWriteHandler(t, map[string]string{
		"log.txt": text, "log.txt.gz": "gz", "log.txt.zst": "zst", "log.txt.br": "br",
		"backup.tar": "tar", "backup.tar.gz": "gz",
		"data.csv": text, "data.csv.gz": "an older file of its own",
	}, Config{})
	// data.csv.gz is older than data.csv: never served as its encoding, so
	// not its sidecar.
	old, now := time.Now().Add(-time.Hour), time.Now()
	os.Chtimes(filepath.Join(dir, "data.csv.gz"), old, old)
	for _, n := range []string{"log.txt", "log.txt.gz", "log.txt.zst", "log.txt.br"} {
		os.Chtimes(filepath.Join(dir, n), now, now) // written together, as precompress does
	}
	recordSidecars(t, h, "log.txt.gz", "log.txt.zst", "log.txt.br")
	for _, p := range []string{"/log.txt", "/backup.tar", "/data.csv"} {
		req := httptest.NewRequest("DELETE", "/", nil)
		req.URL.Path = p
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 204 {
			t.Fatalf("DELETE %s: %d", p, rec.Code)
		}
	}
	for _, gone := range []string{"log.txt.gz", "log.txt.zst", "log.txt.br"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("sidecar %s outlived its file", gone)
		}
	}
	for _, kept := range []string{"backup.tar.gz", "data.csv.gz"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s, not a sidecar, was removed: %v", kept, err)
		}
	}
}

// noConditions is a store whose writes cannot apply conditions, as an
// object store whose server ignores them: it refuses them, as such stores
// must, with largo.ErrUnsupported.
type noConditions struct{ *disk.Store }

func (s noConditions) Create(ctx context.Context, name string, opt largo.CreateOptions) (largo.Upload, error) {
	if opt.Condition != (largo.Condition{}) {
		return nil, fmt.Errorf("%s: %w", name, largo.ErrUnsupported)
	}
	return s.Store.Create(ctx, name, opt)
}

func (s noConditions) Remove(ctx context.Context, name string, opt largo.RemoveOptions) error {
	if opt.Condition != (largo.Condition{}) {
		return fmt.Errorf("%s: %w", name, largo.ErrUnsupported)
	}
	return s.Store.Remove(ctx, name, opt)
}

// TestConditionsUnsupported: on a store that cannot apply conditions, a
// conditional write is refused with 501 and a reason that says so, before
// its body is read; the same write without a condition goes through.
func TestConditionsUnsupported(t *testing.T) {
	h, dir, _ := newWriteHandler(t, map[string]string{"f": "f"}, Config{})
	d, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h.cfg.Store = h.gate.Store(noConditions{d})
	h.cfg.Writes = ingest.New(ingest.Config{Store: h.cfg.Store})
	auth := []string{"Authorization", "Bearer " + token}
	const reason = "not supported: this store cannot apply If-None-Match or If-Match"
	for _, tt := range []struct {
		method, path, cond string
	}{
		{"PUT", "/new", "If-None-Match"},
		{"PUT", "/f", "If-Match"},
		{"DELETE", "/f", "If-Match"},
	} {
		etag := `"` + strings.Repeat("0", 8) + `"`
		if tt.cond == "If-None-Match" {
			etag = "*"
		} else if rec := send(h, "GET", "/f", nil, 0); rec.Code == 200 {
			etag = rec.Header().Get("ETag")
		}
		rec := send(h, tt.method, tt.path, untouchable{t}, 5, append([]string{tt.cond, etag}, auth...)...)
		if rec.Code != 501 || !strings.HasPrefix(rec.Body.String(), reason) {
			t.Errorf("%s %s with %s: %d %q; want 501 %q", tt.method, tt.path, tt.cond, rec.Code, rec.Body.String(), reason)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "f" {
		t.Errorf("f is now %q", b)
	}
	if rec := send(h, "PUT", "/new", strings.NewReader("hello"), 5, auth...); rec.Code != 201 {
		t.Errorf("PUT without a condition: %d", rec.Code)
	}
}

// fakeResumer takes the writes that carry Upload-Draft-Interop-Version: 9.
type fakeResumer struct {
	http.Handler
	writes  *ingest.Pipeline // admits what it creates, as a resumer does
	created []string
}

func (f *fakeResumer) Takes(r *http.Request) bool {
	return r.Header.Get("Upload-Draft-Interop-Version") == "9"
}

func (f *fakeResumer) Create(w http.ResponseWriter, r *http.Request, name string) error {
	target, err := f.Target(r, name)
	if err != nil {
		return err
	}
	if err := f.writes.Check(r.Context(), ingest.Target{Name: target, Size: -1}); err != nil {
		return err
	}
	f.created = append(f.created, r.Method+" "+name)
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (f *fakeResumer) Limits() string { return "max-age=60" }

// Target names the file of a POST by its X-Name header, in the folder.
func (f *fakeResumer) Target(r *http.Request, name string) (string, error) {
	if r.Method == http.MethodPost {
		n := r.Header.Get("X-Name")
		if n == "" {
			n = "new"
		}
		return name + "/" + n, nil
	}
	return name, nil
}

// TestResumer: the writes a Resumer takes go to it after the write
// checks, those it does not take are plain writes, or refused when their
// body is a part; write targets announce its limits, and its upload
// resources are behind the same auth.
func TestResumer(t *testing.T) {
	res := &fakeResumer{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upload", r.URL.Path)
	})}
	h, dir, obs := newWriteHandler(t, map[string]string{"dir/x": "x"}, Config{Resumer: res})
	res.writes = h.cfg.Writes
	auth := []string{"Authorization", "Bearer " + token}
	v9 := []string{"Upload-Complete", "?0", "Upload-Draft-Interop-Version", "9"}
	if rec := send(h, "PUT", "/f", untouchable{t}, 5, v9...); rec.Code != 401 {
		t.Errorf("without the token: %d", rec.Code)
	}
	if rec := send(h, "PUT", "/f", untouchable{t}, 5, append(v9, auth...)...); rec.Code != 201 {
		t.Errorf("taken PUT: %d %s", rec.Code, rec.Body.String())
	}
	if rec := send(h, "PUT", "/newdir/", untouchable{t}, 5, append(v9, auth...)...); rec.Code != 409 {
		t.Errorf("taken PUT to a folder path: %d %s", rec.Code, rec.Body.String())
	}
	if rec := send(h, "POST", "/dir/", untouchable{t}, 5, append(v9, auth...)...); rec.Code != 201 {
		t.Errorf("taken POST: %d %s", rec.Code, rec.Body.String())
	}
	if want := []string{"PUT f", "POST dir"}; fmt.Sprint(res.created) != fmt.Sprint(want) {
		t.Errorf("created %v; want %v", res.created, want)
	}
	// The resumer's uploads count their own ends, not each request's.
	if len(obs.outcomes) != 0 {
		t.Errorf("outcomes %v for writes the resumer took", obs.outcomes)
	}
	// Version 8 is not taken: the whole file is a plain PUT, a part is refused.
	v8 := []string{"Upload-Draft-Interop-Version", "8", "Upload-Complete"}
	if rec := send(h, "PUT", "/g", strings.NewReader("whole"), 5, append(append(v8, "?1"), auth...)...); rec.Code != 201 {
		t.Errorf("complete, not taken: %d %s", rec.Code, rec.Body.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "g")); string(b) != "whole" {
		t.Errorf("g holds %q", b)
	}
	if rec := send(h, "PUT", "/h", untouchable{t}, 5, append(append(v8, "?0"), auth...)...); rec.Code != 400 {
		t.Errorf("incomplete, not taken: %d %s", rec.Code, rec.Body.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "h")); !os.IsNotExist(err) {
		t.Errorf("an incomplete PUT stored h: %v", err)
	}
	rec := send(h, "OPTIONS", "/dir/x", nil, 0)
	if rec.Header().Get("Upload-Limit") != "max-age=60" {
		t.Errorf("OPTIONS: Upload-Limit %q", rec.Header().Get("Upload-Limit"))
	}
	rec = send(h, "HEAD", ResumerPrefix+"abc", nil, 0, auth...)
	if rec.Header().Get("X-Upload") != ResumerPrefix+"abc" {
		t.Errorf("upload resource not served by the resumer: %d %v", rec.Code, rec.Header())
	}
}

// TestIfUnmodifiedSince: a PUT or DELETE of a file modified after the
// date it names is refused with 412 and leaves the file; a later date, a
// missing file or a date that is no HTTP-date let it through (RFC 9110,
// 13.1.4).
func TestIfUnmodifiedSince(t *testing.T) {
	h, dir, _ := newWriteHandler(t, map[string]string{"f": "old", "g": "old"}, Config{})
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, n := range []string{"f", "g"} {
		os.Chtimes(filepath.Join(dir, n), mod, mod)
	}
	auth := []string{"Authorization", "Bearer " + token}
	before := mod.Add(-time.Hour).Format(http.TimeFormat)
	after := mod.Add(time.Hour).Format(http.TimeFormat)
	for _, tt := range []struct {
		method, path, since string
		code                int
	}{
		{"PUT", "/f", before, 412},
		{"DELETE", "/g", before, 412},
		{"PUT", "/f", "not a date", 204},
		{"PUT", "/new", before, 201},
		{"PUT", "/g", after, 204},
		{"DELETE", "/new", time.Now().Add(time.Hour).Format(http.TimeFormat), 204},
	} {
		var body io.Reader
		size := int64(0)
		if tt.method == "PUT" {
			body, size = strings.NewReader("new"), 3
		}
		if rec := send(h, tt.method, tt.path, body, size, append(auth, "If-Unmodified-Since", tt.since)...); rec.Code != tt.code {
			t.Errorf("%s %s If-Unmodified-Since %s: %d %s; want %d", tt.method, tt.path, tt.since, rec.Code, rec.Body, tt.code)
		}
		if tt.code == 412 {
			if b, _ := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(tt.path, "/"))); string(b) != "old" {
				t.Errorf("%s %s refused, yet the file holds %q", tt.method, tt.path, b)
			}
		}
	}
}
