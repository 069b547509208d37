package resumable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/serve"
	"largo/wire"
)

// ietfFixture serves a folder through package serve with both resumable
// front ends, as largo serve does.
type ietfFixture struct {
	dir string
	h   *Handler
	x   *IETF
	srv *httptest.Server
	obs *observer
	now time.Time
	// client bounds every request, so that a request the server never
	// answers fails the test instead of hanging it.
	client *http.Client
}

func newIETF(t *testing.T, versions []int, limits ...ingest.Config) *ietfFixture {
	t.Helper()
	f := &ietfFixture{dir: t.TempDir(), obs: &observer{}, now: time.Now(), client: &http.Client{Timeout: 20 * time.Second}}
	os.WriteFile(filepath.Join(f.dir, "exists.txt"), []byte("old"), 0o644)
	os.Mkdir(filepath.Join(f.dir, "dir"), 0o755)
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var ic ingest.Config
	if len(limits) > 0 {
		ic = limits[0]
	}
	g := gate.New(gate.Config{Access: auth.New(auth.OneUser("", true), nil), Resolver: s})
	ic.Store = g.Store(s)
	writes := ingest.New(ic)
	staging, err := StagingFor(s)
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = New(Config{Writes: writes, Staging: staging, State: s.State(), BasePath: serve.ResumablePrefix, Observer: f.obs, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if f.x, err = f.h.IETF(IETFConfig{BasePath: serve.ResumerPrefix, Versions: versions}); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(serve.New(serve.Config{Store: ic.Store, Gate: g, Writes: writes, Resumable: f.h, Resumer: f.x}))
	t.Cleanup(f.srv.Close)
	return f
}

// exchange is a request's interim and final responses.
type exchange struct {
	interim []textproto.MIMEHeader // the 104s
	resp    *http.Response
	body    string
	err     error
}

// do sends a request and records its 104s.
func (f *ietfFixture) do(t *testing.T, method, path string, body io.Reader, hdr ...string) *exchange {
	t.Helper()
	ex := &exchange{}
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == 104 {
			ex.interim = append(ex.interim, h)
		}
		return nil
	}}
	url := path
	if strings.HasPrefix(path, "/") {
		url = f.srv.URL + path
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	ex.resp, ex.err = f.client.Do(req)
	if ex.err == nil {
		b, _ := io.ReadAll(ex.resp.Body)
		ex.resp.Body.Close()
		ex.body = string(b)
	}
	return ex
}

// want fails the test unless the final response has code and the fields.
func (ex *exchange) want(t *testing.T, what string, code int, fields ...string) {
	t.Helper()
	if ex.err != nil {
		t.Fatalf("%s: %v", what, ex.err)
	}
	if ex.resp.StatusCode != code {
		t.Fatalf("%s: %d %s; want %d", what, ex.resp.StatusCode, ex.body, code)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if got := ex.resp.Header.Get(fields[i]); got != fields[i+1] {
			t.Errorf("%s: %s %q; want %q", what, fields[i], got, fields[i+1])
		}
	}
}

func (f *ietfFixture) read(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(name)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// staged counts the staging's files.
func (f *ietfFixture) staged() int {
	ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus"))
	return len(ents)
}

func v(n int) []string { return []string{"Upload-Draft-Interop-Version", fmt.Sprint(n)} }

func with(a []string, b ...string) []string { return append(append([]string(nil), a...), b...) }

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return wire.FormatDigest(h[:])
}

// TestIETFWhole: a PUT that says it carries the whole file gets a 104
// with the upload's location and limits, then the answer of a PUT; the
// file is placed, the staging empty.
func TestIETFWhole(t *testing.T) {
	f := newIETF(t, nil, ingest.Config{MaxSize: 1 << 20})
	ex := f.do(t, "PUT", "/a.txt", strings.NewReader("hello"), with(v(9), "Upload-Complete", "?1")...)
	ex.want(t, "PUT", 201, "Upload-Complete", "?1", "Upload-Offset", "5", "Repr-Digest", sum("hello"), "Location", "/a.txt")
	if len(ex.interim) != 1 {
		t.Fatalf("%d 104s; want 1", len(ex.interim))
	}
	i := ex.interim[0]
	if !strings.HasPrefix(i.Get("Location"), serve.ResumerPrefix) || i.Get("Upload-Draft-Interop-Version") != "9" ||
		i.Get("Upload-Limit") != "max-size=1048576, max-age=86400" {
		t.Errorf("104: %v", i)
	}
	if ex.resp.Header.Get("ETag") == "" || ex.resp.Header.Get("Upload-Limit") != "" {
		t.Errorf("final: %v", ex.resp.Header)
	}
	if got := f.read("a.txt"); got != "hello" {
		t.Errorf("a.txt holds %q", got)
	}
	if n := f.staged(); n != 0 {
		t.Errorf("%d staged files left", n)
	}
	// The upload resource says it is complete, and where the file went.
	ex = f.do(t, "HEAD", i.Get("Location"), nil, v(9)...)
	ex.want(t, "HEAD after", 204, "Upload-Complete", "?1", "Upload-Offset", "5", "Upload-Length", "5", "Content-Location", "/a.txt", "Cache-Control", "no-store")
	// A replacement is a 204, as a PUT's.
	ex = f.do(t, "PUT", "/exists.txt", strings.NewReader("new"), with(v(9), "Upload-Complete", "?1")...)
	ex.want(t, "replace", 204, "Upload-Complete", "?1", "Location", "")
	if got := f.read("exists.txt"); got != "new" {
		t.Errorf("exists.txt holds %q", got)
	}
	if fmt.Sprint(f.obs.outcomes) != "[complete complete]" || f.obs.pending != 0 {
		t.Errorf("outcomes %v, pending %d", f.obs.outcomes, f.obs.pending)
	}
}

// TestIETFResume: an upload made in parts, its offset asked, appended to
// the end, then asked about again; a repeated last append gets the same
// answer, and more bytes are refused.
func TestIETFResume(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/dir/b.txt", strings.NewReader("hel"), with(v(9), "Upload-Complete", "?0", "Upload-Length", "5")...)
	ex.want(t, "create", 201, "Upload-Complete", "?0", "Upload-Offset", "3")
	loc := ex.resp.Header.Get("Location")
	if len(ex.interim) != 1 || ex.interim[0].Get("Location") != loc || loc == "" {
		t.Fatalf("Location %q, 104s %v", loc, ex.interim)
	}
	if got := f.read("dir/b.txt"); !strings.HasPrefix(got, "<") {
		t.Fatalf("an incomplete upload is visible: %q", got)
	}
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "HEAD", 204, "Upload-Offset", "3", "Upload-Complete", "?0", "Upload-Length", "5", "Cache-Control", "no-store", "Upload-Limit", "max-age=86400")
	ex = f.do(t, "GET", loc, nil, v(9)...)
	ex.want(t, "GET", 204, "Upload-Offset", "3")
	partial := with(v(9), "Content-Type", "application/partial-upload")
	ex = f.do(t, "PATCH", loc, strings.NewReader("lo"), with(partial, "Upload-Offset", "3", "Upload-Complete", "?1")...)
	ex.want(t, "last append", 201, "Upload-Complete", "?1", "Upload-Offset", "5", "Repr-Digest", sum("hello"), "Location", "/dir/b.txt")
	if got := f.read("dir/b.txt"); got != "hello" {
		t.Errorf("b.txt holds %q", got)
	}
	etag := ex.resp.Header.Get("ETag")
	ex = f.do(t, "PATCH", loc, nil, with(partial, "Upload-Offset", "5", "Upload-Complete", "?1")...)
	ex.want(t, "replayed last append", 201, "Upload-Complete", "?1", "ETag", etag)
	ex = f.do(t, "PATCH", loc, strings.NewReader("!"), with(partial, "Upload-Offset", "5", "Upload-Complete", "?1")...)
	ex.want(t, "append to a complete upload", 400, "Content-Type", "application/problem+json")
	if !strings.Contains(ex.body, "#completed-upload") {
		t.Errorf("problem %s", ex.body)
	}
	if f.staged() != 0 || f.obs.pending != 0 {
		t.Errorf("%d staged files, %d pending bytes left", f.staged(), f.obs.pending)
	}
}

