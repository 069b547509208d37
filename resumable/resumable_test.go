package resumable

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/wire"
)

type observer struct {
	mu       sync.Mutex
	pending  int64
	outcomes []string
}

func (o *observer) PendingBytes(n int64) { o.mu.Lock(); o.pending += n; o.mu.Unlock() }
func (o *observer) UploadEnded(s string) {
	o.mu.Lock()
	o.outcomes = append(o.outcomes, s)
	o.mu.Unlock()
}

type fixture struct {
	dir string
	h   *Handler
	srv *httptest.Server
	obs *observer
	now time.Time
}

func newFixture(t testing.TB, cfg Config, limits ...ingest.Config) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), obs: &observer{}, now: time.Now()}
	os.WriteFile(filepath.Join(f.dir, "exists.txt"), []byte("old"), 0o644)
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var ic ingest.Config
	if len(limits) > 0 {
		ic = limits[0]
	}
	ic.Store = s
	cfg.Writes = ingest.New(ic)
	cfg.BasePath = "/_largo/uploads/"
	f.start(t, cfg)
	return f
}

// start serves a Handler for cfg, with f's observer and clock.
func (f *fixture) start(t testing.TB, cfg Config) {
	t.Helper()
	cfg.Observer = f.obs
	cfg.Now = func() time.Time { return f.now }
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	mux := http.NewServeMux()
	mux.Handle("/_largo/uploads/", asUser(f.h))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
}

// asUser puts in each request's context the principal the server's front
// door would find: the user of basic auth, anonymous without it.
func asUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := r.BasicAuth()
		next.ServeHTTP(w, r.WithContext(gate.With(r.Context(), gate.User(name))))
	})
}

// create starts an upload and returns its URL, or the response of a
// refusal; a size below zero defers the upload's length.
func (f *fixture) create(t testing.TB, size int64, meta map[string]string, hdr ...string) (string, *http.Response) {
	t.Helper()
	var pairs []string
	for k, v := range meta {
		pairs = append(pairs, k+" "+base64.StdEncoding.EncodeToString([]byte(v)))
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/_largo/uploads/", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if size < 0 {
		req.Header.Set("Upload-Defer-Length", "1")
	} else {
		req.Header.Set("Upload-Length", fmt.Sprint(size))
	}
	req.Header.Set("Upload-Metadata", strings.Join(pairs, ","))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The body, read, stays readable for the caller.
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp.Header.Get("Location"), resp
}

func (f *fixture) patch(t testing.TB, url string, offset int64, data string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("PATCH", url, strings.NewReader(data))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", fmt.Sprint(offset))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (f *fixture) stateFiles(t *testing.T) int {
	ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus"))
	return len(ents)
}

func TestUploadInChunks(t *testing.T) {
	f := newFixture(t, Config{})
	data := strings.Repeat("resumable ", 10000)
	sum := sha256.Sum256([]byte(data))
	url, resp := f.create(t, int64(len(data)), map[string]string{"filename": "b.txt", "folder": "a/", "sha256": hex.EncodeToString(sum[:])})
	if resp.StatusCode != 201 || url == "" {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if r := f.patch(t, url, 0, data[:30000]); r.StatusCode != 204 || r.Header.Get("Upload-Offset") != "30000" {
		t.Fatalf("first PATCH: %d offset %s", r.StatusCode, r.Header.Get("Upload-Offset"))
	}
	if f.obs.pending != 30000 {
		t.Errorf("pending %d after the first chunk", f.obs.pending)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "a", "b.txt")); !os.IsNotExist(err) {
		t.Fatal("target visible before the upload finished")
	}
	r := f.patch(t, url, 30000, data[30000:])
	if r.StatusCode != 204 || r.Header.Get("ETag") == "" || r.Header.Get("Content-Location") != "/a/b.txt" {
		t.Fatalf("last PATCH: %d %v", r.StatusCode, r.Header)
	}
	b, _ := os.ReadFile(filepath.Join(f.dir, "a", "b.txt"))
	if string(b) != data {
		t.Fatalf("stored %d bytes", len(b))
	}
	if f.stateFiles(t) != 0 || f.obs.pending != 0 || strings.Join(f.obs.outcomes, ",") != "complete" {
		t.Errorf("state files %d, pending %d, outcomes %v", f.stateFiles(t), f.obs.pending, f.obs.outcomes)
	}
}

// TestHashStateLost loses the hash kept between chunks: the finish reads
// the file instead, and the digest still holds.
func TestHashStateLost(t *testing.T) {
	f := newFixture(t, Config{})
	data := strings.Repeat("lost state ", 5000)
	sum := sha256.Sum256([]byte(data))
	url, _ := f.create(t, int64(len(data)), map[string]string{"filename": "c.txt", "sha256": base64.StdEncoding.EncodeToString(sum[:])})
	f.patch(t, url, 0, data[:1000])
	states, _ := filepath.Glob(filepath.Join(f.dir, ".largo", "tus", "*.sha256"))
	if len(states) != 1 {
		t.Fatalf("hash states %q after a chunk", states)
	}
	os.WriteFile(states[0], []byte("garbage"), 0o644)
	f.patch(t, url, 1000, data[1000:2000])
	os.Remove(states[0])
	if r := f.patch(t, url, 2000, data[2000:]); r.StatusCode != 204 {
		t.Fatalf("last PATCH: %d", r.StatusCode)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "c.txt")); string(b) != data {
		t.Fatalf("stored %d bytes", len(b))
	}
	if f.stateFiles(t) != 0 {
		t.Errorf("%d state files left", f.stateFiles(t))
	}
}

