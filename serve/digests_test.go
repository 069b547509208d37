package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/auth"
	"largo/digests"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/pageapi"
	"largo/record"
)

// digestFixture serves a folder holding files under access, writes on,
// with one keeper of digests shared by the pipeline and the handler, and
// the page's API, whose moves keep the digests.
func digestFixture(t *testing.T, files map[string]string, access *auth.Access) (*Handler, string, *digests.Keeper) {
	t.Helper()
	_, dir := newTestHandler(t, files)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	recs := record.NewFiles(record.New(s.State(), record.Options{}), record.FilesOptions{})
	k := digests.New(recs, digests.Options{Store: s})
	g := gate.New(gate.Config{Access: access, Resolver: s})
	gated := g.Store(s)
	h := New(withPage(Config{
		Store:   gated,
		Gate:    g,
		State:   s.State(),
		Files:   recs,
		Digests: k,
		Writes:  ingest.New(ingest.Config{Store: gated, Files: recs, Server: asServer}),
	}))
	return h, dir, k
}

func hexSum(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }

// TestReprDigest: a file written through the pipeline answers its
// digest on GET, HEAD and 206, never on an error; a move keeps it, a
// change out of band or a removal ends it, and Want-Repr-Digest can
// refuse it.
func TestReprDigest(t *testing.T) {
	h, dir, _ := digestFixture(t, map[string]string{"seeded.txt": "no record"}, auth.New(auth.OneUser(token, false), nil))
	bearer := []string{"Authorization", "Bearer " + token}
	if rec := send(h, "PUT", "/d/f.txt", strings.NewReader("hello"), 5, bearer...); rec.Code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	etag := do(h, "HEAD", "/d/f.txt").Header().Get("ETag")
	for _, tt := range []struct {
		what   string
		method string
		hdr    []string
		code   int
		want   bool
	}{
		{"HEAD", "HEAD", nil, 200, true},
		{"GET", "GET", nil, 200, true},
		{"a range", "GET", []string{"Range", "bytes=1-2"}, 206, true},
		{"two ranges", "GET", []string{"Range", "bytes=0-0,2-3"}, 206, true},
		{"a range If-Range", "GET", []string{"Range", "bytes=1-2", "If-Range", etag}, 206, true},
		{"not modified", "GET", []string{"If-None-Match", etag}, 304, true},
		{"an unsatisfiable range", "GET", []string{"Range", "bytes=100-"}, 416, false},
		{"a failed If-Match", "GET", []string{"If-Match", `"other"`}, 412, false},
		{"If-Match", "GET", []string{"If-Match", etag}, 200, true},
		{"sha-256 asked for", "HEAD", []string{"Want-Repr-Digest", "sha-256=10"}, 200, true},
		{"sha-512 asked for", "HEAD", []string{"Want-Repr-Digest", "sha-512=10"}, 200, true},
		{"sha-256 refused", "HEAD", []string{"Want-Repr-Digest", "sha-512=3, sha-256=0"}, 200, false},
		{"a gzip client", "GET", []string{"Accept-Encoding", "gzip"}, 200, true},
	} {
		rec := do(h, tt.method, "/d/f.txt", tt.hdr...)
		got := rec.Header().Get("Repr-Digest")
		if rec.Code != tt.code || (got != "") != tt.want || tt.want && got != digest("hello") {
			t.Errorf("%s: %d, Repr-Digest %q; want %d, %v", tt.what, rec.Code, got, tt.code, tt.want)
		}
	}
	if got := do(h, "HEAD", "/seeded.txt").Header().Get("Repr-Digest"); got != "" {
		t.Errorf("a file that arrived another way: %q", got)
	}
	if body := do(h, "GET", "/d/", "Accept", "application/json").Body.String(); !strings.Contains(body, `"name":"f.txt"`) || !strings.Contains(body, `"sha256":"`+hexSum("hello")+`"`) {
		t.Errorf("the JSON listing: %s", body)
	}

	form := []string{"Authorization", "Bearer " + token, "Content-Type", "application/x-www-form-urlencoded"}
	if rec := send(h, "POST", pageapi.MovePath, strings.NewReader("from=/d/f.txt&to=/d/g.txt"), -1, form...); rec.Code != http.StatusCreated {
		t.Fatalf("move: %d %s", rec.Code, rec.Body)
	}
	if got := do(h, "HEAD", "/d/g.txt").Header().Get("Repr-Digest"); got != digest("hello") {
		t.Errorf("after a rename: %q", got)
	}
	if rec := send(h, "POST", pageapi.MovePath, strings.NewReader("from=/d&to=/e"), -1, form...); rec.Code != http.StatusCreated {
		t.Fatalf("move: %d %s", rec.Code, rec.Body)
	}
	if got := do(h, "HEAD", "/e/g.txt").Header().Get("Repr-Digest"); got != digest("hello") {
		t.Errorf("after its folder's rename: %q", got)
	}

	// Replaced out of band: the old digest is not served.
	if err := os.WriteFile(filepath.Join(dir, "e", "g.txt"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := do(h, "HEAD", "/e/g.txt").Header().Get("Repr-Digest"); got != "" {
		t.Errorf("after a change out of band: %q", got)
	}
	// Written again, then removed: the record goes.
	send(h, "PUT", "/e/g.txt", strings.NewReader("again"), 5, bearer...)
	if got := do(h, "HEAD", "/e/g.txt").Header().Get("Repr-Digest"); got != digest("again") {
		t.Errorf("written again: %q", got)
	}
	if rec := send(h, "DELETE", "/e/g.txt", nil, 0, bearer...); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", rec.Code)
	}
	if _, err := h.cfg.Files.Get(context.Background(), "e/g.txt"); err == nil {
		t.Error("a removed file's record stayed")
	}
}

// TestSums: a folder's SHA256SUMS lists the recorded digests of what the
// requester may read below it, in sha256sum's format, and names the
// files without one; a file of that name is served as itself.
func TestSums(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(accessFile), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"pub/a.txt": "a", "pub/hidden.txt": "h", "pub/sub/b.txt": "b",
		"private/s.txt": "s", "own/SHA256SUMS": "mine",
	}
	h, dir, k := digestFixture(t, files, auth.New(pol, nil))
	if _, err := k.Hash(context.Background(), "", digests.HashOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pub", "later.txt"), []byte("later"), 0o644)

	rec := do(h, "GET", "/pub/SHA256SUMS")
	want := hexSum("a") + "  a.txt\n" +
		"# no digest recorded: later.txt\n" +
		hexSum("b") + "  sub/b.txt\n"
	if rec.Code != 200 || rec.Body.String() != want || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("anonymous /pub/SHA256SUMS: %d %q\n%q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if body := do(h, "GET", "/SHA256SUMS").Body.String(); strings.Contains(body, "private") || !strings.Contains(body, "  pub/sub/b.txt\n") {
		t.Errorf("anonymous /SHA256SUMS:\n%s", body)
	}
	alice := []string{"Authorization", "Bearer alice-token-0123456789"}
	if body := do(h, "GET", "/SHA256SUMS", alice...).Body.String(); !strings.Contains(body, hexSum("s")+"  private/s.txt\n") || !strings.Contains(body, "  pub/hidden.txt\n") {
		t.Errorf("alice's /SHA256SUMS:\n%s", body)
	}
	if rec := do(h, "GET", "/private/SHA256SUMS"); rec.Code != http.StatusUnauthorized {
		t.Errorf("anonymous /private/SHA256SUMS: %d", rec.Code)
	}
	if body := do(h, "GET", "/own/SHA256SUMS").Body.String(); body != "mine" {
		t.Errorf("a file named SHA256SUMS: %q", body)
	}
	for _, miss := range []string{"/nope/SHA256SUMS", "/pub/a.txt/SHA256SUMS", "/pub/SHA256SUMS/"} {
		if rec := do(h, "GET", miss); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d", miss, rec.Code)
		}
	}
	if rec := do(h, "HEAD", "/pub/SHA256SUMS"); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d %q", rec.Code, rec.Body)
	}
}