// TestIETFRefusals: a wrong offset (409), lengths that disagree (400), a
// wrong media type, a missing offset, an unknown upload.
func TestIETFRefusals(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/c", strings.NewReader("abc"), with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "create", 201)
	loc := ex.resp.Header.Get("Location")
	partial := with(v(9), "Content-Type", "application/partial-upload")

	ex = f.do(t, "PATCH", loc, strings.NewReader("x"), with(partial, "Upload-Offset", "7", "Upload-Complete", "?0")...)
	ex.want(t, "wrong offset", 409, "Upload-Offset", "3", "Upload-Complete", "?0", "Content-Type", "application/problem+json")
	var p map[string]any
	if err := json.Unmarshal([]byte(ex.body), &p); err != nil || p["type"] != "https://iana.org/assignments/http-problem-types#mismatching-upload-offset" ||
		p["expected-offset"] != 3.0 || p["provided-offset"] != 7.0 {
		t.Errorf("problem %s (%v)", ex.body, err)
	}
	ex = f.do(t, "PATCH", loc, strings.NewReader("x"), with(v(9), "Upload-Offset", "3", "Upload-Complete", "?0")...)
	ex.want(t, "no media type", 415, "Accept-Patch", "application/partial-upload")
	ex = f.do(t, "PATCH", loc, strings.NewReader("x"), with(partial, "Upload-Complete", "?0")...)
	ex.want(t, "no offset", 400)
	ex = f.do(t, "PATCH", loc, strings.NewReader("xy"), with(partial, "Upload-Offset", "3", "Upload-Complete", "?1", "Upload-Length", "9")...)
	ex.want(t, "Upload-Length against the end", 400, "Content-Type", "application/problem+json")
	if !strings.Contains(ex.body, "#inconsistent-upload-length") {
		t.Errorf("problem %s", ex.body)
	}
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "nothing moved", 204, "Upload-Offset", "3")

	// A length declared, then contradicted; then bytes past it.
	ex = f.do(t, "PATCH", loc, strings.NewReader("d"), with(partial, "Upload-Offset", "3", "Upload-Complete", "?0", "Upload-Length", "6")...)
	ex.want(t, "declare", 204, "Upload-Offset", "4")
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "declared", 204, "Upload-Length", "6")
	ex = f.do(t, "PATCH", loc, strings.NewReader("e"), with(partial, "Upload-Offset", "4", "Upload-Complete", "?0", "Upload-Length", "8")...)
	ex.want(t, "another length", 400, "Content-Type", "application/problem+json")
	chunked := io.MultiReader(strings.NewReader("efgh")) // no Content-Length
	ex = f.do(t, "PATCH", loc, chunked, with(partial, "Upload-Offset", "4", "Upload-Complete", "?0")...)
	ex.want(t, "past the length", 400, "Content-Type", "application/problem+json")
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "removed", 404)

	ex = f.do(t, "PUT", "/d", strings.NewReader("abc"), with(v(9), "Upload-Complete", "?1", "Upload-Length", "4")...)
	ex.want(t, "creation lengths disagree", 400, "Content-Type", "application/problem+json")
	if len(ex.interim) != 0 {
		t.Errorf("a refused creation got a 104")
	}
	ex = f.do(t, "HEAD", serve.ResumerPrefix+"0123abcd", nil, v(9)...)
	ex.want(t, "unknown upload", 404)
	ex = f.do(t, "HEAD", serve.ResumerPrefix+"../x", nil, v(9)...)
	if ex.err == nil && ex.resp.StatusCode < 400 {
		t.Errorf("a bad ID: %d", ex.resp.StatusCode)
	}
	if f.staged() != 0 || f.obs.pending != 0 {
		t.Errorf("%d staged files, %d pending bytes left", f.staged(), f.obs.pending)
	}
}