func TestRefusedAtCreation(t *testing.T) {
	f := newFixture(t, Config{}, ingest.Config{MaxSize: 1000, NoMkdir: true})
	for _, tt := range []struct {
		name string
		size int64
		meta map[string]string
		hdr  []string
		code int
	}{
		{"no filename", 10, map[string]string{}, nil, 400},
		{"escape", 10, map[string]string{"filename": "../x"}, nil, 400},
		{"escape in folder", 10, map[string]string{"filename": "x", "folder": "a/../.."}, nil, 400},
		{"dotfile", 10, map[string]string{"filename": ".env"}, nil, 403},
		{"refused by the policy as invalid", 10, map[string]string{"filename": "\xff\xfe"}, nil, 400},
		{"dotfolder", 10, map[string]string{"filename": "x", "folder": ".largo"}, nil, 403},
		{"too large", 1001, map[string]string{"filename": "x"}, nil, 413},
		{"bad sha256", 10, map[string]string{"filename": "x", "sha256": "zz"}, nil, 400},
		{"exists", 10, map[string]string{"filename": "exists.txt"}, []string{"If-None-Match", "*"}, 412},
		{"missing folder", 10, map[string]string{"filename": "x", "folder": "nope"}, nil, 409},
		{"under a file", 10, map[string]string{"filename": "x", "folder": "exists.txt"}, nil, 409},
	} {
		_, resp := f.create(t, tt.size, tt.meta, tt.hdr...)
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %d; want %d", tt.name, resp.StatusCode, tt.code)
		}
		// The body is the table's reason, as a PUT's would be: no tus
		// error code before it (but in tusd's own answers, as to a size
		// over its Tus-Max-Size).
		if body, _ := io.ReadAll(resp.Body); tt.name != "too large" && (len(body) == 0 || strings.HasPrefix(string(body), "ERR_")) {
			t.Errorf("%s: body %q: want the reason alone", tt.name, body)
		}
	}
	if n := f.stateFiles(t); n != 0 {
		t.Errorf("%d state files after refusals", n)
	}
}

func TestFinishChecks(t *testing.T) {
	f := newFixture(t, Config{})
	// A digest that does not match: 400, nothing stored, state gone.
	url, _ := f.create(t, 5, map[string]string{"filename": "d.txt", "sha256": hex.EncodeToString(make([]byte, 32))})
	r := f.patch(t, url, 0, "hello")
	if r.StatusCode != 400 || r.Header.Get("Repr-Digest") == "" {
		t.Fatalf("digest mismatch: %d %v", r.StatusCode, r.Header)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "d.txt")); !os.IsNotExist(err) {
		t.Fatal("mismatched upload stored")
	}
	// If-None-Match: * checked again at the end: another writer got there first.
	url, _ = f.create(t, 3, map[string]string{"filename": "race.txt"}, "If-None-Match", "*")
	os.WriteFile(filepath.Join(f.dir, "race.txt"), []byte("first"), 0o644)
	if r := f.patch(t, url, 0, "new"); r.StatusCode != 412 {
		t.Fatalf("condition at the end: %d", r.StatusCode)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "race.txt")); string(b) != "first" {
		t.Fatalf("target overwritten: %q", b)
	}
	if f.stateFiles(t) != 0 || f.obs.pending != 0 {
		t.Errorf("state files %d, pending %d", f.stateFiles(t), f.obs.pending)
	}
}

// TestReprDigestOnLastPatch checks the digest a client gives with the
// request that completes an upload, instead of in the metadata.
func TestReprDigestOnLastPatch(t *testing.T) {
	f := newFixture(t, Config{})
	sum := sha256.Sum256([]byte("hello world"))
	good, bad := wire.FormatDigest(sum[:]), wire.FormatDigest(make([]byte, 32))

	// Refused before the body when it cannot be read: the offset stays.
	url, _ := f.create(t, 11, map[string]string{"filename": "a.txt"})
	if r := f.patch(t, url, 0, "hello", "Repr-Digest", "sha-256=nope"); r.StatusCode != 400 {
		t.Fatalf("unreadable Repr-Digest: %d", r.StatusCode)
	}
	// Ignored before the last request; checked on it.
	if r := f.patch(t, url, 0, "hello", "Repr-Digest", bad); r.StatusCode != 204 {
		t.Fatalf("first part: %d", r.StatusCode)
	}
	if r := f.patch(t, url, 5, " world", "Repr-Digest", good); r.StatusCode != 204 || r.Header.Get("Repr-Digest") != good {
		t.Fatalf("last part with its digest: %d %v", r.StatusCode, r.Header)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "a.txt")); string(b) != "hello world" {
		t.Fatalf("stored %q", b)
	}

	// A mismatch on the last request: 400 with the computed digest,
	// nothing stored.
	url, _ = f.create(t, 11, map[string]string{"filename": "b.txt"})
	f.patch(t, url, 0, "hello")
	if r := f.patch(t, url, 5, " world", "Repr-Digest", bad); r.StatusCode != 400 || r.Header.Get("Repr-Digest") != good {
		t.Fatalf("mismatch: %d %v", r.StatusCode, r.Header)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("mismatched upload stored")
	}
	if f.stateFiles(t) != 0 {
		t.Errorf("%d state files left", f.stateFiles(t))
	}
}

