package serve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/auth"
	"largo/disk"
	"largo/ingest"
	"largo/links"
)

const redirectAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/videos"
users = ["*"]
allow = ["read", "list"]
redirect = "presigned"

[[rule]]
path = "/videos"
users = ["alice"]
allow = ["read", "list"]
`

// presigning is a folder's store that hands out URLs, as a bucket does.
type presigning struct{ *disk.Store }

func (p presigning) Presign(_ context.Context, name string, ttl time.Duration) (string, error) {
	return "https://bucket.test/" + name + "?expires=" + ttl.String(), nil
}

// newRedirectFixture serves files under redirectAccess, from a store
// that presigns (or, without presign, one that does not), logging to log.
func newRedirectFixture(t *testing.T, presign bool, log *bytes.Buffer) *accessFixture {
	t.Helper()
	f := &accessFixture{now: time.Unix(2e9, 0)}
	_, f.dir = newTestHandler(t, map[string]string{"videos/a.mp4": "movie", "pub/a.txt": "a"})
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(redirectAccess), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	clock := func() time.Time { return f.now }
	g, _ := gatedStore(s, auth.New(pol, clock), clock)
	gated := g.Store(s)
	if presign {
		gated = g.Store(presigning{s})
	}
	f.h = New(Config{Store: gated, Gate: g, Writes: ingest.New(ingest.Config{Store: gated}), Access: g.Access(), Hosts: LoopbackHosts, Now: clock, Logger: newTextLogger(log)})
	return f
}

// TestRedirectPresigned checks which downloads a rule's redirect =
// "presigned" sends to the store: those it decides (not alice's, whose own
// rule decides), of files (not a folder's listing, not a missing file),
// never a share link's; and a store that gives no URLs serves them.
func TestRedirectPresigned(t *testing.T) {
	var log bytes.Buffer
	f := newRedirectFixture(t, true, &log)
	for _, tt := range []struct {
		method, path, user string
		code               int
		location           string
	}{
		{"GET", "/videos/a.mp4", "", 307, "https://bucket.test/videos/a.mp4?expires=5m0s"},
		{"HEAD", "/videos/a.mp4", "", 200, ""}, // a URL signed for GET reads no HEAD
		{"GET", "/videos/a.mp4", "alice", 200, ""},
		{"GET", "/pub/a.txt", "", 200, ""},
		{"GET", "/videos/", "", 200, ""},
		{"GET", "/videos/none.mp4", "", 404, ""},
	} {
		rec := f.req(tt.method, tt.path, tt.user)
		if rec.Code != tt.code || rec.Header().Get("Location") != tt.location {
			t.Errorf("%s %s as %q: %d, Location %q; want %d, %q", tt.method, tt.path, tt.user, rec.Code, rec.Header().Get("Location"), tt.code, tt.location)
		}
		if tt.code == 307 && rec.Header().Get("Cache-Control") != "private, no-store" {
			t.Errorf("%s %s: Cache-Control %q", tt.method, tt.path, rec.Header().Get("Cache-Control"))
		}
	}

	link := f.link(t, links.Link{Kind: links.File, Path: "videos/a.mp4", Maker: "alice", Expires: f.now.Add(time.Hour)}, "")
	if rec := f.req("GET", link, ""); rec.Code != 200 || rec.Body.String() != "movie" {
		t.Errorf("through a share link: %d %q; want the file, counted and capped by largo", rec.Code, rec.Body.String())
	}

	log.Reset()
	f = newRedirectFixture(t, false, &log)
	if rec := f.req("GET", "/videos/a.mp4", ""); rec.Code != 200 || rec.Body.String() != "movie" {
		t.Errorf("from a store without presigned URLs: %d %q; want the file", rec.Code, rec.Body.String())
	}
	if !strings.Contains(log.String(), "does not give") {
		t.Errorf("the log does not say why the file was served: %s", log.String())
	}
}