// TestIETFCancel: DELETE removes an upload and frees its space.
func TestIETFCancel(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/e", strings.NewReader("abcdef"), with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "create", 201)
	loc := ex.resp.Header.Get("Location")
	if f.obs.pending != 6 {
		t.Errorf("pending %d", f.obs.pending)
	}
	f.do(t, "DELETE", loc, nil, v(9)...).want(t, "DELETE", 204)
	f.do(t, "HEAD", loc, nil, v(9)...).want(t, "HEAD after", 404)
	f.do(t, "DELETE", loc, nil, v(9)...).want(t, "DELETE again", 404)
	if f.staged() != 0 || f.obs.pending != 0 || fmt.Sprint(f.obs.outcomes) != "[aborted]" {
		t.Errorf("%d staged files, %d pending bytes, outcomes %v", f.staged(), f.obs.pending, f.obs.outcomes)
	}
	if got := f.read("e"); !strings.HasPrefix(got, "<") {
		t.Errorf("e holds %q", got)
	}
}

// TestIETFUnknownVersion: a version not spoken gets no 104; the whole
// file is a plain PUT, a part is refused and nothing is stored.
func TestIETFUnknownVersion(t *testing.T) {
	f := newIETF(t, []int{8, 9})
	for _, hdr := range [][]string{
		with(v(99), "Upload-Complete", "?0"),
		with(v(7), "Upload-Complete", "?0"),
		{"Upload-Complete", "?0"},
		with(v(3), "Upload-Incomplete", "?1"),
	} {
		ex := f.do(t, "PUT", "/part", strings.NewReader("part"), hdr...)
		ex.want(t, fmt.Sprint(hdr), 400)
		if len(ex.interim) != 0 {
			t.Errorf("%v: a 104", hdr)
		}
	}
	if got := f.read("part"); !strings.HasPrefix(got, "<") {
		t.Errorf("a part was stored: %q", got)
	}
	ex := f.do(t, "PUT", "/whole", strings.NewReader("whole"), with(v(7), "Upload-Complete", "?1")...)
	ex.want(t, "whole", 201, "Upload-Complete", "")
	if len(ex.interim) != 0 || f.read("whole") != "whole" {
		t.Errorf("104s %v, whole holds %q", ex.interim, f.read("whole"))
	}
	if f.staged() != 0 {
		t.Errorf("%d staged files", f.staged())
	}
}

