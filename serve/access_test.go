package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/links"
)

const accessFile = `
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
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/pub/hidden.txt"
users = ["anonymous"]
allow = []

[[rule]]
path = "/inbox"
users = ["bob"]
allow = ["write"]

[[rule]]
path = "/pub/sealed"
users = ["bob"]
allow = []

[[rule]]
path = "/pub/unlisted"
users = ["anonymous"]
allow = ["read"]
`

type accessFixture struct {
	h   *Handler
	d   *disk.Store
	dir string
	now time.Time
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	f := &accessFixture{now: time.Unix(2e9, 0)}
	_, f.dir = newTestHandler(t, map[string]string{
		"pub/a.txt": "a", "pub/hidden.txt": "h", "pub/unlisted/u.txt": "u", "private/s.txt": "s", "private/deep/t.txt": "t", "inbox/old.txt": "o",
	})
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(accessFile), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.d = s
	clock := func() time.Time { return f.now }
	g, gated := gatedStore(s, auth.New(pol, clock), clock)
	f.h = New(Config{
		Store:  gated,
		Gate:   g,
		Writes: ingest.New(ingest.Config{Store: gated}),
		Access: g.Access(),
		Hosts:  LoopbackHosts,
		Now:    clock,
	})
	return f
}

// gatedStore puts s behind a gate of access, with share links kept in
// its state area and its symbolic links judged as they resolve.
func gatedStore(s *disk.Store, access *auth.Access, now func() time.Time) (*gate.Gate, *gate.Store) {
	g := gate.New(gate.Config{
		Access:   access,
		Links:    links.New(links.Config{State: s.State(), Key: []byte(strings.Repeat("k", 32)), Now: now}),
		Resolver: s,
	})
	return g, g.Store(s)
}

// link makes a share link and returns its URL path.
func (f *accessFixture) link(t *testing.T, l links.Link, password string) string {
	t.Helper()
	token, made, err := f.h.gate.Links().Make(context.Background(), l, password)
	if err != nil {
		t.Fatal(err)
	}
	return made.URLPath(token)
}

// req runs a request as user ("" anonymous) and returns its status.
func (f *accessFixture) req(method, target, user string, hdr ...string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if method == "PUT" {
		body = strings.NewReader("new")
	}
	req := httptest.NewRequest(method, target, nil)
	if body != nil {
		req = httptest.NewRequest(method, target, body)
	}
	req.RemoteAddr, req.Host = "127.0.0.1:5555", "127.0.0.1"
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user+"-token-0123456789")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// TestAccessTable: users x paths x methods.
func TestAccessTable(t *testing.T) {
	f := newAccessFixture(t)
	for _, tt := range []struct {
		method, path, user string
		code               int
	}{
		{"GET", "/pub/a.txt", "", 200},
		{"GET", "/pub/a.txt", "bob", 200},
		{"GET", "/pub/hidden.txt", "", 401},
		{"GET", "/pub/hidden.txt", "bob", 200},
		{"GET", "/private/s.txt", "", 401},
		{"GET", "/private/s.txt", "bob", 403},
		{"GET", "/private/s.txt", "alice", 200},
		{"GET", "/private/deep/t.txt", "alice", 200},
		{"GET", "/private/", "bob", 403},
		{"GET", "/private/", "alice", 200},
		{"GET", "/private/?archive=zip", "bob", 403},
		{"PUT", "/pub/new.txt", "", 401},
		{"PUT", "/pub/new.txt", "bob", 403},
		{"PUT", "/private/new.txt", "alice", 201},
		{"PUT", "/inbox/new.txt", "bob", 201},
		{"GET", "/inbox/new.txt", "bob", 403}, // the longest rule for bob there grants write alone
		{"PUT", "/inbox/old.txt", "bob", 204},
		{"DELETE", "/inbox/old.txt", "bob", 403},
		{"DELETE", "/private/new.txt", "alice", 204},
		{"DELETE", "/pub/a.txt", "", 401},
		{"GET", "/nope.txt", "", 404},
	} {
		if rec := f.req(tt.method, tt.path, tt.user); rec.Code != tt.code {
			t.Errorf("%s %s as %q: %d %s; want %d", tt.method, tt.path, tt.user, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		} else if tt.code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without a challenge", tt.method, tt.path)
		}
	}
}

