package resumable

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/internal/poll"
	"largo/links"
	"largo/serve"
)

// ownedFixture serves a folder through package serve as largo serve does,
// with users of an access file and share links, so that uploads have
// owners whose rights change.
type ownedFixture struct {
	dir    string
	h      *Handler
	access *auth.Access
	links  *links.Links
	srv    *httptest.Server
	client *http.Client
}

// Users of the fixture's access file.
var (
	alice = []string{"Authorization", "Bearer alice-token-0123456789"}
	bob   = []string{"Authorization", "Bearer bob-token-0123456789"}
)

// policy is the fixture's access file: everyone reads and lists; alice
// and bob (and, with aliceWrites false, only bob) write everywhere.
func policy(t *testing.T, aliceWrites bool) *auth.Policy {
	t.Helper()
	writers := `"alice", "bob"`
	if !aliceWrites {
		writers = `"bob"`
	}
	text := fmt.Sprintf(`
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = [%s]
allow = ["all"]
`, writers)
	file := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := auth.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newOwned(t *testing.T, limits ...ingest.Config) *ownedFixture {
	t.Helper()
	f := &ownedFixture{dir: t.TempDir(), client: &http.Client{Timeout: 20 * time.Second}}
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var ic ingest.Config
	if len(limits) > 0 {
		ic = limits[0]
	}
	f.access = auth.New(policy(t, true), nil)
	f.links = links.New(links.Config{State: s.State(), Key: []byte("0123456789abcdef0123456789abcdef")})
	g := gate.New(gate.Config{Access: f.access, Links: f.links, Resolver: s})
	ic.Store = g.Store(s)
	writes := ingest.New(ic)
	staging, err := StagingFor(s)
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = New(Config{Writes: writes, Staging: staging, State: s.State(), BasePath: serve.ResumablePrefix})
	if err != nil {
		t.Fatal(err)
	}
	x, err := f.h.IETF(IETFConfig{BasePath: serve.ResumerPrefix})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(serve.New(serve.Config{Store: ic.Store, Gate: g, Writes: writes, Resumable: f.h, Resumer: x}))
	t.Cleanup(f.srv.Close)
	return f
}

// send sends a request to path (or to a whole URL) and returns the
// response with its body read.
func (f *ownedFixture) send(t *testing.T, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	url := path
	if strings.HasPrefix(path, "/") {
		url = f.srv.URL + path
	}
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// tusCreate begins a tus upload of size bytes to name.
func (f *ownedFixture) tusCreate(t *testing.T, name string, size int, hdr ...string) string {
	t.Helper()
	resp, body := f.send(t, "POST", serve.ResumablePrefix, "", with(hdr, "Tus-Resumable", "1.0.0", "Upload-Length", fmt.Sprint(size),
		"Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))...)
	if resp.StatusCode != 201 {
		t.Fatalf("tus creation of %s: %d %s", name, resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// tus sends a tus request on an upload: HEAD, DELETE, or PATCH of data at
// offset.
func (f *ownedFixture) tus(t *testing.T, method, url string, offset int, data string, hdr ...string) int {
	t.Helper()
	hdr = with(hdr, "Tus-Resumable", "1.0.0")
	if method == "PATCH" {
		hdr = with(hdr, "Upload-Offset", fmt.Sprint(offset), "Content-Type", "application/offset+octet-stream")
	}
	resp, _ := f.send(t, method, url, data, hdr...)
	return resp.StatusCode
}

// ietfCreate begins an IETF upload at path with its first bytes, not the
// last, and returns its upload resource.
func (f *ownedFixture) ietfCreate(t *testing.T, path, data string, hdr ...string) string {
	t.Helper()
	resp, body := f.send(t, "PUT", path, data, with(with(v(9), "Upload-Complete", "?0"), hdr...)...)
	if resp.StatusCode != 201 || resp.Header.Get("Location") == "" {
		t.Fatalf("IETF creation at %s: %d %s", path, resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

// ietf sends an IETF request on an upload resource: HEAD, DELETE, or
// PATCH of data at offset, the last one.
func (f *ownedFixture) ietf(t *testing.T, method, loc string, offset int, data string, hdr ...string) int {
	t.Helper()
	hdr = with(v(9), hdr...)
	if method == "PATCH" {
		hdr = with(hdr, "Upload-Offset", fmt.Sprint(offset), "Upload-Complete", "?1", "Content-Type", "application/partial-upload")
	}
	resp, _ := f.send(t, method, loc, data, hdr...)
	return resp.StatusCode
}

func (f *ownedFixture) read(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(name)))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestOwnerOnly: a tus upload and an IETF upload answer only the
// principal that created them; anyone else, signed in or not, learns
// nothing of them (404), and what they send changes nothing.
func TestOwnerOnly(t *testing.T) {
	f := newOwned(t)
	tus := f.tusCreate(t, "a.bin", 10, alice...)
	if code := f.tus(t, "PATCH", tus, 0, "hello", alice...); code != 204 {
		t.Fatalf("the owner's first PATCH: %d", code)
	}
	ietf := f.ietfCreate(t, "/b.bin", "hello", alice...)
	for _, who := range []struct {
		name string
		hdr  []string
	}{{"bob", bob}, {"anonymous", nil}} {
		for _, method := range []string{"HEAD", "PATCH", "DELETE"} {
			if code := f.tus(t, method, tus, 5, "WORLD", who.hdr...); code != 404 {
				t.Errorf("%s's tus %s on alice's upload: %d; want 404", who.name, method, code)
			}
			if code := f.ietf(t, method, ietf, 5, "WORLD", who.hdr...); code != 404 {
				t.Errorf("%s's IETF %s on alice's upload: %d; want 404", who.name, method, code)
			}
		}
	}
	resp, _ := f.send(t, "HEAD", tus, "", with(alice, "Tus-Resumable", "1.0.0")...)
	if resp.StatusCode != 200 || resp.Header.Get("Upload-Offset") != "5" {
		t.Fatalf("alice's tus HEAD after the others': %d, offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
	}
	resp, _ = f.send(t, "HEAD", ietf, "", with(alice, v(9)...)...)
	if resp.StatusCode != 204 || resp.Header.Get("Upload-Offset") != "5" {
		t.Fatalf("alice's IETF HEAD after the others': %d, offset %q", resp.StatusCode, resp.Header.Get("Upload-Offset"))
	}
	if code := f.tus(t, "PATCH", tus, 5, "world", alice...); code != 204 {
		t.Errorf("alice's last tus PATCH: %d", code)
	}
	if code := f.ietf(t, "PATCH", ietf, 5, "world", alice...); code != 201 {
		t.Errorf("alice's last IETF PATCH: %d", code)
	}
	for _, name := range []string{"a.bin", "b.bin"} {
		if got := f.read(name); got != "helloworld" {
			t.Errorf("%s holds %q", name, got)
		}
	}
	// The records of the finished uploads are alice's too.
	if code := f.tus(t, "HEAD", tus, 0, "", bob...); code != 404 {
		t.Errorf("bob's tus HEAD on alice's finished upload: %d; want 404", code)
	}
	if code := f.ietf(t, "HEAD", ietf, 0, "", bob...); code != 404 {
		t.Errorf("bob's IETF HEAD on alice's finished upload: %d; want 404", code)
	}
	if code := f.tus(t, "HEAD", tus, 0, "", alice...); code != 200 {
		t.Errorf("alice's tus HEAD on her finished upload: %d; want 200", code)
	}
	if code := f.ietf(t, "HEAD", ietf, 0, "", alice...); code != 204 {
		t.Errorf("alice's IETF HEAD on her finished upload: %d; want 204", code)
	}
}

// TestServerKeysRefused: no client sets a metadata key of the server's
// own, through tus or through an IETF POST's Upload-Metadata, and
// nothing is staged for one that tried.
func TestServerKeysRefused(t *testing.T) {
	f := newOwned(t)
	for _, key := range []string{"largo-if-none-match", "largo-if-match", "largo-owner", "largo-protocol", "LARGO-Link"} {
		meta := "filename " + base64.StdEncoding.EncodeToString([]byte("k.bin")) + "," + key + " " + base64.StdEncoding.EncodeToString([]byte("*"))
		resp, body := f.send(t, "POST", serve.ResumablePrefix, "", with(alice, "Tus-Resumable", "1.0.0", "Upload-Length", "5", "Upload-Metadata", meta)...)
		if resp.StatusCode != 400 || !strings.Contains(body, "server's own") {
			t.Errorf("tus creation with %s: %d %q; want 400 naming the server's keys", key, resp.StatusCode, body)
		}
		resp, body = f.send(t, "POST", "/", "hello", with(with(alice, v(9)...), "Upload-Complete", "?1", "Upload-Metadata", meta)...)
		if resp.StatusCode != 400 || !strings.Contains(body, "server's own") {
			t.Errorf("IETF POST with %s: %d %q; want 400 naming the server's keys", key, resp.StatusCode, body)
		}
	}
	if got := f.read("k.bin"); !strings.HasPrefix(got, "<") {
		t.Errorf("k.bin was stored: %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files", len(ents))
	}
}

// TestPlacedForOwner: an upload is placed with its creator's rights as
// they are at its end: a user who lost the right to write meanwhile is
// refused, whoever sends the last bytes; an upload through a drop box
// stays the link's, which creates only, even when a user who may replace
// files sends its end, and a revoked link stores nothing.
func TestPlacedForOwner(t *testing.T) {
	f := newOwned(t)
	tus := f.tusCreate(t, "c.bin", 10, alice...)
	f.tus(t, "PATCH", tus, 0, "hello", alice...)
	ietf := f.ietfCreate(t, "/d.bin", "hello", alice...)
	f.access.Reload(policy(t, false)) // alice writes no more
	if code := f.tus(t, "PATCH", tus, 5, "world", bob...); code != 404 {
		t.Errorf("bob's last tus PATCH on alice's upload: %d; want 404", code)
	}
	if code := f.ietf(t, "PATCH", ietf, 5, "world", bob...); code != 404 {
		t.Errorf("bob's last IETF PATCH on alice's upload: %d; want 404", code)
	}
	if code := f.tus(t, "PATCH", tus, 5, "world", alice...); code != 403 {
		t.Errorf("alice's last tus PATCH without the right to write: %d; want 403", code)
	}
	if code := f.ietf(t, "PATCH", ietf, 5, "world", alice...); code != 403 {
		t.Errorf("alice's last IETF PATCH without the right to write: %d; want 403", code)
	}
	for _, name := range []string{"c.bin", "d.bin"} {
		if got := f.read(name); !strings.HasPrefix(got, "<") {
			t.Errorf("%s was stored: %q", name, got)
		}
	}
	if code := f.tus(t, "HEAD", tus, 0, "", alice...); code != 404 {
		t.Errorf("the refused tus upload: HEAD %d; want 404 (removed)", code)
	}

	// A drop box of the operator's on the root.
	ctx := context.Background()
	token, link, err := f.links.Make(ctx, links.Link{Kind: links.Drop, Expires: time.Now().Add(time.Hour)}, "")
	if err != nil {
		t.Fatal(err)
	}
	drop := "/_largo/s/" + token + "/"
	// Its uploads are the link's: whoever holds their URL resumes them,
	// and each is placed as the link would place it.
	up := f.ietfCreate(t, drop+"new.txt", "hel")
	if code := f.ietf(t, "HEAD", up, 0, ""); code != 204 {
		t.Errorf("anonymous HEAD on a drop box's upload: %d; want 204", code)
	}
	if code := f.ietf(t, "PATCH", up, 3, "lo"); code != 201 {
		t.Errorf("anonymous last PATCH on a drop box's upload: %d; want 201", code)
	}
	if got := f.read("new.txt"); got != "hello" {
		t.Errorf("new.txt holds %q", got)
	}
	// A file that appeared meanwhile is not replaced, though bob, who
	// could replace it, sends the last bytes.
	up = f.ietfCreate(t, drop+"late.txt", "hel")
	if err := os.WriteFile(filepath.Join(f.dir, "late.txt"), []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := f.ietf(t, "PATCH", up, 3, "lo", bob...); code != 412 {
		t.Errorf("bob's last PATCH on a drop box's upload over a file: %d; want 412", code)
	}
	if got := f.read("late.txt"); got != "first" {
		t.Errorf("late.txt holds %q; want it untouched", got)
	}
	// A link revoked before the end stores nothing.
	up = f.ietfCreate(t, drop+"revoked.txt", "hel")
	if err := f.links.Revoke(ctx, link.ID, "", true); err != nil {
		t.Fatal(err)
	}
	if code := f.ietf(t, "PATCH", up, 3, "lo"); code != 403 {
		t.Errorf("the last PATCH through a revoked link: %d; want 403", code)
	}
	if got := f.read("revoked.txt"); !strings.HasPrefix(got, "<") {
		t.Errorf("revoked.txt was stored: %q", got)
	}
}

// TestOwnerless: an upload staged by a version that kept no owner is
// reached by its URL as before, but never placed: its end is refused
// (403) and it is removed.
func TestOwnerless(t *testing.T) {
	f := newOwned(t)
	ctx := context.Background()
	for _, proto := range []string{"tus", "ietf"} {
		meta := tusd.MetaData{KeyFilename: proto + ".bin"}
		if proto == "ietf" {
			meta[keyProtocol], meta[keyVersion] = "ietf", "9"
		}
		up, err := f.h.store.NewUpload(ctx, tusd.FileInfo{Size: 5, MetaData: meta})
		if err != nil {
			t.Fatal(err)
		}
		info, _ := up.GetInfo(ctx)
		var code int
		if proto == "tus" {
			code = f.tus(t, "PATCH", serve.ResumablePrefix+info.ID, 0, "hello", alice...)
		} else {
			code = f.ietf(t, "PATCH", serve.ResumerPrefix+info.ID, 0, "hello", alice...)
		}
		if code != 403 {
			t.Errorf("%s: the end of an upload with no owner: %d; want 403", proto, code)
		}
		if got := f.read(proto + ".bin"); !strings.HasPrefix(got, "<") {
			t.Errorf("%s: the upload with no owner was stored: %q", proto, got)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(f.dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files left", len(ents))
	}
}

// TestIETFCreationFields: the lengths and completeness of an IETF
// creation are held to tus's limits: a length over the size limit 413,
// over the free space 507, one that is no length or a completeness that
// is no Boolean 400, and nothing is stored or staged.
func TestIETFCreationFields(t *testing.T) {
	limited := newOwned(t, ingest.Config{MaxSize: 1 << 20})
	open := newOwned(t)
	for _, tt := range []struct {
		f      *ownedFixture
		fields []string
		code   int
	}{
		{limited, []string{"Upload-Complete", "?0", "Upload-Length", "9000000000000000000"}, 413},
		{limited, []string{"Upload-Complete", "?0", "Upload-Length", "99999999999999999999"}, 413},
		{limited, []string{"Upload-Complete", "?0", "Upload-Length", "2097152"}, 413},
		{open, []string{"Upload-Complete", "?0", "Upload-Length", "9000000000000000000"}, 507},
		{open, []string{"Upload-Complete", "?0", "Upload-Length", "-1"}, 400},
		{open, []string{"Upload-Complete", "?0", "Upload-Length", "ten"}, 400},
		{open, []string{"Upload-Complete", "?0", "Upload-Length", "5, 5"}, 400},
		{open, []string{"Upload-Complete", "maybe"}, 400},
		{open, []string{"Upload-Complete", "1"}, 400},
		{open, []string{"Upload-Complete", "?1, ?1"}, 400},
	} {
		resp, body := tt.f.send(t, "PUT", "/f.bin", "hello", with(with(alice, v(9)...), tt.fields...)...)
		if resp.StatusCode != tt.code {
			t.Errorf("%v: %d %q; want %d", tt.fields, resp.StatusCode, body, tt.code)
		}
		if tt.code == 413 && resp.Header.Get("Upload-Limit") == "" {
			t.Errorf("%v: a 413 without Upload-Limit", tt.fields)
		}
	}
	// Version 3 states its completeness in Upload-Incomplete.
	resp, _ := open.send(t, "PUT", "/f.bin", "hello", with(with(alice, v(3)...), "Upload-Incomplete", "no")...)
	if resp.StatusCode != 400 {
		t.Errorf("Upload-Incomplete: no: %d; want 400", resp.StatusCode)
	}
	// An append is held to the same fields.
	loc := open.ietfCreate(t, "/g.bin", "hel", alice...)
	for _, fields := range [][]string{{"Upload-Complete", "maybe"}, {"Upload-Complete", "?1", "Upload-Length", "-5"}} {
		resp, body := open.send(t, "PATCH", loc, "lo", with(with(alice, v(9)...), append([]string{"Upload-Offset", "3", "Content-Type", "application/partial-upload"}, fields...)...)...)
		if resp.StatusCode != 400 {
			t.Errorf("append with %v: %d %q; want 400", fields, resp.StatusCode, body)
		}
	}
	if code := open.ietf(t, "HEAD", loc, 0, "", alice...); code != 204 {
		t.Errorf("HEAD after the refused appends: %d", code)
	}
	for _, f := range []*ownedFixture{limited, open} {
		if got := f.read("f.bin"); !strings.HasPrefix(got, "<") {
			t.Errorf("f.bin was stored: %q", got)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(limited.dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files", len(ents))
	}
}

// TestStrangerStopsNothing: a request of another principal on an upload
// that an append is being received for is answered 404 without stopping
// the append (a request of the owner's would stop it: the newest wins),
// which goes on to the end.
func TestStrangerStopsNothing(t *testing.T) {
	const size = 8 << 20
	chunk := strings.Repeat("a", 1<<16)
	for _, proto := range []string{"tus", "ietf"} {
		t.Run(proto, func(t *testing.T) {
			f := newOwned(t)
			var loc string
			hdr := with(alice, "Upload-Offset", "0")
			if proto == "tus" {
				loc = f.tusCreate(t, "big.bin", size, alice...)
				hdr = with(hdr, "Tus-Resumable", "1.0.0", "Content-Type", "application/offset+octet-stream")
			} else {
				loc = f.ietfCreate(t, "/big.bin", "", alice...)
				hdr = with(with(hdr, v(9)...), "Upload-Complete", "?1", "Content-Type", "application/partial-upload")
			}
			if !strings.HasPrefix(loc, "http") {
				loc = f.srv.URL + loc
			}
			id := loc[strings.LastIndexByte(loc, '/')+1:]
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.CloseWithError(io.ErrClosedPipe) })
			req, err := http.NewRequest("PATCH", loc, pr)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = size
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			answer := make(chan string, 1)
			go func() {
				resp, err := f.client.Do(req)
				if err != nil {
					answer <- err.Error()
					return
				}
				resp.Body.Close()
				answer <- fmt.Sprint(resp.StatusCode)
			}()
			// Bytes until the server writes what it receives.
			staged := filepath.Join(f.dir, ".largo", "tus", id)
			sent := 0
			poll.Wait(t, 10*time.Second, "the append reaching the staging", func() bool {
				if fi, err := os.Stat(staged); err == nil && fi.Size() > 0 {
					return true
				}
				if sent < size/2 {
					if _, err := io.WriteString(pw, chunk); err != nil {
						t.Fatal(err)
					}
					sent += len(chunk)
				}
				return false
			})
			for _, method := range []string{"HEAD", "PATCH", "DELETE"} {
				var code int
				if proto == "tus" {
					code = f.tus(t, method, loc, 0, "x", bob...)
				} else {
					code = f.ietf(t, method, loc, 0, "x", bob...)
				}
				if code != 404 {
					t.Errorf("bob's %s during alice's append: %d; want 404", method, code)
				}
			}
			for ; sent < size; sent += len(chunk) {
				if _, err := io.WriteString(pw, chunk); err != nil {
					t.Fatalf("alice's append was stopped: %v", err)
				}
			}
			pw.Close()
			want := map[string]string{"tus": "204", "ietf": "201"}[proto]
			if got := <-answer; got != want {
				t.Errorf("alice's append: %s; want %s", got, want)
			}
			if got := f.read("big.bin"); len(got) != size {
				t.Errorf("big.bin holds %d bytes; want %d", len(got), size)
			}
		})
	}
}

// TestRefusalReadableCrossOrigin: the 404 of another user's request, and
// the answer about a finished upload, are written outside tusd, with what
// lets a page of a listed origin read them, as tusd's own answers have.
func TestRefusalReadableCrossOrigin(t *testing.T) {
	const origin = "https://app.example"
	f := newFixture(t, Config{CORSOrigins: []string{origin}})
	url, resp := f.create(t, 5, map[string]string{"filename": "cors.txt"}, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:x")))
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	for _, tt := range []struct {
		user string
		code int
	}{{"bob", 404}, {"alice", 200}} {
		req, _ := http.NewRequest(http.MethodHead, url, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Origin", origin)
		req.SetBasicAuth(tt.user, "x")
		if tt.user == "alice" {
			f.patch(t, url, 0, "hello", "Authorization", req.Header.Get("Authorization"))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != tt.code || h.Get("Access-Control-Allow-Origin") != origin || len(h.Values("Access-Control-Allow-Credentials")) != 1 ||
			h.Get("Tus-Resumable") != "1.0.0" || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "Upload-Offset") {
			t.Errorf("%s's HEAD from a listed origin: %d %v; want %d, readable by the page", tt.user, resp.StatusCode, h, tt.code)
		}
	}
}