// readerFrom is a ResponseWriter that tells whether its ReadFrom was
// called.
type readerFrom struct {
	*httptest.ResponseRecorder
	called bool
}

func (w *readerFrom) ReadFrom(r io.Reader) (int64, error) {
	w.called = true
	return io.Copy(w.ResponseRecorder, r)
}

// TestDigestWriterKeepsReadFrom: the writer that guards a range
// request's digest hands a file to the writer below it (sendfile), and
// unwraps to it.
func TestDigestWriterKeepsReadFrom(t *testing.T) {
	below := &readerFrom{ResponseRecorder: httptest.NewRecorder()}
	var w http.ResponseWriter = &digestWriter{ResponseWriter: below}
	if n, err := io.Copy(w, io.LimitReader(strings.NewReader("bytes"), 5)); n != 5 || err != nil || !below.called {
		t.Errorf("io.Copy: %d, %v; ReadFrom below called: %v", n, err, below.called)
	}
	if http.NewResponseController(w).Flush() != nil {
		t.Error("the response controller does not reach the writer below")
	}
}

// TestSumsName: a name sha256sum would misread is escaped as it escapes
// it.
func TestSumsName(t *testing.T) {
	for name, want := range map[string]string{
		"plain":         "plain",
		"back\\slash":   "back\\\\slash",
		"line\nbreak\r": "line\\nbreak\\r",
	} {
		escaped := strings.ContainsAny(name, "\\\n\r")
		if got := string(appendSumsName(nil, name, escaped)); got != want {
			t.Errorf("%q: %q; want %q", name, got, want)
		}
	}
}

// asServer is the context of the server's own calls.
func asServer(ctx context.Context) context.Context { return gate.With(ctx, gate.Server()) }