// TestListingsLeaveOut: listings and archives show only what the
// requester may read.
func TestListingsLeaveOut(t *testing.T) {
	f := newAccessFixture(t)
	names := func(user, path string) string {
		rec := f.req("GET", path, user, "Accept", "application/json")
		var l Listing
		json.Unmarshal(rec.Body.Bytes(), &l)
		var n []string
		for _, e := range l.Entries {
			n = append(n, e.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names("", "/"); got != "inbox,pub" {
		t.Errorf("anonymous root: %s", got)
	}
	if got := names("alice", "/"); got != "inbox,private,pub" {
		t.Errorf("alice's root: %s", got)
	}
	if got := names("", "/pub/"); got != "unlisted,a.txt" {
		t.Errorf("anonymous /pub/: %s", got)
	}
	// A folder read but not listed is in an archive, empty: its entries
	// are a listing.
	if got := f.req("GET", "/pub/unlisted/u.txt", "").Code; got != 200 {
		t.Errorf("anonymous GET of a file in a folder it reads: %d", got)
	}
	for _, path := range []string{"/?archive=tar", "/pub/?archive=tar"} {
		tar := f.req("GET", path, "").Body.String()
		if !strings.Contains(tar, "pub/a.txt") || strings.Contains(tar, "hidden.txt") || strings.Contains(tar, "s.txt") || strings.Contains(tar, "u.txt") {
			t.Errorf("the anonymous archive %s holds what anonymous may not read or list", path)
		}
	}
	if tar := f.req("GET", "/?archive=tar", "alice").Body.String(); !strings.Contains(tar, "private/deep/t.txt") {
		t.Error("alice's archive lacks what she may read")
	}
}

func TestShareLinks(t *testing.T) {
	f := newAccessFixture(t)
	exp := f.now.Add(time.Hour)
	folder := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "")
	file := f.link(t, links.Link{Kind: links.File, Path: "private/s.txt", Maker: "alice", Expires: exp}, "")
	drop := f.link(t, links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: exp}, "")
	pw := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "open sesame")
	root := f.link(t, links.Link{Kind: links.Folder, Path: "", Expires: exp}, "")
	tampered := folder[:len(folder)-3] + "A/"
	for _, tt := range []struct {
		method, path string
		code         int
		hdr          []string
	}{
		{"GET", folder, 200, nil},
		{"GET", folder + "s.txt", 200, nil},
		{"GET", folder + "deep/t.txt", 200, nil},
		{"GET", folder + "?archive=zip", 200, nil},
		{"PUT", folder + "x.txt", 403, nil},
		{"DELETE", folder + "s.txt", 403, nil},
		{"GET", file, 200, nil},
		{"GET", strings.TrimSuffix(file, "s.txt") + "other.txt", 403, nil},
		{"PUT", drop + "new.txt", 201, nil},
		{"PUT", drop + "old.txt", 412, nil}, // never overwrite
		{"PUT", drop + "sub/new.txt", 403, nil},
		{"GET", drop + "old.txt", 403, nil},
		{"GET", drop, 403, nil},
		{"GET", pw + "s.txt", 401, nil},
		{"GET", pw + "s.txt", 403, []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("x:wrong one"))}},
		{"GET", pw + "s.txt", 200, []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("x:open sesame"))}},
		{"GET", tampered, 403, nil},
		{"GET", "/_largo/s/garbage/", 403, nil},
		{"GET", "/_largo/s/v1.r.9999999999.cHJpdmF0ZQ.AAAA/", 403, nil},
		// A link reaches files, never the server's own routes.
		{"GET", root + "_largo/metrics", 404, nil},
		{"GET", root + "_largo/healthz", 404, nil},
	} {
		if rec := f.req(tt.method, tt.path, "", tt.hdr...); rec.Code != tt.code {
			t.Errorf("%s %s: %d %s; want %d", tt.method, tt.path, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "inbox/old.txt")); string(b) != "o" {
		t.Error("a drop-box link replaced a file")
	}
	// A folder asked without its slash is sent to its URL within the link.
	for path, want := range map[string]string{
		strings.TrimSuffix(folder, "/"): folder,
		folder + "deep":                 folder + "deep/",
		folder + "deep?archive=zip":     folder + "deep/?archive=zip",
	} {
		rec := f.req("GET", path, "")
		if loc := rec.Header().Get("Location"); rec.Code != 301 || loc != want {
			t.Errorf("GET %s: %d to %q; want 301 to %q", path, rec.Code, loc, want)
		}
	}
	f.now = exp
	if rec := f.req("GET", folder+"s.txt", ""); rec.Code != 403 || !strings.Contains(rec.Body.String(), "expired") {
		t.Errorf("expired link: %d %s", rec.Code, rec.Body.String())
	}
}