// TestIETFVersions: the fields of the older drafts: Upload-Incomplete in
// version 3, appends of any type before version 6, expires in version 6.
func TestIETFVersions(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/v3", strings.NewReader("ab"), with(v(3), "Upload-Incomplete", "?1")...)
	ex.want(t, "v3 create", 201, "Upload-Incomplete", "?1", "Upload-Complete", "", "Upload-Limit", "")
	loc := ex.resp.Header.Get("Location")
	if len(ex.interim) != 1 || ex.interim[0].Get("Upload-Draft-Interop-Version") != "3" || ex.interim[0].Get("Upload-Limit") != "" {
		t.Errorf("v3 104s %v", ex.interim)
	}
	f.do(t, "HEAD", loc, nil, v(3)...).want(t, "v3 HEAD", 204, "Upload-Incomplete", "?1", "Upload-Offset", "2")
	f.do(t, "HEAD", loc, nil, with(v(3), "Upload-Offset", "2")...).want(t, "v3 HEAD with an offset", 400)
	// No Upload-Incomplete: the last append.
	ex = f.do(t, "PATCH", loc, strings.NewReader("cd"), with(v(3), "Upload-Offset", "2")...)
	ex.want(t, "v3 last append", 201, "Upload-Incomplete", "?0")
	if f.read("v3") != "abcd" {
		t.Errorf("v3 holds %q", f.read("v3"))
	}

	ex = f.do(t, "PUT", "/v5", strings.NewReader("ab"), with(v(5), "Upload-Complete", "?0")...)
	ex.want(t, "v5 create", 201)
	loc = ex.resp.Header.Get("Location")
	f.do(t, "PATCH", loc, strings.NewReader("cd"), with(v(5), "Upload-Offset", "2", "Upload-Complete", "?1")...).want(t, "v5 untyped append", 201)
	if f.read("v5") != "abcd" {
		t.Errorf("v5 holds %q", f.read("v5"))
	}

	ex = f.do(t, "PUT", "/v6", strings.NewReader("ab"), with(v(6), "Upload-Complete", "?0")...)
	ex.want(t, "v6 create", 201, "Upload-Limit", "expires=86400")
	loc = ex.resp.Header.Get("Location")
	f.do(t, "PATCH", loc, strings.NewReader("cd"), with(v(6), "Upload-Offset", "2", "Upload-Complete", "?1")...).want(t, "v6 untyped append", 415)
	f.do(t, "PATCH", loc, strings.NewReader("cd"), with(v(6), "Upload-Offset", "2", "Upload-Complete", "?1", "Content-Type", "application/partial-upload")...).want(t, "v6 append", 201)
	if f.read("v6") != "abcd" {
		t.Errorf("v6 holds %q", f.read("v6"))
	}

	// Up to version 6, reaching the declared length completes an upload,
	// as tusd does (tus-js-client counts on it); from 7 on it does not.
	ex = f.do(t, "POST", "/dir/", nil, with(v(6), "Upload-Complete", "?0", "Upload-Length", "4", "Upload-Metadata", "filename dzYuYmlu")...)
	ex.want(t, "v6 POST", 201)
	loc = ex.resp.Header.Get("Location")
	ex = f.do(t, "PATCH", loc, strings.NewReader("abcd"), with(v(6), "Upload-Offset", "0", "Upload-Complete", "?0", "Content-Type", "application/partial-upload")...)
	ex.want(t, "v6 append to the length", 201, "Upload-Complete", "?1", "Upload-Offset", "4")
	if f.read("dir/w6.bin") != "abcd" {
		t.Errorf("w6.bin holds %q", f.read("dir/w6.bin"))
	}
	ex = f.do(t, "PUT", "/w9", strings.NewReader("abc"), with(v(9), "Upload-Complete", "?0", "Upload-Length", "3")...)
	ex.want(t, "v9 create to the length", 201, "Upload-Complete", "?0", "Upload-Offset", "3")
	loc = ex.resp.Header.Get("Location")
	if got := f.read("w9"); !strings.HasPrefix(got, "<") {
		t.Errorf("version 9 completed an upload its client did not: %q", got)
	}
	// Asked in version 6, the same upload is complete: placed first.
	f.do(t, "HEAD", loc, nil, v(6)...).want(t, "v6 HEAD at the length", 204, "Upload-Complete", "?1", "Upload-Offset", "3")
	if f.read("w9") != "abc" {
		t.Errorf("w9 holds %q", f.read("w9"))
	}
}

