package pageapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/limit"
	"largo/links"
	"largo/listing"
	"largo/serve"
)

// token is the one user's on a server of the one-user policy.
const token = "the-token-0123456789"

// accessFile is the policy of testdata/access.toml: alice, bob, and what
// each may do in /pub, /private and /inbox.
var accessFile = func() string {
	b, err := os.ReadFile(filepath.Join("testdata", "access.toml"))
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// setup is what a fixture's server is made with.
type setup struct {
	// policy is an access file's text; "" means the one-user policy of
	// token, and with no token, everyone does everything.
	policy, token string
	// writes turns the write pipeline on, and uploads resumable uploads
	// too (the page's upload area).
	writes, uploads bool
	// store, when set, is the store the folder is served as.
	store func(*disk.Store) largo.Store
}

// fixture is a temporary folder served as largo serve serves it: the
// file tree (package serve) with the page's API mounted, share links kept
// in the folder's state area, on a clock of its own.
type fixture struct {
	h       *serve.Handler
	api     *API
	gate    *gate.Gate
	dir     string
	now     time.Time
	listing listing.Config
}

func newFixture(t testing.TB, files map[string]string, o setup) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), now: time.Unix(2e9, 0)}
	for name, content := range files {
		p := filepath.Join(f.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := disk.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pol := auth.OneUser(o.token, o.token == "")
	if o.policy != "" {
		p := filepath.Join(t.TempDir(), "access.toml")
		if err := os.WriteFile(p, []byte(o.policy), 0o600); err != nil {
			t.Fatal(err)
		}
		if pol, err = auth.LoadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	clock := func() time.Time { return f.now }
	f.gate = gate.New(gate.Config{
		Access:   auth.New(pol, clock),
		Links:    links.New(links.Config{State: s.State(), Key: []byte(strings.Repeat("k", 32)), Now: clock}),
		Resolver: s,
	})
	var st largo.Store = s
	if o.store != nil {
		st = o.store(s)
	}
	gated := f.gate.Store(st)
	f.listing = listing.Config{Budget: limit.NewBudget(listing.DefaultBudget, 0)}
	archives := serve.NewArchives("", nil, nil)
	cfg := serve.Config{Store: gated, Gate: f.gate, Access: f.gate.Access(), Listing: f.listing, Archives: archives, Now: clock}
	if o.writes {
		cfg.Writes = ingest.New(ingest.Config{Store: gated})
	}
	if o.uploads {
		cfg.Resumable = http.NotFoundHandler()
	}
	f.api = New(Config{Gate: f.gate, Store: gated, Writes: cfg.Writes, Listing: f.listing, Archives: archives, Now: clock})
	cfg.Page = f.api
	f.h = serve.New(cfg)
	return f
}

// send sends a request from 127.0.0.1 as user (a user of the access
// file, by the token it names; "" for anonymous), with header pairs; a
// body goes as a URL-encoded form.
func (f *fixture) send(method, target, user, form string, hdr ...string) *httptest.ResponseRecorder {
	var body io.Reader
	if user != "" {
		hdr = append([]string{"Authorization", "Bearer " + user + "-token-0123456789"}, hdr...)
	}
	if form != "" {
		body = strings.NewReader(form)
		hdr = append([]string{"Content-Type", "application/x-www-form-urlencoded"}, hdr...)
	}
	req := httptest.NewRequest(method, target, body)
	req.RemoteAddr, req.Host = "127.0.0.1:5555", "127.0.0.1"
	for kv := range slices.Chunk(hdr, 2) {
		req.Header.Set(kv[0], kv[1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func (f *fixture) get(target, user string, hdr ...string) *httptest.ResponseRecorder {
	return f.send("GET", target, user, "", hdr...)
}

func (f *fixture) post(target, user, form string, hdr ...string) *httptest.ResponseRecorder {
	return f.send("POST", target, user, form, hdr...)
}

// link makes a share link and returns its URL path.
func (f *fixture) link(t *testing.T, l links.Link, password string) string {
	t.Helper()
	token, made, err := f.gate.Links().Make(context.Background(), l, password)
	if err != nil {
		t.Fatal(err)
	}
	return made.URLPath(token)
}

func (f *fixture) exists(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(name)))
	return err == nil
}

// newAccessFixture serves a folder of alice's, bob's and everyone's
// files under accessFile, writes on.
func newAccessFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, map[string]string{
		"pub/a.txt": "a", "pub/hidden.txt": "h", "pub/unlisted/u.txt": "u", "private/s.txt": "s", "private/deep/t.txt": "t", "inbox/old.txt": "o",
	}, setup{policy: accessFile, writes: true})
}