// TestLinksAnswerToTheirMaker: a link grants only what its maker may
// still do, and stops on its own when revoked.
func TestLinksAnswerToTheirMaker(t *testing.T) {
	f := newAccessFixture(t)
	exp := f.now.Add(time.Hour)
	folder := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "")
	other := f.link(t, links.Link{Kind: links.File, Path: "private/s.txt", Maker: "alice", Expires: exp}, "")
	if rec := f.req("GET", folder+"s.txt", ""); rec.Code != 200 {
		t.Fatalf("a fresh link: %d", rec.Code)
	}
	// Alice loses /private: her link loses it too.
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(strings.Replace(accessFile, "path = \"/private\"\nusers = [\"alice\"]\nallow = [\"all\"]", "path = \"/private\"\nusers = [\"alice\"]\nallow = []", 1)), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := f.h.cfg.Access.Policy()
	f.h.cfg.Access.Reload(pol)
	if rec := f.req("GET", folder+"s.txt", ""); rec.Code != 403 {
		t.Errorf("a link after its maker lost the right: %d", rec.Code)
	}
	f.h.cfg.Access.Reload(old)
	// Revoked one by one: the other still works.
	id := strings.Split(strings.TrimPrefix(folder, links.URLPrefix), ".")[1]
	if err := f.h.gate.Links().Revoke(context.Background(), id, "alice", false); err != nil {
		t.Fatal(err)
	}
	if rec := f.req("GET", folder+"s.txt", ""); rec.Code != 403 || !strings.Contains(rec.Body.String(), "revoked") {
		t.Errorf("a revoked link: %d %s", rec.Code, rec.Body.String())
	}
	if rec := f.req("GET", other, ""); rec.Code != 200 {
		t.Errorf("another link of the same maker after a revocation: %d", rec.Code)
	}
}