// TestIETFLimits: a length over the limit is refused before the 104,
// with the limits; a body of unknown length that outgrows the limit is
// cut there, what came kept and its upload left where it stands; OPTIONS
// announces the limits.
func TestIETFLimits(t *testing.T) {
	f := newIETF(t, nil, ingest.Config{MaxSize: 10})
	ex := f.do(t, "PUT", "/big", strings.NewReader("x"), with(v(9), "Upload-Complete", "?0", "Upload-Length", "11")...)
	ex.want(t, "Upload-Length over the limit", 413, "Upload-Limit", "max-size=10, max-age=86400")
	if len(ex.interim) != 0 {
		t.Errorf("a refused creation got a 104")
	}
	ex = f.do(t, "PUT", "/big", io.MultiReader(strings.NewReader(strings.Repeat("x", 11))), with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "a body over the limit", 413, "Upload-Limit", "max-size=10, max-age=86400")
	if len(ex.interim) != 1 {
		t.Errorf("%d 104s", len(ex.interim))
	}
	ex.want(t, "a body over the limit", 413, "Upload-Offset", "10", "Upload-Complete", "?0")
	f.do(t, "HEAD", ex.interim[0].Get("Location"), nil, v(9)...).want(t, "kept", 204, "Upload-Offset", "10", "Upload-Complete", "?0")
	ex = f.do(t, "OPTIONS", "/dir/", nil)
	ex.want(t, "OPTIONS", 204, "Upload-Limit", "max-size=10, max-age=86400")
	if f.staged() == 0 || f.obs.pending != 10 {
		t.Errorf("%d staged files, %d pending bytes; want the upload's, with its 10 bytes", f.staged(), f.obs.pending)
	}
}