func TestExpiryAndTermination(t *testing.T) {
	f := newFixture(t, Config{Expiry: time.Hour})
	old, _ := f.create(t, 100, map[string]string{"filename": "old"})
	f.patch(t, old, 0, "0123456789")
	gone, _ := f.create(t, 100, map[string]string{"filename": "gone"})
	f.patch(t, gone, 0, "abc")
	req, _ := http.NewRequest("DELETE", gone, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("terminate: %v %v", resp, err)
	}
	if n, _, _ := f.h.Expire(); n != 0 {
		t.Fatalf("expired %d fresh uploads", n)
	}
	f.now = f.now.Add(2 * time.Hour)
	if n, freed, err := f.h.Expire(); n != 1 || freed != 10 || err != nil {
		t.Fatalf("Expire = %d, %d, %v", n, freed, err)
	}
	if f.stateFiles(t) != 0 || f.obs.pending != 0 {
		t.Errorf("state files %d, pending %d", f.stateFiles(t), f.obs.pending)
	}
	req, _ = http.NewRequest("HEAD", old, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 404 {
		t.Errorf("HEAD of an expired upload: %d", resp.StatusCode)
	}
}

func TestScanAtStart(t *testing.T) {
	dir := t.TempDir()
	tus := filepath.Join(dir, ".largo", "tus")
	os.MkdirAll(tus, 0o755)
	os.WriteFile(filepath.Join(tus, "abc"), []byte("12345"), 0o644)
	os.WriteFile(filepath.Join(tus, "abc.info"), []byte(`{"ID":"abc","Size":10}`), 0o644)
	os.WriteFile(filepath.Join(tus, "orphan"), []byte("xx"), 0o644)
	os.WriteFile(filepath.Join(tus, "lost.info"), []byte(`{}`), 0o644)
	s, _ := disk.Open(dir)
	defer s.Close()
	obs := &observer{}
	if _, err := New(Config{Writes: ingest.New(ingest.Config{Store: s}), BasePath: "/u/", Observer: obs}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(tus)
	if obs.pending != 5 || len(ents) != 2 {
		t.Fatalf("pending %d, %d files left", obs.pending, len(ents))
	}
}

// awsLikeUploadID has the shape of the upload IDs Amazon S3 gives: a few
// hundred characters of letters, digits, dots, underscores and hyphens.
var awsLikeUploadID = "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA." +
	strings.Repeat("Xk9_abc.DEF-ghi", 12) + "~2"

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"abc123": true, "": false, "../x": false, "a/b": false, "a.info": false, strings.Repeat("a", 1025): false,
		"0123456789abcdef0123456789abcdef+4c74a6b6-844a-45a6-ae10-355e85eff282": true, // versitygw's
		// AWS's shape: long, with dots, underscores and tildes.
		"0123456789abcdef0123456789abcdef+" + awsLikeUploadID: true,
		"..+x": false, ".+x": false, "x+": false, "x.info+abc": false, "x+a/b": false, "x+a b": false,
		"a b": false, "a%2fb": false, "a\\b": false,
	} {
		if validID(id) != want {
			t.Errorf("validID(%q) != %v", id, want)
		}
	}
}

// unconditional is a store that applies no condition to writes, as an
// object store whose server ignores them.
type unconditional struct{ *disk.Store }

func (unconditional) ConditionalWrites() bool { return false }

// TestConditionUnsupported: on such a store, an upload created under a
// condition is refused at creation with 501; one without goes through.
func TestConditionUnsupported(t *testing.T) {
	f := newFixture(t, Config{})
	f.h.cfg.Writes = ingest.New(ingest.Config{Store: unconditional{f.h.cfg.Writes.Store().(*disk.Store)}})
	for _, hdr := range [][]string{{"If-None-Match", "*"}, {"If-Match", `"x"`}} {
		if _, resp := f.create(t, 3, map[string]string{"filename": "new.txt"}, hdr...); resp.StatusCode != 501 {
			t.Errorf("create with %s: %d; want 501", hdr[0], resp.StatusCode)
		}
	}
	if url, resp := f.create(t, 3, map[string]string{"filename": "new.txt"}); resp.StatusCode != 201 || f.patch(t, url, 0, "new").StatusCode != 204 {
		t.Errorf("create without a condition: %d", resp.StatusCode)
	}
}