func TestGuards(t *testing.T) {
	f := newAccessFixture(t)
	// DNS rebinding: a loopback server answers loopback names only.
	for host, code := range map[string]int{"127.0.0.1:8080": 200, "localhost": 200, "[::1]:80": 200, "attacker.example": 421, "attacker.example:8080": 421} {
		req := httptest.NewRequest("GET", "/pub/a.txt", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != code {
			t.Errorf("Host %s: %d; want %d", host, rec.Code, code)
		}
	}
	// A browser's cross-site write, whatever its credential.
	for _, hdr := range [][]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		if rec := f.req("PUT", "/private/x.txt", "alice", hdr...); rec.Code != 403 {
			t.Errorf("PUT with %s: %d; want 403", hdr, rec.Code)
		}
	}
	// A form another site's page posts, as a browser sends it.
	if rec := f.req("POST", "/private/", "alice", "Origin", "https://evil.example", "Content-Type", "multipart/form-data; boundary=x"); rec.Code != 403 {
		t.Errorf("cross-site form POST: %d; want 403", rec.Code)
	}
	if rec := f.req("PUT", "/private/x.txt", "alice", "Origin", "http://127.0.0.1", "Sec-Fetch-Site", "same-origin"); rec.Code != 201 {
		t.Errorf("same-origin PUT: %d", rec.Code)
	}
	// Brute force: ten failures, then 429 even for the right token, until
	// a second has passed.
	for i := range 10 {
		if rec := f.req("GET", "/pub/a.txt", "guess"+fmt.Sprint(i)); rec.Code != 401 {
			t.Fatalf("bad token %d: %d", i, rec.Code)
		}
	}
	if rec := f.req("GET", "/private/s.txt", "alice"); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("after ten failures: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	f.now = f.now.Add(2 * time.Second)
	if rec := f.req("GET", "/private/s.txt", "alice"); rec.Code != 200 {
		t.Errorf("after a pause: %d", rec.Code)
	}
}

// TestCORS: no origin but the listed ones gets CORS, tus preflights
// included.
func TestCORS(t *testing.T) {
	f := newAccessFixture(t)
	f.h.cfg.Resumable = http.NotFoundHandler()
	f.h = New(f.h.cfg)
	pre := []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST"}
	if rec := f.req("OPTIONS", ResumablePrefix, "", pre...); rec.Code != 403 || rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("tus preflight from another origin: %d %v", rec.Code, rec.Header())
	}
	if rec := f.req("OPTIONS", "/pub/x", "", pre...); rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin allowed: %v", rec.Header())
	}
	f.h.cfg.CORSOrigins = []string{"https://app.example"}
	ok := []string{"Origin", "https://app.example", "Access-Control-Request-Method", "PUT"}
	if rec := f.req("OPTIONS", "/pub/x", "", ok...); rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("preflight from a listed origin: %d %v", rec.Code, rec.Header())
	}
	if rec := f.req("PUT", "/private/c.txt", "alice", "Origin", "https://app.example"); rec.Code != 201 {
		t.Errorf("PUT from a listed origin: %d", rec.Code)
	}
}

// TestMetricsRule: the metrics are the operator's. A rule that opens "/"
// (or /_largo) to everyone does not open them: only a rule whose path is
// /_largo/metrics does, for the principals it names.
func TestMetricsRule(t *testing.T) {
	for _, tt := range []struct {
		name, rules string
		want        map[string]int
	}{
		{"no rule of their own", `
[[rule]]
path = "/_largo"
users = ["*"]
allow = ["read", "list"]
`, map[string]int{"": 401, "bob": 403, "alice": 403}},
		{"a rule naming alice", `
[[rule]]
path = "/_largo/metrics"
users = ["alice"]
allow = ["read"]
`, map[string]int{"": 401, "bob": 403, "alice": 200}},
		{"a rule naming everyone", `
[[rule]]
path = "/_largo/metrics"
users = ["*"]
allow = ["read"]
`, map[string]int{"": 200, "bob": 200, "alice": 200}},
	} {
		p := filepath.Join(t.TempDir(), "access.toml")
		os.WriteFile(p, []byte(accessFile+tt.rules), 0o600)
		pol, err := auth.LoadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f := newAccessFixture(t)
		f.h.cfg.Access.Reload(pol)
		f.h.cfg.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("metrics")) })
		f.h = New(f.h.cfg)
		for user, code := range tt.want {
			rec := f.req("GET", "/_largo/metrics", user)
			if rec.Code != code {
				t.Errorf("%s: metrics as %q: %d; want %d", tt.name, user, rec.Code, code)
			}
			if code != 200 && !strings.Contains(rec.Body.String(), "--admin-listen") {
				t.Errorf("%s: metrics refused to %q without the reason: %q", tt.name, user, rec.Body)
			}
		}
	}
}