// TestIETFExpiry: an upload without a byte for the expiry is removed, and
// its announced lifetime shrinks meanwhile.
func TestIETFExpiry(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/x", strings.NewReader("abc"), with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "create", 201)
	loc := ex.resp.Header.Get("Location")
	f.now = f.now.Add(time.Hour)
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "HEAD", 204)
	var age int64
	fmt.Sscanf(ex.resp.Header.Get("Upload-Limit"), "max-age=%d", &age)
	if age > 23*3600+60 || age < 23*3600-60 {
		t.Errorf("Upload-Limit %q after an hour", ex.resp.Header.Get("Upload-Limit"))
	}
	f.now = f.now.Add(24 * time.Hour)
	if n, freed, err := f.h.Expire(); n != 1 || freed != 3 || err != nil {
		t.Fatalf("Expire = %d, %d, %v", n, freed, err)
	}
	f.do(t, "HEAD", loc, nil, v(9)...).want(t, "HEAD after expiry", 404)
}

// TestIETFPost: tus-js-client's creation, a POST to a folder naming the
// file in Upload-Metadata, and the draft's, naming it in
// Content-Disposition.
func TestIETFPost(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "POST", "/dir/", nil, with(v(6), "Upload-Complete", "?0", "Upload-Length", "4",
		"Upload-Metadata", "filename c3ViL3QudHh0,sha256 "+base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%x", sha256.Sum256([]byte("abcd")))))...)
	ex.want(t, "POST", 201, "Upload-Offset", "0")
	loc := ex.resp.Header.Get("Location")
	ex = f.do(t, "PATCH", loc, strings.NewReader("abcd"), with(v(6), "Upload-Offset", "0", "Upload-Complete", "?1", "Content-Type", "application/partial-upload")...)
	ex.want(t, "PATCH", 201, "Upload-Offset", "4", "Location", "/dir/sub/t.txt")
	if f.read("dir/sub/t.txt") != "abcd" {
		t.Errorf("t.txt holds %q", f.read("dir/sub/t.txt"))
	}
	ex = f.do(t, "POST", "/dir/", strings.NewReader("hi"), with(v(9), "Upload-Complete", "?1", "Content-Disposition", `inline; filename*=UTF-8''n%C3%A9.txt`)...)
	ex.want(t, "POST whole", 201, "Location", "/dir/n%C3%A9.txt")
	if f.read("dir/né.txt") != "hi" {
		t.Errorf("né.txt holds %q", f.read("dir/né.txt"))
	}
	f.do(t, "POST", "/dir/", nil, with(v(9), "Upload-Complete", "?0")...).want(t, "POST without a name", 400)
	f.do(t, "POST", "/dir/", nil, with(v(9), "Upload-Complete", "?0", "Content-Disposition", `inline; filename="../../x"`)...).want(t, "POST escaping", 400)
}

// TestIETFDigest: a Repr-Digest that the bytes do not match refuses the
// upload at its end, complete (resuming would not help), nothing placed.
func TestIETFDigest(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/g", strings.NewReader("ab"), with(v(9), "Upload-Complete", "?0", "Repr-Digest", sum("abcd"))...)
	ex.want(t, "create", 201)
	loc := ex.resp.Header.Get("Location")
	ex = f.do(t, "PATCH", loc, strings.NewReader("cX"), with(v(9), "Upload-Offset", "2", "Upload-Complete", "?1", "Content-Type", "application/partial-upload")...)
	ex.want(t, "mismatch", 400, "Upload-Complete", "?1", "Repr-Digest", sum("abcX"))
	if got := f.read("g"); !strings.HasPrefix(got, "<") {
		t.Errorf("g holds %q", got)
	}
	if f.staged() != 0 || f.obs.pending != 0 {
		t.Errorf("%d staged files, %d pending bytes left", f.staged(), f.obs.pending)
	}
}

// inflight starts an append to the upload at loc from offset, whose body
// keeps coming until the server stops reading it, and returns once the
// server has stored some of it. wait returns the append's exchange once
// it has ended.
func (f *ietfFixture) inflight(t *testing.T, loc string, offset int64) (wait func() *exchange) {
	t.Helper()
	id := strings.TrimPrefix(loc, serve.ResumerPrefix)
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var ex *exchange
	wg.Go(func() {
		ex = f.do(t, "PATCH", loc, pr, with(v(9), "Upload-Offset", fmt.Sprint(offset), "Upload-Complete", "?1", "Content-Type", "application/partial-upload")...)
		pr.CloseWithError(io.ErrClosedPipe)
	})
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	staged := filepath.Join(f.dir, ".largo", "tus", id)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := pw.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(staged); err == nil && fi.Size() > offset {
			break // the server is writing what it receives
		}
		if time.Now().After(deadline) {
			t.Fatal("the append never reached the staging")
		}
	}
	wg.Go(func() { // until the server stops reading
		for {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
	})
	return func() *exchange {
		wg.Wait()
		return ex
	}
}

// TestIETFTakeover: an offset retrieval while an append is still being
// received stops the append, and answers the offset of what it stored,
// which the next append is accepted at; a cancellation stops one too.
func TestIETFTakeover(t *testing.T) {
	f := newIETF(t, nil)
	ex := f.do(t, "PUT", "/t", nil, with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "create", 201)
	loc := ex.resp.Header.Get("Location")
	staged := filepath.Join(f.dir, ".largo", "tus", strings.TrimPrefix(loc, serve.ResumerPrefix))

	wait := f.inflight(t, loc, 0)
	ex = f.do(t, "HEAD", loc, nil, v(9)...)
	ex.want(t, "HEAD during an append", 204, "Upload-Complete", "?0")
	var offset int64
	fmt.Sscan(ex.resp.Header.Get("Upload-Offset"), &offset)
	if fi, err := os.Stat(staged); err != nil || fi.Size() != offset || offset == 0 {
		t.Fatalf("offset %d, staged %v (%v)", offset, fi, err)
	}
	if stale := wait(); stale.err == nil {
		t.Errorf("the stopped append was answered: %d %s", stale.resp.StatusCode, stale.body)
	}
	rest := strings.Repeat("b", 10)
	ex = f.do(t, "PATCH", loc, strings.NewReader(rest), with(v(9), "Upload-Offset", fmt.Sprint(offset), "Upload-Complete", "?1", "Content-Type", "application/partial-upload")...)
	ex.want(t, "append at the offset", 201)
	if got := f.read("t"); int64(len(got)) != offset+10 || got[offset:] != rest || strings.Trim(got[:offset], "a") != "" {
		t.Errorf("t holds %d bytes", len(got))
	}

	ex = f.do(t, "PUT", "/u", nil, with(v(9), "Upload-Complete", "?0")...)
	ex.want(t, "create", 201)
	loc = ex.resp.Header.Get("Location")
	wait = f.inflight(t, loc, 0)
	f.do(t, "DELETE", loc, nil, v(9)...).want(t, "DELETE during an append", 204)
	if stale := wait(); stale.err == nil {
		t.Errorf("the stopped append was answered: %d %s", stale.resp.StatusCode, stale.body)
	}
	f.do(t, "HEAD", loc, nil, v(9)...).want(t, "HEAD after", 404)
	if f.staged() != 0 || f.obs.pending != 0 {
		t.Errorf("%d staged files, %d pending bytes left", f.staged(), f.obs.pending)
	}
}
